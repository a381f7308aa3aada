"""An independent client implementation, librdkafka (confluent-kafka), against the sandbox broker's
group coordinator: a consumer group's join and commit, and the AdminClient's group calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from group_clients import dump, group_records, record_shape
from waiting import wait_until

from kafka_sandbox import SandboxBroker


@pytest.fixture
def admin(broker: SandboxBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


@pytest.fixture
def consumer(broker: SandboxBroker) -> Iterator[Consumer]:
    broker.create_topic("orders", 2)
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "rk",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "heartbeat.interval.ms": 100,
        }
    )
    c.subscribe(["orders"])

    def assigned() -> bool:
        c.poll(0.05)  # librdkafka joins the group while the application polls
        return len(c.assignment()) == 2

    wait_until(assigned, 20, "librdkafka's assignment")
    yield c
    c.close()


def describe(admin: AdminClient, group: str):  # type: ignore[no-untyped-def]
    return admin.describe_consumer_groups([group])[group].result(timeout=20)


def alter(
    admin: AdminClient, group: str, offsets: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int | None]:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    result = admin.alter_consumer_group_offsets([request])[group].result(timeout=20)
    return {
        (tp.topic, tp.partition): (tp.error.code() if tp.error else None) for tp in result.topic_partitions
    }


def test_librdkafka_commits_and_its_group_is_stable_with_its_assignment(
    broker: SandboxBroker, admin: AdminClient, consumer: Consumer
) -> None:
    committed = consumer.commit(
        offsets=[TopicPartition("orders", 0, 11), TopicPartition("orders", 1, 12)], asynchronous=False
    )
    assert all(tp.error is None for tp in committed)

    listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=20)
    assert [g.group_id for g in listed.valid] == ["rk"]
    group = describe(admin, "rk")
    assert group.state is ConsumerGroupState.STABLE
    assert group.partition_assignor == "range"
    [member] = group.members
    assert {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions} == {
        ("orders", 0),
        ("orders", 1),
    }

    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("rk")])["rk"].result(timeout=20)
    assert {(tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions} == {
        ("orders", 0): 11,
        ("orders", 1): 12,
    }


def test_admin_changes_are_refused_while_librdkafka_is_a_member(
    broker: SandboxBroker, admin: AdminClient, consumer: Consumer
) -> None:
    # Admin commits are refused while the group has a member.
    assert alter(admin, "rk", {("orders", 0): 1}) == {("orders", 0): KafkaError.UNKNOWN_MEMBER_ID}
    deleted = admin.delete_consumer_groups(["rk", "nobody"])
    with pytest.raises(Exception) as refused:
        deleted["rk"].result(timeout=20)
    assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    with pytest.raises(Exception) as unknown:
        deleted["nobody"].result(timeout=20)
    assert unknown.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND


def test_after_close_the_group_is_empty_and_admin_may_change_or_delete_it(
    broker: SandboxBroker, admin: AdminClient, consumer: Consumer
) -> None:
    consumer.commit(offsets=[TopicPartition("orders", 0, 5)], asynchronous=False)
    consumer.close()
    wait_until(lambda: describe(admin, "rk").state is ConsumerGroupState.EMPTY, what="the group to be Empty")
    assert alter(admin, "rk", {("orders", 0): 2}) == {("orders", 0): None}
    assert admin.delete_consumer_groups(["rk"])["rk"].result(timeout=20) is None
    shapes = [record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "rk")]
    assert shapes[-3:] == [
        ("OffsetCommit", "rk", "orders", 0, "value"),  # the admin commit
        ("OffsetCommit", "rk", "orders", 0, "tombstone"),  # DeleteGroups: the offsets, then the group
        ("GroupMetadata", "rk", "tombstone"),
    ]
