"""kafka-python consumer groups and KafkaAdminClient against the sandbox broker, over TCP.

Each test checks what the client sees (assignments, error codes) and the records the coordinator
wrote to `__consumer_offsets`, as `kafka-offset-operator dump` reads them.
"""

from __future__ import annotations

import kafka.errors as Errors
import pytest
from group_clients import dump, group_records, record_shape
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka_clients import GroupConsumer, wait_until

from kafka_sandbox import SandboxBroker


@pytest.fixture
def admin(broker: SandboxBroker):  # type: ignore[no-untyped-def]
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


def test_subscribe_rebalance_commit_and_close(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    broker.create_topic("orders", 4)
    tps = {TopicPartition("orders", p) for p in range(4)}
    first = GroupConsumer(broker.bootstrap_servers, "g1", ["orders"])
    wait_until(lambda: first.assignment == tps, what="the first member to own all partitions")
    second = GroupConsumer(broker.bootstrap_servers, "g1", ["orders"])
    wait_until(
        lambda: (
            len(first.assignment) == 2
            and len(second.assignment) == 2
            and not first.assignment & second.assignment
        ),
        what="the rebalance to split the partitions",
    )
    described = admin.describe_groups(["g1"])["g1"]
    assert described["group_state"] == "Stable" and described["protocol_type"] == "consumer"
    assert len(described["members"]) == 2
    assert all(m["member_metadata"]["topics"] == ["orders"] for m in described["members"])

    first.commit({(tp.topic, tp.partition): 10 + tp.partition for tp in first.assignment})
    second.commit({(tp.topic, tp.partition): 10 + tp.partition for tp in second.assignment})
    offsets = admin.list_group_offsets({"g1": None})["g1"]
    assert {tp: o.offset for tp, o in offsets.items()} == {tp: 10 + tp.partition for tp in tps}

    first.close()
    second.close()
    described = admin.describe_groups(["g1"])["g1"]
    assert described["group_state"] == "Empty" and described["members"] == []
    groups = {g["group_id"]: g for g in admin.list_groups()}
    assert groups["g1"]["group_state"] == "Empty" and groups["g1"]["protocol_type"] == "consumer"

    # The log: the empty group on creation (generation 0), then one GroupMetadata per generation, written
    # when the leader's assignment arrives or when the group becomes Empty. How many generations there
    # are depends on the clients' timing (kafka-python may rejoin once its metadata arrives).
    records = group_records(dump(broker.bootstrap_servers), "g1")
    metadata = [r["value"] for r in records if r["type"] == "GroupMetadata"]
    assert (
        metadata[0]["generation"] == 0 and metadata[0]["protocolType"] == "" and metadata[0]["members"] == []
    )
    assert [v["generation"] for v in metadata] == list(range(len(metadata)))
    assert any(len(v["members"]) == 2 for v in metadata)
    last = metadata[-1]
    assert last["members"] == [] and last["protocol"] is None and last["protocolType"] == "consumer"


def test_manual_assign_and_commit_makes_a_standalone_group(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.create_topic("orders", 2)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id="standalone", enable_auto_commit=False
    )
    try:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.commit({TopicPartition("orders", 0): OffsetAndMetadata(3, "manual", -1)})
    finally:
        consumer.close(autocommit=False)
    groups = {g["group_id"]: g for g in admin.list_groups()}
    assert (groups["standalone"]["protocol_type"], groups["standalone"]["group_state"]) == ("", "Empty")
    offsets = admin.list_group_offsets({"standalone": None})["standalone"]
    assert offsets[TopicPartition("orders", 0)].offset == 3
    assert offsets[TopicPartition("orders", 0)].metadata == "manual"
    # A simple group lives in memory only: just the offset record is on the log.
    assert [record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "standalone")] == [
        ("OffsetCommit", "standalone", "orders", 0, "value")
    ]


def test_admin_offsets_and_group_deletion_with_the_refused_cases(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.create_topic("orders", 2)
    broker.create_topic("payments", 1)
    active = GroupConsumer(broker.bootstrap_servers, "active", ["orders"])
    wait_until(lambda: len(active.assignment) == 2, what="the active group to be assigned")
    active.commit({("orders", 0): 1, ("payments", 0): 2})
    try:
        # Admin commits (generation -1, no member id) only to groups without members.
        refused = admin.alter_group_offsets(
            "active", {TopicPartition("orders", 0): OffsetAndMetadata(9, "", -1)}
        )
        assert refused == {TopicPartition("orders", 0): Errors.UnknownMemberIdError}
        accepted = admin.alter_group_offsets(
            "idle", {TopicPartition("orders", 1): OffsetAndMetadata(5, "", -1)}
        )
        assert accepted == {TopicPartition("orders", 1): Errors.NoError}
        unknown_topic = admin.alter_group_offsets(
            "idle", {TopicPartition("ghost", 0): OffsetAndMetadata(1, "", -1)}
        )
        assert unknown_topic == {TopicPartition("ghost", 0): Errors.UnknownTopicOrPartitionError}

        # OffsetDelete (KIP-496): subscribed topics are refused per partition, the others deleted.
        deleted = admin.delete_group_offsets(
            "active", [TopicPartition("orders", 0), TopicPartition("payments", 0)]
        )
        assert deleted == {
            TopicPartition("orders", 0): Errors.GroupSubscribedToTopicError,
            TopicPartition("payments", 0): Errors.NoError,
        }
        with pytest.raises(Errors.GroupIdNotFoundError):
            admin.delete_group_offsets("nobody", [TopicPartition("orders", 0)])

        # kafka-python reports DeleteGroups results by error name ("OK" for none).
        results = dict(admin.delete_groups(["active", "idle", "nobody"]))
        assert results == {"active": "NonEmptyGroupError", "idle": "OK", "nobody": "GroupIdNotFoundError"}
        assert {g["group_id"] for g in admin.list_groups()} == {"active"}
    finally:
        active.close()

    records = dump(broker.bootstrap_servers)
    assert [record_shape(r) for r in group_records(records, "idle")] == [
        ("OffsetCommit", "idle", "orders", 1, "value"),
        ("OffsetCommit", "idle", "orders", 1, "tombstone"),
        ("GroupMetadata", "idle", "tombstone"),
    ]
    offsets = [record_shape(r) for r in group_records(records, "active") if r["type"] == "OffsetCommit"]
    assert offsets == [
        ("OffsetCommit", "active", "orders", 0, "value"),
        ("OffsetCommit", "active", "payments", 0, "value"),
        ("OffsetCommit", "active", "payments", 0, "tombstone"),
    ]


def test_list_groups_filters_and_describe_of_unknown_groups(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    broker.create_topic("orders", 1)
    admin.alter_group_offsets("idle", {TopicPartition("orders", 0): OffsetAndMetadata(1, "", -1)})
    assert [g["group_id"] for g in admin.list_groups(states_filter=["Empty"])] == ["idle"]
    assert admin.list_groups(states_filter=["Stable"]) == []
    assert [g["group_id"] for g in admin.list_groups(types_filter=["classic"])] == ["idle"]
    described = admin.describe_groups(["nobody"])["nobody"]
    assert described["group_state"] == "Dead"
