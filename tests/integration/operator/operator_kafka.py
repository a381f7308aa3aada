"""Real consumer groups on the sandbox broker, made with kafka-python's KafkaConsumer (no doubles)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka_offset_demo import story as demo_story
from kafka_sandbox import SandboxBroker


def make_topics(broker: SandboxBroker, topics: dict[str, int], records_per_partition: int = 5) -> None:
    """Create topics and give every partition some records, so offsets can be committed past 0."""
    demo_story.make_topics(broker, topics, records_per_partition)


def _consumer(broker: SandboxBroker, group: str, topics: list[str]) -> KafkaConsumer:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=30_000,
    )
    for topic in topics:
        # Metadata first: a consumer that subscribes before it knows the topics' partitions joins with an
        # assignment of nothing and waits for a metadata refresh to rejoin.
        consumer.partitions_for_topic(topic)
    consumer.subscribe(list(topics))
    return consumer


def _join(consumer: KafkaConsumer, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not consumer.assignment():
        if time.monotonic() > deadline:
            raise AssertionError("the consumer got no assignment")
        consumer.poll(timeout_ms=100)


def commit(consumer: KafkaConsumer, offsets: dict[tuple[str, int], int]) -> None:
    consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})


def empty_group(broker: SandboxBroker, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """A classic consumer group that joined, committed `offsets` and left: state Empty, protocol consumer."""
    with live_group(broker, group, sorted({t for t, _ in offsets})) as consumer:
        commit(consumer, offsets)


@contextmanager
def live_group(broker: SandboxBroker, group: str, topics: Iterable[str]) -> Iterator[KafkaConsumer]:
    """A consumer that is a member of `group` (state Stable, subscribed to `topics`) until the block ends,
    when it leaves the group (LeaveGroup on close)."""
    consumer = _consumer(broker, group, list(topics))
    try:
        _join(consumer)
        yield consumer
    finally:
        consumer.close()
