"""rules.staleGroups: whole Empty groups as candidates (StaleGroup), counted from when the group became
Empty where the log says so, else from its newest commit; a group-level verdict (every offset alike)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from analysis_reference import analyze_records

from kafka_offsets_model.codec import group_metadata, offset_commit
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from kafka_offsets_model.rules import GroupType, GroupView, OffsetReason, OffsetView, decide, stale_since

H = 3_600_000
D = 24 * H
T0 = 1_700_000_000_000
NOW = T0 + 40 * D
RETENTION = 7 * D
POLICY = parse_policy({"rules": {"staleGroups": {"emptyFor": "30d"}, "deletedTopics": "Delete"},
                       "protect": {"groups": ["keep-*"]}})


def view(**kw: object) -> GroupView:
    base = GroupView("g", GroupType.CLASSIC, "Empty", "consumer", current_state_timestamp=T0, newest_commit_timestamp=T0)
    return replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("group", "since"),
    [
        (view(), T0),  # classic Empty: currentStateTimestamp, whatever was committed later (admin commits)
        (view(current_state_timestamp=T0 + D, newest_commit_timestamp=T0 + 5 * D), T0 + D),
        (view(current_state_timestamp=None, newest_commit_timestamp=T0 + 2 * D), T0 + 2 * D),  # v0/v1 record
        (view(protocol_type="", current_state_timestamp=T0 - D, newest_commit_timestamp=T0 + 3 * D), T0 + 3 * D),
        (view(type=GroupType.CONSUMER, current_state_timestamp=None, newest_commit_timestamp=T0 + 4 * D), T0 + 4 * D),
        (view(newest_commit_timestamp=None), None),
    ],
)
def test_stale_since(group: GroupView, since: int | None) -> None:
    assert stale_since(group) == since


@pytest.mark.parametrize(
    ("group", "reason"),
    [
        (view(), OffsetReason.STALE_GROUP),  # Empty 40 days >= 30d
        (view(current_state_timestamp=T0 + 15 * D), OffsetReason.WITHIN_RETENTION),  # Empty 25 days
        (view(group_id="keep-me"), OffsetReason.PROTECTED),
        (view(state="Stable", subscribed_topics=frozenset({"orders"})), OffsetReason.ACTIVE_SUBSCRIPTION),
        (view(state="Stable", subscribed_topics=frozenset()), OffsetReason.WITHIN_RETENTION),  # not Empty: not stale
        (view(protocol_type="", newest_commit_timestamp=T0 + 20 * D), OffsetReason.WITHIN_RETENTION),
        (view(protocol_type=""), OffsetReason.STALE_GROUP),
    ],
)
def test_verdicts(group: GroupView, reason: OffsetReason) -> None:
    decision = decide(group, OffsetView("orders", 0, 5, T0), POLICY, now_ms=NOW, retention_ms=RETENTION,
                      existing_topics={"orders"})
    assert decision.reason is reason
    assert decision.candidate is (reason is OffsetReason.STALE_GROUP)


def test_a_stale_group_offsets_of_deleted_topics_are_stale_group_too() -> None:
    decision = decide(view(), OffsetView("gone", 0, 5, T0), POLICY, now_ms=NOW, retention_ms=RETENTION,
                      existing_topics={"orders"})
    assert decision.reason is OffsetReason.STALE_GROUP


def test_no_rule_no_stale_group() -> None:
    decision = decide(view(), OffsetView("orders", 0, 5, T0), parse_policy({}), now_ms=NOW, retention_ms=RETENTION,
                      existing_topics={"orders"})
    assert decision.reason is OffsetReason.WITHIN_RETENTION


def test_the_reference_counts_a_simple_group_from_its_newest_commit() -> None:
    """One recent commit keeps a whole simple group from being stale; the classic group is counted from its
    currentStateTimestamp."""
    records = [
        offset_commit("solo", "orders", 0, offset=1, commit_timestamp=T0),
        offset_commit("solo", "orders", 1, offset=1, commit_timestamp=NOW - D),
        offset_commit("old", "orders", 0, offset=1, commit_timestamp=T0),
        offset_commit("old", "orders", 1, offset=1, commit_timestamp=NOW - D),
        group_metadata("old", protocol_type="consumer", generation=3, protocol=None, leader=None,
                       current_state_timestamp=T0),
    ]
    raw = [RawRecord(0, i, T0, k, v) for i, (k, v) in enumerate(records)]
    report = analyze_records(raw, POLICY, now_ms=NOW, retention_ms=RETENTION, existing_topics={"orders"})
    reasons = {(o["group"], o["partition"]): o["reason"] for o in report["offsets"]}
    assert reasons == {("solo", 0): "WithinRetention", ("solo", 1): "WithinRetention",
                       ("old", 0): "StaleGroup", ("old", 1): "StaleGroup"}
    assert report["summary"]["byReason"]["StaleGroup"] == 2


def test_spec_round_trip() -> None:
    assert POLICY.rules.stale_group_ms == 30 * D
    assert POLICY.to_spec()["rules"]["staleGroups"] == {"emptyFor": "30d"}
