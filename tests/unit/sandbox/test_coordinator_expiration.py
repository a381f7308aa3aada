"""The expiration task (KIP-211 / KIP-496) on the state machine, per group kind, with the exact
inclusive boundary `now - base >= retention` (OffsetExpirationConditionImpl) and the tombstones
Kafka 4.x writes (cleanupExpiredOffsets + cleanupGroupMetadata)."""

from __future__ import annotations

import kafka.errors as Errors
from coordinator_harness import DAY, RETENTION, T0, Harness, kip848_group_records

from kafka_offsets_model.codec import offset_commit, share_group, streams_group, streams_group_topology
from kafka_sandbox.coordinator.classic import GroupState
from kafka_sandbox.coordinator.messages import OffsetDeleteRequest, Protocol


def offsets_of(h: Harness, group: str) -> set[tuple[str, int]]:
    return {(t, p) for t, p, _ in h.coord.state.offsets.entries(group)}


def empty_consumer_group(h: Harness, group: str, offsets: dict[tuple[str, int], int]) -> int:
    """A consumer group that committed and then left: returns its currentStateTimestamp."""
    member_id, generation = h.stable_group(group, "orders")
    h.commit(group, offsets, generation=generation, member_id=member_id)
    h.clock.advance(hours=1)
    h.leave(group, member_id)
    state = h.coord.state.classic_group(group)
    assert state is not None and state.state is GroupState.EMPTY and state.current_state_timestamp is not None
    return state.current_state_timestamp


def test_empty_group_expires_from_its_state_timestamp_then_is_deleted() -> None:
    h = Harness()
    became_empty = empty_consumer_group(h, "g1", {("orders", 0): 1, ("payments", 0): 2})
    h.clock.advance(ms=became_empty + RETENTION - 1 - h.clock.now_ms())
    assert h.coord.expire_offsets().expired_offsets == []
    h.clock.advance(ms=1)
    mark = h.mark()
    report = h.coord.expire_offsets()
    assert sorted(report.expired_offsets) == [("g1", "orders", 0), ("g1", "payments", 0)]
    assert report.deleted_groups == ["g1"]
    assert h.summary(mark) == [
        ("OffsetCommit", "g1", "orders", 0, True),
        ("OffsetCommit", "g1", "payments", 0, True),
        ("GroupMetadata", "g1", True),
    ]
    assert h.coord.list_groups() == []


def test_admin_recommit_does_not_postpone_an_empty_classic_group() -> None:
    h = Harness()
    became_empty = empty_consumer_group(h, "g1", {("orders", 0): 1})
    h.clock.advance(days=6)
    assert h.commit("g1", {("orders", 0): 1, ("audit", 0): 3}) == {
        ("orders", 0): Errors.NoError,
        ("audit", 0): Errors.NoError,
    }
    h.clock.advance(ms=became_empty + RETENTION - h.clock.now_ms())
    report = h.coord.expire_offsets()
    assert sorted(report.expired_offsets) == [("g1", "audit", 0), ("g1", "orders", 0)]


def test_simple_group_expires_by_commit_timestamp_and_a_recommit_postpones_it() -> None:
    h = Harness()
    h.commit("standalone", {("orders", 0): 1, ("orders", 1): 1})
    h.clock.advance(days=6)
    h.commit("standalone", {("orders", 1): 2})
    h.clock.advance(days=1)
    report = h.coord.expire_offsets()
    assert report.expired_offsets == [("standalone", "orders", 0)]
    assert report.deleted_groups == []
    h.clock.advance(days=6)
    report = h.coord.expire_offsets()
    assert report.expired_offsets == [("standalone", "orders", 1)]
    assert report.deleted_groups == ["standalone"]  # even a group that never had a GroupMetadata record


def test_stable_consumer_group_keeps_subscribed_offsets_and_loses_unsubscribed_ones() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1", "orders")
    h.commit("g1", {("orders", 0): 1, ("payments", 0): 2}, generation=generation, member_id=member_id)
    h.live.add(("g1", member_id))  # the client keeps heartbeating through the jump
    h.clock.advance(ms=RETENTION - 1)
    assert h.coord.expire_offsets().expired_offsets == []
    h.clock.advance(ms=1)
    report = h.coord.expire_offsets()
    assert report.expired_offsets == [("g1", "payments", 0)]
    assert report.deleted_groups == []
    assert offsets_of(h, "g1") == {("orders", 0)}


def test_rebalancing_groups_and_active_non_consumer_groups_expire_nothing() -> None:
    h = Harness()
    member_id, generation = h.stable_group("g1", "orders")
    h.commit("g1", {("payments", 0): 2}, generation=generation, member_id=member_id)
    h.join_new_member("g1", client_id="other")  # PreparingRebalance from now on
    joined = h.join("connect", version=3, protocol_type="connect", protocols=(Protocol("default", b"\x00"),))
    h.coord.tick()
    c = joined.result()
    h.sync("connect", c.member_id, c.generation_id)
    h.commit("connect", {("audit", 0): 1}, generation=c.generation_id, member_id=c.member_id)
    h.live.update({("g1", member_id), ("connect", c.member_id)})
    h.clock.advance(ms=RETENTION + 1)
    # Expire directly, before the timers: what matters here is the states, not the timeouts.
    report = h.coord.offsets.cleanup()
    assert report.expired_offsets == []


def test_explicit_expire_timestamp_wins() -> None:
    h = Harness()
    h.commit("g1", {("orders", 0): 1}, version=3, retention_ms=DAY)
    h.commit("g1", {("orders", 1): 1})
    h.clock.advance(ms=DAY)
    assert h.coord.expire_offsets().expired_offsets == [("g1", "orders", 0)]


def test_the_periodic_task_runs_every_check_interval_of_broker_time() -> None:
    h = Harness()
    h.commit("standalone", {("orders", 0): 1})
    h.clock.advance(ms=RETENTION)  # retention passed at T0 + 7d; the task is due every 10 minutes
    h.coord.tick()
    assert offsets_of(h, "standalone") == set()
    tombstones = [ts for _, _, v, ts in h.sink.records if v is None]
    assert tombstones == [T0 + RETENTION, T0 + RETENTION]  # offset, then the emptied group


def test_topic_deletion_deletes_its_offsets_in_every_group() -> None:
    h = Harness()
    h.commit("a", {("orders", 0): 1, ("payments", 0): 1})
    h.commit("b", {("orders", 1): 1})
    mark = h.mark()
    assert h.coord.on_topics_deleted(["orders"]) == 2
    assert sorted(h.summary(mark)) == [
        ("OffsetCommit", "a", "orders", 0, True),
        ("OffsetCommit", "b", "orders", 1, True),
    ]
    assert offsets_of(h, "a") == {("payments", 0)}


def test_kip848_group_expires_by_commit_time_outside_names_and_resolved_regexes() -> None:
    h = Harness()
    h.coord.load(
        kip848_group_records(
            "modern", {"m1": (["orders"], None), "m2": ([], "pay.*")}, {"pay.*": ["payments"]}
        )
    )
    # Admin commits are refused while members exist, so the offsets are seeded as records too.
    assert h.commit("modern", {("orders", 0): 1}) == {("orders", 0): Errors.UnknownMemberIdError}
    h.coord.load(
        [
            (*offset_commit("modern", topic, 0, offset=1, commit_timestamp=T0), T0)
            for topic in ("orders", "payments", "audit")
        ]
    )
    h.clock.advance(ms=RETENTION)
    report = h.coord.offsets.cleanup()
    assert report.expired_offsets == [("modern", "audit", 0)]
    assert report.deleted_groups == []
    error = h.coord.delete_offsets(OffsetDeleteRequest("modern", (("payments", (0,)), ("audit", (0,)))))
    assert error.error is Errors.NoError
    assert [(t.name, t.partitions[0].error) for t in error.topics] == [
        ("payments", Errors.GroupSubscribedToTopicError),
        ("audit", Errors.NoError),
    ]
    [listed] = h.coord.list_groups()
    assert (listed.group_type, listed.protocol_type, listed.state) == ("consumer", "consumer", "Stable")
    [described] = h.coord.describe_groups(["modern"], api_version=6)
    assert (described.state, described.error) == ("Dead", Errors.GroupIdNotFoundError)
    assert [r.error for r in h.coord.delete_groups(["modern"])] == [Errors.NonEmptyGroupError]


def test_empty_kip848_group_accepts_admin_commits_and_is_deleted_with_its_tombstones() -> None:
    h = Harness()
    h.coord.load(kip848_group_records("modern", {}, {}, epoch=3))
    assert h.commit("modern", {("orders", 0): 1}) == {("orders", 0): Errors.NoError}
    h.clock.advance(ms=RETENTION)
    mark = h.mark()
    report = h.coord.offsets.cleanup()
    assert report.deleted_groups == ["modern"]
    assert h.summary(mark) == [
        ("OffsetCommit", "modern", "orders", 0, True),
        ("ConsumerGroupTargetAssignmentMetadata", "modern", True),
        ("ConsumerGroupPartitionMetadata", "modern", True),
        ("ConsumerGroupMetadata", "modern", True),
    ]


def streams_records(members: list[str]) -> list[tuple[bytes, bytes | None, int]]:
    topology = streams_group_topology("app", source_topics=["orders"], repartition_source_topics=["app-rep"])
    records = [(*r, T0) for r in streams_group("app", members, topology)]
    return records + [
        (*offset_commit("app", topic, 0, offset=1, commit_timestamp=T0), T0)
        for topic in ("orders", "app-rep", "audit")
    ]


def test_a_live_streams_group_keeps_its_source_topics_and_expires_the_rest_by_commit_time() -> None:
    """StreamsGroup.isSubscribedToTopic / offsetExpirationCondition (Kafka 4.1+)."""
    h = Harness()
    h.topics["app-rep"] = 1
    h.coord.load(streams_records(["m1"]))
    [listed] = h.coord.list_groups()
    assert (listed.group_type, listed.protocol_type, listed.state) == ("streams", "streams", "Stable")
    h.clock.advance(ms=RETENTION - 1)
    assert h.coord.offsets.cleanup().expired_offsets == []
    h.clock.advance(ms=1)
    report = h.coord.offsets.cleanup()
    assert (report.expired_offsets, report.deleted_groups) == ([("app", "audit", 0)], [])
    deleted = h.coord.delete_offsets(OffsetDeleteRequest("app", (("orders", (0,)), ("app-rep", (0,)))))
    assert [(t.name, t.partitions[0].error) for t in deleted.topics] == [
        ("orders", Errors.GroupSubscribedToTopicError),
        ("app-rep", Errors.GroupSubscribedToTopicError),
    ]
    assert [r.error for r in h.coord.delete_groups(["app"])] == [Errors.NonEmptyGroupError]


def test_an_empty_streams_group_expires_everything_and_is_deleted_with_its_tombstones() -> None:
    h = Harness()
    h.coord.load(streams_records([]))
    h.clock.advance(ms=RETENTION)
    mark = h.mark()
    report = h.coord.offsets.cleanup()
    assert len(report.expired_offsets) == 3 and report.deleted_groups == ["app"]
    assert h.summary(mark)[3:] == [
        ("StreamsGroupTargetAssignmentMetadata", "app", True),
        ("StreamsGroupMetadata", "app", True),
        ("StreamsGroupTopology", "app", True),
    ]


def test_an_empty_share_group_without_offsets_schedules_no_cleanup() -> None:
    """cleanup() skips share groups (ShareGroup.shouldExpire is false), so next_due must not call one
    due: an Empty share group without offsets would make the cleanup run at every interval."""
    h = Harness()
    h.coord.load([(*r, T0) for r in share_group("sharers", [])])
    assert h.coord.offsets.next_due() is None
    assert h.coord.offsets.cleanup().deleted_groups == []


def test_a_share_group_is_never_expired_and_refuses_offset_apis() -> None:
    """ShareGroup.shouldExpire is false; validateOffsetCommit/Fetch/Delete throw GroupIdNotFound."""
    h = Harness()
    h.coord.load([(*r, T0) for r in share_group("sharers", [])])
    h.coord.load([(*offset_commit("sharers", "orders", 0, offset=1, commit_timestamp=T0), T0)])
    h.clock.advance(days=100)
    report = h.coord.offsets.cleanup()
    assert (report.expired_offsets, report.deleted_groups) == ([], [])
    assert h.coord.offsets.next_due() is None  # nothing to do: the cleanup runs on no schedule for it
    [listed] = h.coord.list_groups()
    assert (listed.group_type, listed.state) == ("share", "Empty")
    assert h.commit("sharers", {("orders", 0): 2}) == {("orders", 0): Errors.GroupIdNotFoundError}
    deleted = h.coord.delete_offsets(OffsetDeleteRequest("sharers", (("orders", (0,)),)))
    assert deleted.error is Errors.GroupIdNotFoundError
