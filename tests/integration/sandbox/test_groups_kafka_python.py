"""kafka-python consumer groups and KafkaAdminClient against the sandbox broker, over TCP.

Each test checks what the client sees (assignments, error codes) and the records the coordinator
wrote to `__consumer_offsets`, as `kafka-offset-operator dump` reads them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import kafka.errors as Errors
import pytest
from group_clients import dump, group_records, record_shape
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka_clients import GroupConsumer
from waiting import wait_until

from kafka_sandbox import SandboxBroker

# kafka-python 3.0.12's consumer can stall for good on a loaded machine (tests/support/kafka_clients.py): its
# heartbeats stop, the sandbox then rightly ends its session, and the test waits in vain. One rerun, on a fresh
# broker (the fixture is per test), tells that client stall from a broker bug, which fails both times.
pytestmark = pytest.mark.flaky(reruns=1)


@pytest.fixture
def admin(broker: SandboxBroker):  # type: ignore[no-untyped-def]
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


# -- a group of two members, from joining to leaving


@dataclass
class TwoMembers:
    first: GroupConsumer
    second: GroupConsumer
    partitions: set[TopicPartition]  # orders' four partitions


@pytest.fixture
def two_members(broker: SandboxBroker) -> Iterator[TwoMembers]:
    """Group g1 on orders (4 partitions): a first member owns them all, then a second joins and the
    rebalance splits them."""
    broker.create_topic("orders", 4)
    tps = {TopicPartition("orders", p) for p in range(4)}
    with ExitStack() as members:
        first = members.enter_context(GroupConsumer(broker.bootstrap_servers, "g1", ["orders"]))
        wait_until(lambda: first.assignment == tps, what="the first member to own all partitions")
        second = members.enter_context(GroupConsumer(broker.bootstrap_servers, "g1", ["orders"]))
        wait_until(
            lambda: (
                len(first.assignment) == 2
                and len(second.assignment) == 2
                and not first.assignment & second.assignment
            ),
            timeout=90,  # two kafka-python clients rejoining on a loaded 2-core machine: seconds each
            what="the rebalance to split the partitions",
        )
        yield TwoMembers(first, second, tps)


def commit_assigned(members: TwoMembers) -> None:
    """Each member commits 10 + partition for the partitions it owns."""
    for member in (members.first, members.second):
        member.commit({(tp.topic, tp.partition): 10 + tp.partition for tp in member.assignment})


@pytest.fixture
def left(two_members: TwoMembers) -> None:
    """The members commit what they own, then leave (LeaveGroup on close): the first, and once the second
    took over every partition (the generation completed), the second. Leaving while that rebalance waits
    for the leader's SyncGroup would skip a generation in the log, as in Kafka."""
    commit_assigned(two_members)
    two_members.first.close()
    wait_until(lambda: two_members.second.assignment == two_members.partitions, what="the second member to take over")
    two_members.second.close()


def test_a_joining_member_splits_the_partitions_and_the_group_is_stable(
    two_members: TwoMembers, admin: KafkaAdminClient
) -> None:
    described = admin.describe_groups(["g1"])["g1"]
    assert described["group_state"] == "Stable" and described["protocol_type"] == "consumer"
    assert len(described["members"]) == 2
    assert all(m["member_metadata"]["topics"] == ["orders"] for m in described["members"])


def test_members_commit_the_partitions_they_own(two_members: TwoMembers, admin: KafkaAdminClient) -> None:
    commit_assigned(two_members)
    offsets = admin.list_group_offsets({"g1": None})["g1"]
    assert {tp: o.offset for tp, o in offsets.items()} == {tp: 10 + tp.partition for tp in two_members.partitions}


def test_once_its_members_left_the_group_is_empty(left: None, admin: KafkaAdminClient) -> None:
    described = admin.describe_groups(["g1"])["g1"]
    assert described["group_state"] == "Empty" and described["members"] == []
    groups = {g["group_id"]: g for g in admin.list_groups()}
    assert groups["g1"]["group_state"] == "Empty" and groups["g1"]["protocol_type"] == "consumer"


def test_the_log_has_one_group_metadata_per_generation(left: None, broker: SandboxBroker) -> None:
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


# -- the admin calls on a group with a member, and on one without


@pytest.fixture
def active(broker: SandboxBroker) -> Iterator[GroupConsumer]:
    """Group "active", one member on orders (2 partitions), which committed orders/0 at 1 and payments/0 at 2
    (a topic it does not subscribe to)."""
    broker.create_topic("orders", 2)
    broker.create_topic("payments", 1)
    with GroupConsumer(broker.bootstrap_servers, "active", ["orders"]) as member:
        wait_until(lambda: len(member.assignment) == 2, what="the active group to be assigned")
        member.commit({("orders", 0): 1, ("payments", 0): 2})
        yield member


def test_admin_commits_are_refused_while_a_group_has_members_and_accepted_otherwise(
    active: GroupConsumer, admin: KafkaAdminClient
) -> None:
    # Admin commits (generation -1, no member id) only to groups without members.
    refused = admin.alter_group_offsets("active", {TopicPartition("orders", 0): OffsetAndMetadata(9, "", -1)})
    assert refused == {TopicPartition("orders", 0): Errors.UnknownMemberIdError}
    accepted = admin.alter_group_offsets("idle", {TopicPartition("orders", 1): OffsetAndMetadata(5, "", -1)})
    assert accepted == {TopicPartition("orders", 1): Errors.NoError}
    unknown_topic = admin.alter_group_offsets("idle", {TopicPartition("ghost", 0): OffsetAndMetadata(1, "", -1)})
    assert unknown_topic == {TopicPartition("ghost", 0): Errors.UnknownTopicOrPartitionError}


def test_offset_delete_refuses_subscribed_topics_per_partition_and_unknown_groups(
    active: GroupConsumer, admin: KafkaAdminClient, broker: SandboxBroker
) -> None:
    # OffsetDelete (KIP-496): subscribed topics are refused per partition, the others deleted.
    deleted = admin.delete_group_offsets("active", [TopicPartition("orders", 0), TopicPartition("payments", 0)])
    assert deleted == {
        TopicPartition("orders", 0): Errors.GroupSubscribedToTopicError,
        TopicPartition("payments", 0): Errors.NoError,
    }
    with pytest.raises(Errors.GroupIdNotFoundError):
        admin.delete_group_offsets("nobody", [TopicPartition("orders", 0)])
    offsets = [
        record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "active") if r["type"] == "OffsetCommit"
    ]
    assert offsets == [
        ("OffsetCommit", "active", "orders", 0, "value"),
        ("OffsetCommit", "active", "payments", 0, "value"),
        ("OffsetCommit", "active", "payments", 0, "tombstone"),
    ]


def test_delete_groups_deletes_only_empty_groups_with_their_offsets(
    active: GroupConsumer, admin: KafkaAdminClient, broker: SandboxBroker
) -> None:
    accepted = admin.alter_group_offsets("idle", {TopicPartition("orders", 1): OffsetAndMetadata(5, "", -1)})
    assert accepted == {TopicPartition("orders", 1): Errors.NoError}
    # kafka-python reports DeleteGroups results by error name ("OK" for none).
    results = dict(admin.delete_groups(["active", "idle", "nobody"]))
    assert results == {"active": "NonEmptyGroupError", "idle": "OK", "nobody": "GroupIdNotFoundError"}
    assert {g["group_id"] for g in admin.list_groups()} == {"active"}
    assert [record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "idle")] == [
        ("OffsetCommit", "idle", "orders", 1, "value"),
        ("OffsetCommit", "idle", "orders", 1, "tombstone"),
        ("GroupMetadata", "idle", "tombstone"),
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
