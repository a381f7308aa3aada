"""Kafka's answers that whole-group deletion is built on, over TCP through the operator's adapter (kafka_admin):
OffsetDelete cannot remove an offset of a deleted topic (UNKNOWN_TOPIC_OR_PARTITION,
KafkaApis.handleOffsetDeleteRequest), DeleteGroups can (with the group), and DeleteGroups refuses a group with
members (NON_EMPTY_GROUP) and an unknown one (GROUP_ID_NOT_FOUND).

On Apache Kafka (the `kafka` fixture) but the first test: offsets of a deleted topic exist only where a
coordinator missed the deletion (Kafka 4.x tombstones them at once, GroupCoordinatorService.onPartitionsDeleted,
as the last test shows), so that test seeds them as records into the sandbox's __consumer_offsets, which no
client of Apache Kafka can do."""

from __future__ import annotations

import time

from brokers import make_topics
from kafka import KafkaAdminClient
from kafka_clients import committed, empty_group, member
from kafka_under_test import Kafka
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offsets_model.codec import offset_commit
from kafka_sandbox import SandboxBroker


def seed_deleted_topic_offsets(broker: SandboxBroker, group: str, topic: str, partitions: int) -> None:
    now = int(time.time() * 1000)
    broker.append_offsets_records(
        [(*offset_commit(group, topic, p, offset=10 + p, commit_timestamp=now), now) for p in range(partitions)])


def test_offset_delete_of_a_deleted_topic_is_refused_and_delete_groups_removes_it(broker: SandboxBroker) -> None:
    seed_deleted_topic_offsets(broker, "legacy-reader", "gone", 2)
    assert committed(broker.bootstrap_servers, "legacy-reader") == {("gone", 0): 10, ("gone", 1): 11}
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        assert "gone" not in admin.topic_names()
        answers = admin.delete_offsets("legacy-reader", [("gone", 0), ("gone", 1)])
        assert answers == {("gone", 0): "UNKNOWN_TOPIC_OR_PARTITION", ("gone", 1): "UNKNOWN_TOPIC_OR_PARTITION"}
        assert set(admin.committed_offsets("legacy-reader")) == {("gone", 0), ("gone", 1)}  # still there
        assert admin.delete_group("legacy-reader", raise_retriable=True) is None
        assert admin.committed_offsets("legacy-reader") == {}
        assert not admin.describe_group("legacy-reader").exists
        assert admin.delete_group("legacy-reader") == "GROUP_ID_NOT_FOUND"


def test_delete_groups_refuses_a_group_with_members_and_deletes_it_once_empty(kafka: Kafka) -> None:
    make_topics(kafka, {"dgw-orders": 1})
    b = kafka.bootstrap_servers
    with member(b, "dgw-busy", ["dgw-orders"]) as consumer:
        consumer.commit({("dgw-orders", 0): 3})
        with KafkaAdmin(ConnectionSettings(b)) as admin:
            assert admin.delete_group("dgw-busy", raise_retriable=True) == "NON_EMPTY_GROUP"
    assert committed(b, "dgw-busy") == {("dgw-orders", 0): 3}
    with KafkaAdmin(ConnectionSettings(b)) as admin:
        assert admin.delete_group("dgw-busy") is None
    assert committed(b, "dgw-busy") == {}


def test_deleting_a_topic_tombstones_its_offsets(kafka: Kafka) -> None:
    """The other half of Kafka's behaviour (onPartitionsDeleted): what the policy meets only where a
    coordinator missed the deletion."""
    make_topics(kafka, {"dgw-short-lived": 1, "dgw-kept": 1})
    b = kafka.bootstrap_servers
    empty_group(b, "dgw-reader", {("dgw-short-lived", 0): 2, ("dgw-kept", 0): 1})
    admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        admin.delete_topics(["dgw-short-lived"])
    finally:
        admin.close()
    wait_until(lambda: committed(b, "dgw-reader") == {("dgw-kept", 0): 1}, 30,
               "the deleted topic's offsets to go")
