"""Offset expiration on the sandbox broker with its clock advanced: KIP-211 (Empty groups expire from
the time they became Empty), KIP-496 (a Stable group loses only offsets of topics it no longer
subscribes to, counted from their commit) and standalone offsets (counted from their commit), with
the tombstones `kafka-offset-operator dump` shows afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from group_clients import dump, group_records, record_shape
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata
from kafka_clients import GroupConsumer
from waiting import wait_until

from kafka_sandbox import SandboxBroker

# kafka-python 3.0.12's consumer can stall for good on a loaded machine (tests/support/kafka_clients.py): its
# heartbeats stop, the sandbox then rightly ends its session, and the test waits in vain. One rerun, on a fresh
# broker (the fixture is per test), tells that client stall from a broker bug, which fails both times.
pytestmark = pytest.mark.flaky(reruns=1)

RETENTION_DAYS = 7


@pytest.fixture
def admin(broker: SandboxBroker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


def committed(admin: KafkaAdminClient, group: str) -> dict[tuple[str, int], int]:
    offsets = admin.list_group_offsets({group: None})[group]
    return {(tp.topic, tp.partition): o.offset for tp, o in offsets.items()}


@pytest.fixture
def a_minute_before_expiry(broker: SandboxBroker, admin: KafkaAdminClient) -> dict[tuple[str, int], int]:
    """Group e1 committed orders/0 at 4 and orders/1 at 5, became Empty two days later, and the broker's
    expiration ran a minute before retention after that: what e1 has committed then."""
    broker.create_topic("orders", 2)
    consumer = GroupConsumer(broker.bootstrap_servers, "e1", ["orders"])
    wait_until(lambda: len(consumer.assignment) == 2, what="the assignment")
    consumer.commit({("orders", 0): 4, ("orders", 1): 5})
    broker.clock.advance(days=2)  # commits are older than the group's Empty state from here on
    consumer.close()

    broker.clock.advance(days=RETENTION_DAYS, minutes=-1)
    broker.expire_offsets()
    return committed(admin, "e1")


def test_an_empty_group_keeps_its_offsets_until_retention_after_it_became_empty(
    a_minute_before_expiry: dict[tuple[str, int], int],
) -> None:
    assert a_minute_before_expiry == {("orders", 0): 4, ("orders", 1): 5}


def test_an_empty_group_expires_retention_after_it_became_empty(
    a_minute_before_expiry: dict[tuple[str, int], int], broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.clock.advance(minutes=1)
    broker.expire_offsets()
    assert committed(admin, "e1") == {}
    assert "e1" not in {g["group_id"] for g in admin.list_groups()}

    records = group_records(dump(broker.bootstrap_servers), "e1")
    last_empty = max(i for i, r in enumerate(records) if r["type"] == "GroupMetadata" and r["value"])
    assert [record_shape(r) for r in records[last_empty + 1 :]] == [
        ("OffsetCommit", "e1", "orders", 0, "tombstone"),
        ("OffsetCommit", "e1", "orders", 1, "tombstone"),
        ("GroupMetadata", "e1", "tombstone"),
    ]
    became_empty = records[last_empty]["value"]["currentStateTimestamp"]
    expired_at = records[-1]["timestamp"]
    assert expired_at - became_empty >= RETENTION_DAYS * 86_400_000


def test_a_stable_group_keeps_subscribed_offsets_and_loses_unsubscribed_ones(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.create_topic("orders", 1)
    broker.create_topic("payments", 1)
    consumer = GroupConsumer(broker.bootstrap_servers, "s1", ["orders"])
    try:
        wait_until(lambda: consumer.assignment, what="the assignment")
        consumer.commit({("orders", 0): 7, ("payments", 0): 3})  # payments: no longer subscribed
        broker.clock.advance(days=RETENTION_DAYS + 1)
        broker.expire_offsets()
        assert committed(admin, "s1") == {("orders", 0): 7}
        described = admin.describe_groups(["s1"])["s1"]
        assert described["group_state"] == "Stable" and len(described["members"]) == 1
        consumer.commit({("orders", 0): 8})  # the member is still a member after the jump
    finally:
        consumer.close()
    tombstones = [
        record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "s1") if r["value"] is None
    ]
    assert tombstones == [("OffsetCommit", "s1", "payments", 0, "tombstone")]


@pytest.fixture
def first_offset_expired(broker: SandboxBroker, admin: KafkaAdminClient) -> dict[tuple[str, int], int]:
    """Simple group "lone": orders/0 committed at 1, orders/1 at 2 six days later; the expiration ran a
    minute past orders/0's retention. What "lone" has committed then."""
    broker.create_topic("orders", 2)
    admin.alter_group_offsets("lone", {TopicPartition("orders", 0): OffsetAndMetadata(1, "", -1)})
    broker.clock.advance(days=RETENTION_DAYS - 1)
    admin.alter_group_offsets("lone", {TopicPartition("orders", 1): OffsetAndMetadata(2, "", -1)})
    broker.clock.advance(days=1, minutes=1)
    broker.expire_offsets()
    return committed(admin, "lone")


def test_standalone_offsets_expire_by_commit_timestamp(first_offset_expired: dict[tuple[str, int], int]) -> None:
    assert first_offset_expired == {("orders", 1): 2}


def test_a_standalone_group_goes_with_its_last_offset(
    first_offset_expired: dict[tuple[str, int], int], broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.clock.advance(days=RETENTION_DAYS)
    broker.expire_offsets()
    assert "lone" not in {g["group_id"] for g in admin.list_groups()}
    assert [record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "lone")] == [
        ("OffsetCommit", "lone", "orders", 0, "value"),
        ("OffsetCommit", "lone", "orders", 1, "value"),
        ("OffsetCommit", "lone", "orders", 0, "tombstone"),
        ("OffsetCommit", "lone", "orders", 1, "tombstone"),
        ("GroupMetadata", "lone", "tombstone"),  # Kafka 4.x tombstones even a group it never wrote
    ]


def test_the_expiration_task_runs_by_itself_on_the_broker_clock(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.create_topic("orders", 1)
    admin.alter_group_offsets("lone", {TopicPartition("orders", 0): OffsetAndMetadata(1, "", -1)})
    broker.clock.advance(days=RETENTION_DAYS, minutes=10)
    wait_until(lambda: committed(admin, "lone") == {}, what="the periodic expiration task")


def test_deleting_a_topic_deletes_its_committed_offsets(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    admin.create_topics([NewTopic("doomed", 1, 1), NewTopic("kept", 1, 1)])
    admin.alter_group_offsets(
        "g",
        {
            TopicPartition("doomed", 0): OffsetAndMetadata(1, "", -1),
            TopicPartition("kept", 0): OffsetAndMetadata(2, "", -1),
        },
    )
    admin.delete_topics(["doomed"])
    assert committed(admin, "g") == {("kept", 0): 2}
    assert [record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "g")][-1] == (
        "OffsetCommit",
        "g",
        "doomed",
        0,
        "tombstone",
    )
