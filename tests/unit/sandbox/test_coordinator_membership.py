"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup on the coordinator state machine, with the records
Kafka 4.x writes for each step (GroupMetadataManager's classic group paths)."""

from __future__ import annotations

import kafka.errors as Errors
from coordinator_harness import T0, Harness, assignment, subscription

from kafka_offsets_model.codec import partition_for
from kafka_sandbox.coordinator import CoordinatorConfig
from kafka_sandbox.coordinator.classic import GroupState
from kafka_sandbox.coordinator.messages import (
    HeartbeatRequest,
    LeaveGroupRequest,
    MemberIdentity,
    Protocol,
    RequestContext,
)


def state_of(h: Harness, group: str) -> GroupState:
    g = h.coord.state.classic_group(group)
    assert g is not None
    return g.state


def test_a_group_created_by_a_join_can_be_deleted_before_the_member_joins() -> None:
    """The join window (docs/sandbox-broker.md): between MEMBER_ID_REQUIRED and the member's second JoinGroup
    the new group is Empty without offsets, so an offsets.retention.check.interval.ms run in between deletes
    it (GroupCoordinatorShard.cleanupGroupMetadata, GroupMetadataManager.maybeDeleteGroup: ClassicGroup.isEmpty
    is the Empty state, pending members or not) and the second JoinGroup gets UNKNOWN_MEMBER_ID
    (classicGroupJoinToClassicGroup turns GroupIdNotFoundException into it); the client then joins anew."""
    h = Harness(config=CoordinatorConfig(offsets_partitions=4, offsets_retention_check_interval_ms=1_000))
    h.clock.advance(ms=990)
    first = h.join("g1")
    assert first.result().error is Errors.MemberIdRequiredError
    h.clock.advance(ms=20)  # the check interval's boundary passes before the second JoinGroup
    second = h.join("g1", first.result().member_id)
    assert second.result().error is Errors.UnknownMemberIdError
    assert h.coord.state.classic_group("g1") is None
    assert h.summary() == [("GroupMetadata", "g1", False), ("GroupMetadata", "g1", True)]
    again = h.join_new_member("g1")  # what the client does next
    h.coord.tick()
    assert again.result().error is Errors.NoError


def test_first_join_asks_for_a_member_id_and_writes_the_empty_group_record() -> None:
    h = Harness()
    first = h.join("g1")
    response = first.result()
    assert response.error is Errors.MemberIdRequiredError
    assert response.member_id.startswith("client-")
    # newEmptyGroupMetadataRecord: the group exists on the log before any generation.
    [record] = h.decoded()
    assert record["type"] == "GroupMetadata" and record["key"] == {"group": "g1"}
    assert record["valueVersion"] == 3
    assert record["value"] == {
        "protocolType": "",
        "generation": 0,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": T0,
        "members": [],
    }
    assert h.sink.records[0][0] == partition_for("g1", 4)


def test_join_sync_heartbeat_leave_lifecycle_and_its_records() -> None:
    h = Harness()
    joined = h.join_new_member("g1", topics=("orders", "payments"))
    assert not joined.done  # the initial rebalance waits for group.initial.rebalance.delay.ms
    assert state_of(h, "g1") is GroupState.PREPARING_REBALANCE
    h.clock.advance(ms=5)
    h.coord.tick()
    response = joined.result()
    assert response.error is Errors.NoError
    assert response.generation_id == 1
    assert response.leader == response.member_id
    assert response.protocol_name == "range" and response.protocol_type == "consumer"
    assert [m.member_id for m in response.members] == [response.member_id]
    assert state_of(h, "g1") is GroupState.COMPLETING_REBALANCE
    mark = h.mark()
    assert h.heartbeat("g1", response.member_id, 1) is Errors.NoError

    h.clock.advance(ms=5)
    synced = h.sync("g1", response.member_id, 1, {response.member_id: assignment(orders=[0, 1, 2])})
    assert synced.result().error is Errors.NoError
    assert synced.result().assignment == assignment(orders=[0, 1, 2])
    assert state_of(h, "g1") is GroupState.STABLE
    [record] = h.decoded(mark)
    value = record["value"]
    assert value["generation"] == 1 and value["protocol"] == "range" and value["leader"] == response.member_id
    # The record is built before the move to Stable: it carries the timestamp of CompletingRebalance,
    # entered when the join timer (zero delay, due at T0) fired.
    assert value["currentStateTimestamp"] == T0
    [member] = value["members"]
    assert member["subscription"]["topics"] == ["orders", "payments"]
    assert member["assignment"]["partitions"] == [{"topic": "orders", "partitions": [0, 1, 2]}]
    assert member["sessionTimeout"] == 10_000 and member["rebalanceTimeout"] == 30_000

    h.clock.advance(ms=5)
    leave = h.leave("g1", response.member_id)
    assert leave.members[0].error is Errors.NoError
    assert state_of(h, "g1") is GroupState.EMPTY
    record = h.decoded()[-1]["value"]
    assert record["generation"] == 2 and record["members"] == [] and record["protocol"] is None
    assert record["protocolType"] == "consumer"
    assert record["currentStateTimestamp"] == T0 + 15


def test_a_second_member_triggers_a_rebalance_and_both_get_the_new_generation() -> None:
    h = Harness()
    first_id, generation = h.stable_group("g1", "orders")
    second = h.join_new_member("g1", topics=("payments",), client_id="other")
    assert state_of(h, "g1") is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g1", first_id, generation) is Errors.RebalanceInProgressError
    assert h.sync("g1", first_id, generation).result().error is Errors.RebalanceInProgressError
    rejoin = h.join("g1", first_id, topics=("orders",))
    leader_view, follower_view = rejoin.result(), second.result()
    assert leader_view.generation_id == follower_view.generation_id == 2
    assert {m.member_id for m in leader_view.members} == {first_id, follower_view.member_id}
    assert follower_view.members == ()
    follower_sync = h.sync("g1", follower_view.member_id, 2)
    assert not follower_sync.done  # followers wait for the leader's assignment
    mark = h.mark()
    h.sync(
        "g1",
        first_id,
        2,
        {first_id: assignment(orders=[0]), follower_view.member_id: assignment(payments=[0])},
    )
    assert follower_sync.result().assignment == assignment(payments=[0])
    [record] = h.decoded(mark)
    assert len(record["value"]["members"]) == 2
    group = h.coord.state.classic_group("g1")
    assert group is not None and group.subscribed_topics == frozenset({"orders", "payments"})


def test_session_timeout_removes_a_silent_member_and_empties_the_group() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1")
    h.clock.advance(ms=9_999)
    h.coord.tick()
    assert state_of(h, "g1") is GroupState.STABLE
    h.clock.advance(ms=1)
    h.coord.tick()
    assert state_of(h, "g1") is GroupState.EMPTY
    group = h.coord.state.classic_group("g1")
    assert group is not None and group.current_state_timestamp == T0 + 10_000
    assert h.heartbeat("g1", member_id, generation) is Errors.UnknownMemberIdError


def test_a_clock_jump_replays_timers_at_their_own_deadlines() -> None:
    h = Harness()
    h.stable_group("g1")
    mark = h.mark()
    h.clock.advance(days=3)
    h.coord.tick()
    # The member expired 10 s after its last heartbeat (not when the clock was looked at): the group
    # became Empty then; the expiration task, due 10 minutes after start, found it Empty without
    # offsets and deleted it.
    empty, tombstone = h.decoded(mark)
    assert empty["value"]["members"] == [] and empty["value"]["currentStateTimestamp"] == T0 + 10_000
    assert tombstone["type"] == "GroupMetadata" and tombstone["value"] is None
    assert [ts for _, _, _, ts in h.sink.records[mark:]] == [T0 + 10_000, T0 + 600_000]
    assert h.coord.state.classic_group("g1") is None


def test_a_live_client_keeps_its_session_through_a_clock_jump() -> None:
    h = Harness()
    member_id, _ = h.stable_group("g1")
    h.live.add(("g1", member_id))
    h.clock.advance(days=3)
    h.coord.tick()
    assert state_of(h, "g1") is GroupState.STABLE


def test_join_request_validation_errors() -> None:
    h = Harness()
    assert h.join("").result().error is Errors.InvalidGroupIdError
    assert h.join("g1", session_ms=5_999).result().error is Errors.InvalidSessionTimeoutError
    assert h.join("g1", session_ms=1_800_001).result().error is Errors.InvalidSessionTimeoutError
    assert h.join("nope", "made-up-id").result().error is Errors.UnknownMemberIdError
    assert h.sink.records == []  # none of these creates a group
    h.stable_group("g1")
    other = h.join("g1", protocol_type="connect", protocols=(Protocol("x", b""),))
    assert other.result().error is Errors.InconsistentGroupProtocolError
    no_common = h.join("g1", protocols=(Protocol("roundrobin", subscription("orders")),))
    assert no_common.result().error is Errors.InconsistentGroupProtocolError


def test_join_v3_adds_the_member_without_a_member_id_round_trip() -> None:
    h = Harness()
    joined = h.join("g1", version=3)
    h.coord.tick()
    assert joined.result().error is Errors.NoError
    assert joined.result().generation_id == 1


def test_heartbeat_and_sync_errors() -> None:
    h = Harness()
    assert h.heartbeat("nope", "m", 1) is Errors.UnknownMemberIdError
    assert h.heartbeat("", "m", 1) is Errors.InvalidGroupIdError
    member_id, generation = h.stable_group("g1")
    assert h.heartbeat("g1", member_id, generation + 1) is Errors.IllegalGenerationError
    assert h.heartbeat("g1", "stranger", generation) is Errors.UnknownMemberIdError
    assert h.sync("g1", "stranger", generation).result().error is Errors.UnknownMemberIdError
    assert h.sync("g1", member_id, generation + 1).result().error is Errors.IllegalGenerationError
    assert h.sync("nope", member_id, 1).result().error is Errors.UnknownMemberIdError


def test_leave_group_batch_answers_per_member() -> None:
    h = Harness()
    member_id, _ = h.stable_group("g1")
    response = h.leave("g1", "stranger", member_id)
    assert [(m.member_id, m.error) for m in response.members] == [
        ("stranger", Errors.UnknownMemberIdError),
        (member_id, Errors.NoError),
    ]
    unknown = h.leave("nope", "m")
    assert unknown.error is Errors.NoError and unknown.members[0].error is Errors.UnknownMemberIdError


def test_static_member_rejoining_while_stable_is_replaced_without_a_rebalance() -> None:
    h = Harness()
    joined = h.join("g1", instance_id="pod-0", version=5)  # static members skip MEMBER_ID_REQUIRED
    h.coord.tick()
    old = joined.result()
    assert old.error is Errors.NoError and old.member_id.startswith("pod-0-")
    h.sync("g1", old.member_id, old.generation_id, {old.member_id: assignment(orders=[0])})
    mark = h.mark()
    again = h.join("g1", instance_id="pod-0", version=5)
    new = again.result()
    assert new.error is Errors.NoError and new.member_id != old.member_id
    assert new.generation_id == old.generation_id  # no rebalance
    assert state_of(h, "g1") is GroupState.STABLE
    [record] = h.decoded(mark)
    assert [m["memberId"] for m in record["value"]["members"]] == [new.member_id]
    assert record["value"]["members"][0]["groupInstanceId"] == "pod-0"
    # The old id is fenced.
    fenced = h.coord.heartbeat(
        RequestContext(4), HeartbeatRequest("g1", old.generation_id, old.member_id, "pod-0")
    )
    assert fenced is Errors.FencedInstanceIdError


def test_leave_by_instance_id_removes_a_static_member() -> None:
    h = Harness()
    joined = h.join("g1", instance_id="pod-0", version=5)
    h.coord.tick()
    response = h.coord.leave_group(RequestContext(5), LeaveGroupRequest("g1", (MemberIdentity("", "pod-0"),)))
    assert response.members[0].error is Errors.NoError
    assert joined.result().error is Errors.NoError
    group = h.coord.state.classic_group("g1")
    assert group is not None and not group.members


def test_unloading_answers_waiting_requests_with_not_coordinator() -> None:
    h = Harness()
    h.stable_group("g1")
    waiting = h.join_new_member("g1", client_id="other")  # waits for the first member to rejoin
    h.coord.unload()
    assert waiting.result().error is Errors.NotCoordinatorError
    assert state_of(h, "g1") is GroupState.DEAD
    assert len(h.coord.state.timers) == 0
