"""A small, realistic week in a Kafka cluster, played on the sandbox broker with real clients (kafka-python
producers, consumers and admin commits): the demo shows it, and the policy tests run against the same story.

The broker's clock starts STORY_DAYS in the past and is advanced day by day up to now, so offsets carry
the ages a real cluster would show:

| group           | what happened                                                      | kind            |
|-----------------|--------------------------------------------------------------------|-----------------|
| manual-replay   | a standalone replay tool committed payments 6 days ago             | simple group    |
| reporting-old   | a retired report read orders and payments, left 5 days ago         | Empty, consumer |
| billing-monthly | the monthly billing job read invoices, left 5 days ago (protected) | Empty, consumer |
| orders-app      | the live service; it stopped reading payments 4 days ago           | Stable, consumer|
| nightly-export  | last night's export job, left 2 days ago                           | Empty, consumer |
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType

from kafka import KafkaProducer

from kafka_sandbox import SandboxBroker
from kafka_sandbox.clock import Clock

from . import clients
from .clients import GroupConsumer

DAY_MS = 86_400_000
STORY_DAYS = 6
TOPICS = {"orders": 2, "payments": 2, "invoices": 1}
RECORDS_PER_PARTITION = 6

# What the story does, for the demo's first table: (group, what happened, kind of group now).
STORY = (
    ("manual-replay", "a replay tool committed payments with no group membership, 6 days ago", "simple (standalone)"),
    ("reporting-old", "a retired report read orders and payments; it left 5 days ago", "Empty consumer group"),
    ("billing-monthly", "the monthly billing job read invoices; it left 5 days ago", "Empty, protected"),
    ("orders-app", "the live service; it stopped reading payments 4 days ago", "Stable consumer group"),
    ("nightly-export", "last night's export read orders; it left 2 days ago", "Empty consumer group"),
)

# The policy the demo applies (and the tests use): the broker keeps offsets 7 days; these rules are stricter.
POLICY_SPEC = {
    "groups": {"include": ["*"]},
    "rules": {"emptyGroupRetention": "3d", "unsubscribedTopicRetention": "1d", "standaloneRetention": "2d"},
    "protect": {"groups": ["billing-*"], "keepAlive": True},
    "schedule": {"interval": "1h"},
}


def story_clock() -> Clock:
    """The broker clock a story needs: STORY_DAYS in the past."""
    return Clock(start_ms=int(time.time() * 1000) - STORY_DAYS * DAY_MS)


def story_broker(**settings: object) -> SandboxBroker:
    return SandboxBroker(offsets_retention="7d", offsets_partitions=4, group_initial_rebalance_delay_ms=0,
                         clock=story_clock(), **settings)  # type: ignore[arg-type]


class Story:
    """`with Story(broker) as story:` plays the week; the live orders-app consumer stays a member until the
    block ends: its own thread polls it, as a live service does, so it stays in the group however long the
    block lasts (the demo's --stay-up), not only until kafka-python's max.poll.interval.ms (5 minutes) runs
    out. It polls without committing: the story's offsets stay as played."""

    def __init__(self, broker: SandboxBroker, max_poll_interval_ms: int = 300_000) -> None:
        self.broker = broker
        self.live: GroupConsumer | None = None
        self.max_poll_interval_ms = max_poll_interval_ms

    def __enter__(self) -> Story:
        b = self.broker
        make_topics(b, TOPICS, RECORDS_PER_PARTITION)
        admin_commit(b, "manual-replay", {("payments", 0): 2, ("payments", 1): 3})
        b.clock.advance(days=1)
        commit_and_leave(b, "reporting-old", {("orders", 0): 4, ("orders", 1): 5, ("payments", 0): 1})
        commit_and_leave(b, "billing-monthly", {("invoices", 0): 5})
        b.clock.advance(days=1)
        commit_and_leave(b, "orders-app", {("orders", 0): 2, ("orders", 1): 2, ("payments", 0): 3, ("payments", 1): 3})
        b.clock.advance(days=2)
        commit_and_leave(b, "nightly-export", {("orders", 0): 5, ("orders", 1): 5})
        catch_up(b)
        interval = self.max_poll_interval_ms
        # Polls of 2 s: a JoinGroup answered within one poll never meets kafka-python's stall (clients.STUCK_S),
        # even when the demo's broker, operator and Spark share a loaded machine; the live member is only read.
        self.live = GroupConsumer(b.bootstrap_servers, "orders-app", ["orders"], poll_ms=2_000, max_poll_interval_ms=interval,
                                  session_timeout_ms=min(30_000, interval), heartbeat_interval_ms=min(3_000, interval // 3))
        try:
            self.live.wait_assigned()
            self.live.commit({("orders", 0): 5, ("orders", 1): 6})
        except BaseException:
            self.live.close()
            self.live = None
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None


# -- what real clients do


def catch_up(broker: SandboxBroker) -> None:
    """Advance the broker's clock to the wall clock (it never goes back)."""
    behind = int(time.time() * 1000) - broker.clock.now_ms()
    if behind > 0:
        broker.clock.advance(ms=behind)


def make_topics(broker: SandboxBroker, topics: Mapping[str, int], records: int) -> None:
    for name, partitions in topics.items():
        broker.create_topic(name, partitions)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    try:
        for name, partitions in topics.items():
            for p in range(partitions):
                for i in range(records):
                    producer.send(name, f"{name}-{p}-{i}".encode(), partition=p)
        producer.flush(timeout=30)
    finally:
        producer.close()


def admin_commit(broker: SandboxBroker, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """A standalone consumer's commit (generation -1, no membership): on a new group, a simple group."""
    clients.admin_commit(broker.bootstrap_servers, group, offsets)


def commit_and_leave(broker: SandboxBroker, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """A consumer that joins, commits and leaves: the group is Empty, protocol type consumer."""
    clients.empty_group(broker.bootstrap_servers, group, offsets)
