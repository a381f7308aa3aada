"""Issue 11's rules, second pass: the analysis (reference path, no Spark) reads the sandbox coordinator's own
`__consumer_offsets` log, then the clock advances and the coordinator does what Kafka 4.x does (expiry,
OffsetDelete, DeleteGroups). Each test checks the prediction against what the broker then did.

The coordinator here is the sandbox broker's state machine with an in-memory log (coordinator_harness):
the records are the bytes the broker appends, with the broker clock's timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import kafka.errors as Errors
from analysis_reference import analyze_records
from coordinator_harness import DAY, RETENTION, T0, Harness, kip848_group_records, subscription

from kafka_offsets_model.codec import consumer_group_epoch, encode_key, group_metadata, offset_commit
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from kafka_sandbox.coordinator import CoordinatorConfig
from kafka_sandbox.coordinator.messages import OffsetDeleteRequest
from offset_expiry.analysis import Analysis
from offset_expiry.report import summary
from offset_expiry.table import kind, summary_lines

MINUTE = 60_000
INTERVAL = 10 * MINUTE  # offsets.retention.check.interval.ms, Kafka's default and the harness's


def seed(h: Harness, group: str, records: Sequence[tuple[bytes, bytes | None, int]]) -> None:
    """Records already in the log (as a broker that wrote them earlier): appended and loaded."""
    h.sink.append(h.coord.state.partition_for(group), records)
    h.coord.load(records)


def analyze(
    h: Harness, now_ms: int, policy: Mapping[str, Any] | None = None
) -> dict[tuple[str, str, int], Any]:
    """The reference analysis of the harness's log: results by (group, topic, partition)."""
    records = [RawRecord(p, i, ts, k, v) for i, (p, k, v, ts) in enumerate(h.sink.records)]
    report = analyze_records(
        records,
        parse_policy(policy or {}),
        now_ms=now_ms,
        retention_ms=RETENTION,
        existing_topics=set(h.topics),
    )
    return {(r["group"], r["topic"], r["partition"]): r for r in report["offsets"]}


def tombstone_times(h: Harness, since: int = 0) -> list[int]:
    return [ts for _, _, v, ts in h.sink.records[since:] if v is None]


def offsets_of(h: Harness, group: str) -> set[tuple[str, int]]:
    return {(t, p) for t, p, _ in h.coord.state.offsets.entries(group)}


def commits(group: str, topics: Iterable[str], at: int) -> list[tuple[bytes, bytes | None, int]]:
    return [(*offset_commit(group, topic, 0, offset=1, commit_timestamp=at), at) for topic in topics]


# ---- item 8: sandbox fidelity ----


def test_after_a_clock_jump_the_cleanup_runs_at_the_first_boundary_after_the_offset_is_due() -> None:
    h = Harness()
    h.clock.advance(minutes=1)
    h.commit("standalone", {("orders", 0): 1})  # due at T0 + 1 min + retention: between two boundaries
    [result] = analyze(h, h.clock.now_ms()).values()
    due = result["brokerExpiresAt"]
    assert due == T0 + MINUTE + RETENTION
    h.clock.advance(ms=RETENTION + 5 * INTERVAL)  # five boundaries past the due time at once
    h.coord.tick()
    assert offsets_of(h, "standalone") == set()
    # GroupCoordinatorShard.scheduleGroupMetadataExpiration: every boundary runs, each at its own time,
    # so the offset goes at the first one at or after its due time, within one interval of it.
    assert tombstone_times(h) == [T0 + RETENTION + INTERVAL] * 2  # the offset, then the emptied group
    assert due <= T0 + RETENTION + INTERVAL < due + INTERVAL


def test_a_state_change_between_two_boundaries_is_seen_by_the_runs_after_it() -> None:
    h = Harness()
    member_id, generation = h.stable_group("team", "orders")
    h.commit("team", {("orders", 0): 1}, generation=generation, member_id=member_id)
    h.clock.advance(minutes=1)  # the member stops heartbeating: its session ends 10 s after T0, between runs
    h.coord.tick()
    [r] = analyze(h, h.clock.now_ms()).values()
    assert (r["groupState"], r["brokerExpiresAt"]) == ("Empty", T0 + 10_000 + RETENTION)
    mark = h.mark()
    h.clock.advance(ms=RETENTION + 6 * INTERVAL)
    h.coord.tick()
    # The first run at or after the due time, within one interval of the prediction.
    assert tombstone_times(h, mark) == [T0 + RETENTION + INTERVAL] * 2  # the offset, then the group
    assert r["brokerExpiresAt"] <= T0 + RETENTION + INTERVAL < r["brokerExpiresAt"] + INTERVAL


def test_a_kip848_group_without_a_target_assignment_record_is_stable_at_epoch_zero() -> None:
    h = Harness()
    seed(h, "fresh", kip848_group_records("fresh", {"m1": (["orders"], None)}, epoch=0))
    seed(h, "fresh", commits("fresh", ["orders"], T0))
    # The builder writes a target-assignment epoch; drop it from both sides to get the 0 default.
    h.sink.records = [r for r in h.sink.records if not r[1].startswith(b"\x00\x06")]
    h.coord.state.groups.pop("fresh")
    h.coord.load([(k, v, ts) for _, k, v, ts in h.sink.records])
    [listed] = h.coord.list_groups()
    [result] = analyze(h, T0).values()
    # ModernGroup.targetAssignmentEpoch is a TimelineInteger (0 until a record sets it): members at epoch 0
    # are reconciled, and the group is Stable, not Assigning.
    assert listed.state == result["groupState"] == "Stable"


def test_protocol_type_empty_with_members_is_a_stable_group_that_expires_nothing() -> None:
    h = Harness()
    member = {
        "memberId": "m1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/127.0.0.1",
        "rebalanceTimeout": 30_000,
        "sessionTimeout": 10_000,
        "subscription": subscription("orders"),
        "assignment": b"",
    }
    record = group_metadata(
        "odd",
        protocol_type="",
        generation=1,
        protocol="range",
        leader="m1",
        current_state_timestamp=T0,
        members=[member],
    )
    h.live.add(("odd", "m1"))  # the member keeps heartbeating
    seed(h, "odd", [(*record, T0)])
    seed(h, "odd", commits("odd", ["orders", "audit"], T0))
    results = analyze(h, T0 + RETENTION, {"rules": {"standaloneRetention": "1d"}})
    for topic in ("orders", "audit"):
        r = results[("odd", topic, 0)]
        assert (r["groupState"], r["brokerExpiresAt"], r["candidate"], r["reason"]) == (
            "Stable",
            None,
            False,
            "UnknownSubscription",
        )
    assert kind("classic", "", "Stable") == 'classic/""'  # the table does not call it simple either
    h.clock.advance(ms=RETENTION + INTERVAL)
    assert h.coord.expire_offsets().expired_offsets == []
    assert offsets_of(h, "odd") == {("orders", 0), ("audit", 0)}
    [deleted] = h.coord.delete_groups(["odd"])
    assert deleted.error is Errors.NonEmptyGroupError


def test_protocol_type_empty_without_members_is_a_simple_group() -> None:
    h = Harness()
    record = group_metadata(
        "plain", protocol_type="", generation=0, protocol=None, leader=None, current_state_timestamp=T0
    )
    seed(h, "plain", [(*record, T0)])
    seed(h, "plain", commits("plain", ["orders"], T0))
    [r] = analyze(h, T0 + DAY, {"rules": {"standaloneRetention": "1d"}}).values()
    assert (r["brokerExpiresAt"], r["candidate"], r["reason"]) == (T0 + RETENTION, True, "Standalone")
    response = h.coord.delete_offsets(OffsetDeleteRequest("plain", (("orders", (0,)),)))
    assert response.topics[0].partitions[0].error is Errors.NoError


# ---- item 4: when a group became Empty ----


def last_member_leaves(group: str, member: str, epoch: int) -> list[tuple[bytes, bytes | None]]:
    """What GroupMetadataManager.consumerGroupFenceMember writes for the last member (Kafka 4.x): the
    member's tombstones (current assignment, target assignment, subscription), then the bumped epoch."""
    member_key = {"GroupId": group, "MemberId": member}
    return [
        (encode_key("ConsumerGroupCurrentMemberAssignment", member_key), None),
        (encode_key("ConsumerGroupTargetAssignmentMember", member_key), None),
        (encode_key("ConsumerGroupMemberMetadata", member_key), None),
        consumer_group_epoch(group, epoch + 1),
    ]


def test_a_kip848_group_counts_empty_group_retention_from_its_last_member_leaving() -> None:
    h = Harness()
    policy = {"rules": {"emptyGroupRetention": "1d"}}
    seed(h, "modern", kip848_group_records("modern", {"m1": (["orders"], None)}, epoch=5))
    seed(h, "modern", commits("modern", ["orders"], T0))
    left = T0 + 5 * DAY
    seed(h, "modern", [(k, v, left) for k, v in last_member_leaves("modern", "m1", 5)])
    h.clock.advance(ms=5 * DAY + MINUTE)
    [listed] = h.coord.list_groups()
    assert listed.state == "Empty"

    # A minute after it emptied, four days after the commit: not yet a candidate (the broker's own expiry
    # still counts from the commit, ConsumerGroup.offsetExpirationCondition).
    [r] = analyze(h, h.clock.now_ms(), policy).values()
    assert (r["groupState"], r["candidate"], r["reason"]) == ("Empty", False, "WithinRetention")
    assert r["brokerExpiresAt"] == T0 + RETENTION
    [r] = analyze(h, left + DAY - 1, policy).values()
    assert r["reason"] == "WithinRetention"
    [r] = analyze(h, left + DAY, policy).values()
    assert (r["candidate"], r["reason"]) == (True, "EmptyGroup")
    # Proposed, it is accepted: an Empty KIP-848 group's offsets can be deleted.
    response = h.coord.delete_offsets(OffsetDeleteRequest("modern", (("orders", (0,)),)))
    assert response.topics[0].partitions[0].error is Errors.NoError


def test_the_broker_expires_a_kip848_groups_offsets_from_the_commit_as_predicted() -> None:
    h = Harness()
    seed(h, "modern", kip848_group_records("modern", {"m1": (["orders"], None)}, epoch=5))
    seed(h, "modern", commits("modern", ["orders"], T0))
    seed(h, "modern", [(k, v, T0 + 5 * DAY) for k, v in last_member_leaves("modern", "m1", 5)])
    [r] = analyze(h, T0 + 5 * DAY, {"rules": {"emptyGroupRetention": "1d"}}).values()
    h.clock.advance(ms=r["brokerExpiresAt"] - T0 - 1)
    assert h.coord.expire_offsets().expired_offsets == []
    h.clock.advance(ms=1)
    assert h.coord.expire_offsets().expired_offsets == [("modern", "orders", 0)]


def test_a_classic_group_counts_empty_group_retention_from_its_state_timestamp_too() -> None:
    h = Harness()
    member_id, generation = h.stable_group("classic", "orders")
    h.commit("classic", {("orders", 0): 1}, generation=generation, member_id=member_id)
    h.live.add(("classic", member_id))  # it heartbeats until it leaves
    h.clock.advance(days=5)
    h.leave("classic", member_id)
    left = h.clock.now_ms()
    [r] = analyze(h, left + DAY - 1, {"rules": {"emptyGroupRetention": "1d"}}).values()
    assert (r["groupState"], r["reason"], r["brokerExpiresAt"]) == (
        "Empty",
        "WithinRetention",
        left + RETENTION,
    )
    [r] = analyze(h, left + DAY, {"rules": {"emptyGroupRetention": "1d"}}).values()
    assert r["reason"] == "EmptyGroup"


# ---- item 5: the cleanup window ----


def test_every_offset_goes_within_one_check_interval_of_its_predicted_expiry() -> None:
    interval = 2 * MINUTE
    h = Harness(config=CoordinatorConfig(offsets_partitions=4, offsets_retention_check_interval_ms=interval))
    for i in range(5):  # commits 37 s apart: due times fall anywhere between two cleanup runs
        h.clock.advance(seconds=37)
        h.commit(f"standalone-{i}", {("orders", 0): 1})
    predicted = {g: r["brokerExpiresAt"] for (g, _, _), r in analyze(h, h.clock.now_ms()).items()}
    mark = h.mark()
    h.clock.advance(ms=RETENTION + 3 * interval)
    h.coord.tick()
    gone = {
        rec["key"]["group"]: ts
        for rec, (_, _, v, ts) in zip(h.decoded(mark), h.sink.records[mark:], strict=True)
        if v is None and rec["type"] == "OffsetCommit"
    }
    assert gone.keys() == predicted.keys()
    for group, due in predicted.items():
        assert due <= gone[group] < due + interval, (group, due, gone[group])


def test_the_report_gives_the_cleanup_window() -> None:
    report = {
        "summary": summary(records_scanned=1, groups=1, reasons={}, skipped_records=0, snapshot={}),
        "offsets": [],
    }
    read = Analysis(report, T0, RETENTION, 120_000, True).as_json_report()["summary"]
    assert (read["brokerCheckIntervalMs"], read["brokerCheckIntervalSource"]) == (120_000, "broker")
    assumed = Analysis(report, T0, RETENTION).as_json_report()["summary"]
    assert (assumed["brokerCheckIntervalMs"], assumed["brokerCheckIntervalSource"]) == (600_000, "default")
    assert "within 2m after that (offsets.retention.check.interval.ms)" in summary_lines(read)[-1]
    assert "Kafka's default" in summary_lines(assumed)[-1]


# ---- item 6: a static member re-joins with another subscription in the same generation ----


def test_a_static_member_rejoining_with_another_subscription_is_treated_conservatively() -> None:
    h = Harness()
    policy = {"rules": {"unsubscribedTopicRetention": "1h"}}
    joined = h.join("static", topics=("orders",), instance_id="i-1")  # static: no MEMBER_ID_REQUIRED
    h.coord.tick()
    first = joined.result()
    assert first.error is Errors.NoError
    h.sync("static", first.member_id, first.generation_id, {first.member_id: subscription()})
    h.commit(
        "static",
        {("orders", 0): 1, ("payments", 0): 1},
        generation=first.generation_id,
        member_id=first.member_id,
    )
    # The same instance re-joins (new member id) subscribed to payments, with the same protocol: Kafka
    # stores the new member in a record of the same generation and keeps expiring by the subscription
    # computed when the generation started (orders).
    rejoined = h.join("static", instance_id="i-1", topics=("payments",)).result()
    assert (rejoined.error, rejoined.generation_id) == (Errors.NoError, first.generation_id)
    h.live.add(("static", rejoined.member_id))
    now = h.clock.now_ms()
    results = analyze(h, now + DAY, policy)
    for topic in ("orders", "payments"):
        r = results[("static", topic, 0)]
        # Either record may be what the broker holds: "may expire by commit time", never "never", and
        # never proposed.
        assert (r["groupState"], r["candidate"], r["reason"]) == ("Stable", False, "UnknownSubscription")
        assert r["brokerExpiresAt"] == now + RETENTION
    # What the broker then does: payments (unsubscribed for it) goes when predicted; orders stays.
    h.clock.advance(ms=RETENTION - 1)
    assert h.coord.expire_offsets().expired_offsets == []
    h.clock.advance(ms=1)
    assert h.coord.expire_offsets().expired_offsets == [("static", "payments", 0)]
    assert offsets_of(h, "static") == {("orders", 0)}
    # And OffsetDelete still refuses the topic the broker counts as subscribed.
    response = h.coord.delete_offsets(OffsetDeleteRequest("static", (("orders", (0,)),)))
    assert response.topics[0].partitions[0].error is Errors.GroupSubscribedToTopicError


def test_one_subscription_per_generation_leaves_the_analysis_as_sure_as_before() -> None:
    h = Harness()
    member_id, generation = h.stable_group("plain", "orders")
    h.commit("plain", {("orders", 0): 1, ("payments", 0): 1}, generation=generation, member_id=member_id)
    results = analyze(h, h.clock.now_ms() + DAY, {"rules": {"unsubscribedTopicRetention": "1h"}})
    assert (
        results[("plain", "orders", 0)]["reason"],
        results[("plain", "orders", 0)]["brokerExpiresAt"],
    ) == (
        "ActiveSubscription",
        None,
    )
    assert results[("plain", "payments", 0)]["reason"] == "UnsubscribedTopic"
