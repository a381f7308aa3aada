"""OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups / ListGroups / DescribeGroups on the state
machine: the error codes and records of Kafka 4.x (OffsetMetadataManager, ClassicGroup.validate*,
KafkaApis' unknown-topic checks)."""

from __future__ import annotations

import kafka.errors as Errors
from coordinator_harness import T0, Harness, topic_id_of

from kafka_sandbox.coordinator import Error
from kafka_sandbox.coordinator.classic import GroupState
from kafka_sandbox.coordinator.messages import (
    OffsetDeleteRequest,
    OffsetFetchGroupRequest,
    Protocol,
)


def delete(h: Harness, group: str, **topics: list[int]) -> tuple[Error, dict[tuple[str, int], Error]]:
    response = h.coord.delete_offsets(
        OffsetDeleteRequest(group, tuple((t, tuple(p)) for t, p in topics.items()))
    )
    return response.error, {(t.name, p.partition): p.error for t in response.topics for p in t.partitions}


def fetch(h: Harness, group: str, topics: dict[str, list[int]] | None = None) -> dict[tuple[str, int], int]:
    request_topics = None if topics is None else tuple((t, tuple(p)) for t, p in topics.items())
    response = h.coord.fetch_offsets(OffsetFetchGroupRequest(group, request_topics))
    assert response.error is Errors.NoError
    return {(t, p.partition): p.offset for t, parts in response.topics for p in parts}


# ---- OffsetCommit ----


def test_member_commit_writes_offset_records_v4_with_the_topic_id() -> None:
    """Kafka 4.1+ writes OffsetCommitValue v4; from 4.3 the broker resolves a named topic's id for the record
    (KafkaApis.handleOffsetCommitRequest), so the tagged topicId is there (docs/kafka-semantics.md)."""
    h = Harness()
    member_id, generation = h.stable_group("g1")
    mark = h.mark()
    assert h.commit("g1", {("orders", 0): 42}, generation=generation, member_id=member_id) == {
        ("orders", 0): Errors.NoError
    }
    [record] = h.decoded(mark)
    assert record["type"] == "OffsetCommit" and record["keyVersion"] == 1
    assert record["valueVersion"] == 4
    assert record["value"] == {
        "offset": 42, "leaderEpoch": -1, "metadata": "", "commitTimestamp": T0, "topicId": topic_id_of("orders")
    }


def test_member_commit_validation() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1")
    one = {("orders", 0): 1}
    assert h.commit("g1", one, generation=generation + 1, member_id=member_id) == {
        ("orders", 0): Errors.IllegalGenerationError
    }
    assert h.commit("g1", one, generation=generation, member_id="stranger") == {
        ("orders", 0): Errors.UnknownMemberIdError
    }
    # A new member makes the group rebalance; after the join completes the old member's commit is
    # for an old generation, and during CompletingRebalance a current member gets REBALANCE_IN_PROGRESS.
    second = h.join_new_member("g1", client_id="other")
    rejoin = h.join("g1", member_id)
    assert second.result().generation_id == rejoin.result().generation_id == generation + 1
    assert h.commit("g1", one, generation=generation + 1, member_id=member_id) == {
        ("orders", 0): Errors.RebalanceInProgressError
    }


def test_admin_commit_is_refused_while_the_group_has_members() -> None:
    h = Harness()
    h.stable_group("g1")
    mark = h.mark()
    result = h.commit("g1", {("orders", 0): 5, ("orders", 1): 6})
    assert result == {("orders", 0): Errors.UnknownMemberIdError, ("orders", 1): Errors.UnknownMemberIdError}
    assert h.mark() == mark


def test_admin_commit_to_an_unknown_group_creates_a_simple_group_without_group_record() -> None:
    h = Harness()
    assert h.commit("standalone", {("orders", 0): 7}) == {("orders", 0): Errors.NoError}
    assert [r["type"] for r in h.decoded()] == ["OffsetCommit"]
    [listed] = h.coord.list_groups()
    assert (listed.group_id, listed.protocol_type, listed.state, listed.group_type) == (
        "standalone",
        "",
        "Empty",
        "classic",
    )
    [described] = h.coord.describe_groups(["standalone"])
    assert (described.state, described.protocol_type, described.members) == ("Empty", "", ())


def test_admin_commit_to_an_empty_classic_group_keeps_its_state_timestamp() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1")
    h.commit("g1", {("orders", 0): 1}, generation=generation, member_id=member_id)  # keeps the group alive
    h.leave("g1", member_id)
    group = h.coord.state.classic_group("g1")
    assert group is not None
    before = group.current_state_timestamp
    h.clock.advance(days=1)
    mark = h.mark()
    assert h.commit("g1", {("orders", 0): 9}) == {("orders", 0): Errors.NoError}
    assert [r["type"] for r in h.decoded(mark)] == ["OffsetCommit"]
    assert group.current_state_timestamp == before


def test_commit_with_a_generation_to_an_unknown_group() -> None:
    h = Harness()
    assert h.commit("nope", {("orders", 0): 1}, generation=3, member_id="m") == {
        ("orders", 0): Errors.GroupIdNotFoundError
    }
    assert h.commit("nope", {("orders", 0): 1}, generation=3, member_id="m", version=8) == {
        ("orders", 0): Errors.IllegalGenerationError
    }
    assert h.coord.list_groups() == []


def test_unknown_topics_and_partitions_are_answered_before_the_coordinator() -> None:
    h = Harness()
    result = h.commit("g1", {("ghost", 0): 1, ("orders", 7): 1, ("orders", 1): 1})
    assert result == {
        ("ghost", 0): Errors.UnknownTopicOrPartitionError,
        ("orders", 7): Errors.UnknownTopicOrPartitionError,
        ("orders", 1): Errors.NoError,
    }
    # Only unknown topics: the coordinator is never called, so no simple group appears.
    assert h.commit("g2", {("ghost", 0): 1}) == {("ghost", 0): Errors.UnknownTopicOrPartitionError}
    assert [g.group_id for g in h.coord.list_groups()] == ["g1"]


def test_retention_time_of_v2_to_v4_becomes_an_expire_timestamp() -> None:
    h = Harness()
    h.commit("g1", {("orders", 0): 1}, version=4, retention_ms=60_000)
    [record] = h.decoded()
    assert record["valueVersion"] == 1
    assert record["value"]["expireTimestamp"] == T0 + 60_000


def test_offset_metadata_too_large() -> None:
    h = Harness()
    result = h.commit("g1", {("orders", 0): 1}, metadata="x" * 4097)
    assert result == {("orders", 0): Errors.OffsetMetadataTooLargeError}
    assert h.commit("g1", {("orders", 0): 1}, metadata="é" * 4096) == {("orders", 0): Errors.NoError}


# ---- OffsetFetch ----


def test_fetch_named_partitions_and_all_partitions() -> None:
    h = Harness()
    h.commit("g1", {("orders", 0): 10, ("orders", 2): 12, ("payments", 1): 5})
    assert fetch(h, "g1", {"orders": [0, 1]}) == {("orders", 0): 10, ("orders", 1): -1}
    assert fetch(h, "g1") == {("orders", 0): 10, ("orders", 2): 12, ("payments", 1): 5}
    assert fetch(h, "nope") == {}
    assert fetch(h, "nope", {"orders": [0]}) == {("orders", 0): -1}


# ---- OffsetDelete (KIP-496) ----


def test_offset_delete_on_an_unknown_group() -> None:
    h = Harness()
    assert delete(h, "nope", orders=[0], ghost=[0]) == (Errors.GroupIdNotFoundError, {})


def test_offset_delete_on_a_stable_consumer_group() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1", "orders")
    h.commit("g1", {("orders", 0): 1, ("payments", 0): 2}, generation=generation, member_id=member_id)
    mark = h.mark()
    error, results = delete(h, "g1", orders=[0], payments=[0, 1], ghost=[0])
    assert error is Errors.NoError
    assert results == {
        ("orders", 0): Errors.GroupSubscribedToTopicError,
        ("payments", 0): Errors.NoError,
        ("payments", 1): Errors.NoError,  # nothing committed: no error, no tombstone
        ("ghost", 0): Errors.UnknownTopicOrPartitionError,
    }
    assert h.summary(mark) == [("OffsetCommit", "g1", "payments", 0, True)]
    assert fetch(h, "g1") == {("orders", 0): 1}


def test_offset_delete_on_an_active_non_consumer_group_is_refused() -> None:
    h = Harness()
    joined = h.join("g1", version=3, protocol_type="connect", protocols=(Protocol("default", b"\x00"),))
    h.coord.tick()
    response = joined.result()
    h.sync("g1", response.member_id, response.generation_id)
    h.commit("g1", {("orders", 0): 1}, generation=response.generation_id, member_id=response.member_id)
    assert delete(h, "g1", orders=[0]) == (Errors.NonEmptyGroupError, {})


def test_offset_delete_on_an_empty_group_leaves_the_group_for_the_next_cleanup() -> None:
    h = Harness()
    h.commit("g1", {("orders", 0): 1})
    assert delete(h, "g1", orders=[0]) == (Errors.NoError, {("orders", 0): Errors.NoError})
    assert [g.group_id for g in h.coord.list_groups()] == ["g1"]
    mark = h.mark()
    report = h.coord.expire_offsets()
    assert report.deleted_groups == ["g1"]
    assert h.summary(mark) == [("GroupMetadata", "g1", True)]


# ---- DeleteGroups, ListGroups, DescribeGroups ----


def test_delete_groups() -> None:
    h = Harness()
    h.stable_group("busy")
    h.commit("idle", {("orders", 0): 1, ("payments", 1): 2})
    mark = h.mark()
    results = {r.group_id: r.error for r in h.coord.delete_groups(["busy", "idle", "nope", "idle"])}
    assert results == {
        "busy": Errors.NonEmptyGroupError,
        "idle": Errors.NoError,
        "nope": Errors.GroupIdNotFoundError,
    }
    assert h.summary(mark) == [
        ("OffsetCommit", "idle", "orders", 0, True),
        ("OffsetCommit", "idle", "payments", 1, True),
        ("GroupMetadata", "idle", True),
    ]
    assert fetch(h, "idle") == {}
    assert [g.group_id for g in h.coord.list_groups()] == ["busy"]


def test_list_groups_filters() -> None:
    h = Harness()
    h.stable_group("busy")
    h.commit("idle", {("orders", 0): 1})
    assert {g.group_id for g in h.coord.list_groups(["stable"])} == {"busy"}
    assert {g.group_id for g in h.coord.list_groups([" EMPTY "])} == {"idle"}
    assert {g.group_id for g in h.coord.list_groups(types_filter=["Classic"])} == {"busy", "idle"}
    assert h.coord.list_groups(types_filter=["consumer"]) == []
    assert h.coord.list_groups(types_filter=["bogus"]) == []


def test_describe_groups_by_state() -> None:
    h = Harness()
    member_id, _ = h.stable_group("g1", "orders")
    [stable] = h.coord.describe_groups(["g1"])
    assert (stable.state, stable.protocol_type, stable.protocol_data) == ("Stable", "consumer", "range")
    [member] = stable.members
    assert member.member_id == member_id and member.metadata and member.assignment is not None
    h.join_new_member("g1", client_id="other")
    [rebalancing] = h.coord.describe_groups(["g1"])
    assert rebalancing.state == "PreparingRebalance" and rebalancing.protocol_data == ""
    assert all(m.metadata == b"" for m in rebalancing.members)
    [dead] = h.coord.describe_groups(["nope"])
    assert (dead.state, dead.error) == ("Dead", Errors.NoError)
    [dead6] = h.coord.describe_groups(["nope"], api_version=6)
    assert (dead6.state, dead6.error, dead6.error_message) == (
        "Dead",
        Errors.GroupIdNotFoundError,
        "Group nope not found.",
    )
    group = h.coord.state.classic_group("g1")
    assert group is not None and group.state is GroupState.PREPARING_REBALANCE
