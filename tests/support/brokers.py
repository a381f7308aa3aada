"""The sandbox broker as tests start and fill it: one set of defaults (the `broker` fixture in
tests/conftest.py uses them too), a stopped clock for exact timestamps, topics with records, and KIP-848
groups seeded as the records a Kafka 4.x coordinator writes (the sandbox cannot create such groups)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_offsets_model.codec import consumer_group, offset_commit
from kafka_sandbox import SandboxBroker
from kafka_sandbox.clock import Clock

if TYPE_CHECKING:
    from kafka_under_test import Kafka

# Small and fast: a week's retention as Kafka's default, 4 __consumer_offsets partitions instead of 50.
DEFAULTS: dict[str, Any] = {"offsets_retention": "7d", "offsets_partitions": 4}


def sandbox_broker(**settings: Any) -> SandboxBroker:
    """A sandbox broker with the tests' defaults, overridden by `settings` (SandboxBroker's arguments); use
    it as a context manager (`with sandbox_broker() as broker:`), which starts and stops it."""
    return SandboxBroker(**{**DEFAULTS, **settings})


class StoppedClock(Clock):
    """The sandbox's clock without the wall clock: time moves only by advance(), so every commit and
    state timestamp the broker writes is known exactly."""

    def __init__(self, start_ms: int) -> None:
        super().__init__(start_ms)
        self._start_ms = start_ms
        self._offset_ms = 0

    def now_ms(self) -> int:
        with self._lock:
            return self._start_ms + self._offset_ms


def make_topics(broker: SandboxBroker | Kafka, topics: Mapping[str, int], records_per_partition: int = 5) -> None:
    """Create topics and give every partition some records, so offsets can be committed past 0. On the
    sandbox the records are appended by the broker itself, in one batch per partition (a producer would
    take a quarter of a second per call, and no test here is about producing); on Apache Kafka a producer
    writes them (kafka_under_test.produce_topics)."""
    if not isinstance(broker, SandboxBroker):
        if broker.sandbox is None:
            from kafka_under_test import produce_topics

            produce_topics(broker.bootstrap_servers, topics, records_per_partition)
            return
        broker = broker.sandbox
    now = broker.clock.now_ms()
    for name, partitions in topics.items():
        broker.create_topic(name, partitions)
        for p in range(partitions):
            broker.append_records(name, p, [(None, f"{name}-{p}-{i}".encode(), now) for i in range(records_per_partition)])


def seed_kip848_group(
    broker: SandboxBroker,
    group: str,
    offsets: Mapping[tuple[str, int], int],
    members: Mapping[str, tuple[list[str], str | None]] | None = None,
    regexes: Mapping[str, list[str]] | None = None,
    *,
    epoch: int = 4,
) -> None:
    """A KIP-848 group with committed `offsets`, stamped with the broker's clock: Stable with `members`
    (id -> (topic names, regex)), Empty without."""
    now = broker.clock.now_ms()
    records = consumer_group(group, members or {}, regexes, epoch=epoch, resolved_at=now)
    records += [offset_commit(group, t, p, offset=o, commit_timestamp=now) for (t, p), o in offsets.items()]
    broker.append_offsets_records([(key, value, now) for key, value in records])
