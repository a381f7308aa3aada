"""Whole-group deletion (DeleteGroups) as plain decisions: the OffsetDeletion's backup, live re-check and
results with spec.deleteGroup, and which policy candidates become group deletions (staleGroups, and
deletedTopics where OffsetDelete cannot work)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions import deletion_steps as steps
from kafka_offset_operator.decisions import proposals as P
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.policy_spec import Mode
from kafka_offset_operator.model.offsets import Committed, GroupInfo, Member
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy import Protection

NOW = "2026-01-02T03:04:05Z"
EMPTY = GroupInfo("g", "Empty", "consumer")
GONE = GroupInfo("g", "Dead", error="GROUP_ID_NOT_FOUND")
BUSY = GroupInfo("g", "Stable", "consumer", "range", (Member("m1", "c", "/h", ("orders",)),))
OFFSETS = {("orders", 0): Committed(5), ("orders", 1): Committed(7)}


def spec(**extra: Any) -> Any:
    base = {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "topics": [{"name": "orders"}], "approved": True,
            "deleteGroup": True}
    return parse_spec({**base, **extra})


# -- the OffsetDeletion


def test_require_topics_deleted_needs_delete_group() -> None:
    with pytest.raises(SpecError) as err:
        spec(deleteGroup=False, requireTopicsDeleted=True)
    assert err.value.field == "spec.requireTopicsDeleted"


def test_the_backup_holds_every_offset_of_the_group() -> None:
    plan = steps.plan_group_backup(spec(), {}, EMPTY, OFFSETS, None, NOW, 1)
    assert plan.group_missing is None and plan.offsets == OFFSETS and plan.results == ()


@pytest.mark.parametrize(
    ("kwargs", "group", "committed", "backup", "topics", "says"),
    [
        ({}, BUSY, OFFSETS, None, None, "1 member(s) now"),
        ({}, EMPTY, {}, None, None, "no committed offsets"),
        ({}, EMPTY, {**OFFSETS, ("payments", 0): Committed(1)}, None, None, "not in spec.topics (payments)"),
        ({"expectedOffsets": [{"topic": "orders", "partition": 0, "offset": 5}]}, EMPTY, OFFSETS, None, None,
         "committed since the scan (orders-1)"),
        ({}, EMPTY, {**OFFSETS, ("orders", 1): Committed(8)}, OFFSETS, None, "changed since the backup (orders-1)"),
        ({"requireTopicsDeleted": True}, EMPTY, OFFSETS, OFFSETS, frozenset({"orders"}), "exist(s) (again)"),
    ],
)
def test_the_live_recheck_names_why_delete_groups_is_not_sent(
        kwargs: dict[str, Any], group: GroupInfo, committed: Any, backup: Any, topics: Any, says: str) -> None:
    problem = steps.group_deletion_problem(spec(**kwargs), group, committed, backup, topics)
    assert problem is not None and says in problem


def test_the_live_recheck_passes_for_an_unchanged_empty_group() -> None:
    assert steps.group_deletion_problem(spec(requireTopicsDeleted=True), EMPTY, OFFSETS, OFFSETS,
                                        frozenset({"payments"})) is None
    assert steps.group_deletion_problem(spec(), GONE, OFFSETS, OFFSETS, None) is None  # KIP-848: Kafka decides


def test_a_changed_group_is_not_deleted_final_and_says_why() -> None:
    plan = steps.plan_group_backup(spec(), {}, BUSY, OFFSETS, None, NOW, 1)
    assert plan.group_missing is not None
    status = plan.group_missing.status
    assert status["phase"] == "Failed" and status["deleted"] == 0
    assert status["groupResult"]["status"] == "Skipped" and "member" in status["groupResult"]["message"]
    assert {r["status"] for r in status["results"]} == {"Skipped"}
    assert [c["reason"] for c in status["conditions"] if c["type"] == "Ready"] == ["GroupChanged"]
    assert [e.reason for e in plan.group_missing.events] == ["GroupChanged"]


def test_delete_groups_answers_become_the_group_result_and_every_partition_result() -> None:
    done = steps.finish_group_deletion(spec(), {"phase": "Running"}, OFFSETS, None, NOW, 1).status
    assert (done["phase"], done["deleted"], done["failed"]) == ("Succeeded", 2, 0)
    assert done["groupResult"]["status"] == "Deleted"
    assert steps.deleted_partitions(done, OFFSETS) == sorted(OFFSETS)  # restore re-commits them all
    assert steps.next_step(spec(restore=True), done) is steps.DeletionStep.RESTORE
    refused = steps.finish_group_deletion(spec(), {"phase": "Running"}, OFFSETS, "NON_EMPTY_GROUP", NOW, 1).status
    assert (refused["phase"], refused["deleted"], refused["failed"]) == ("Failed", 0, 2)
    assert refused["groupResult"]["error"] == "NON_EMPTY_GROUP"
    assert {r["error"] for r in refused["results"]} == {"NON_EMPTY_GROUP"}


# -- the policy's proposals


def proposal(reasons: dict[tuple[str, int], str], group_type: str = "classic") -> P.Proposal:
    return P.Proposal("g", group_type, {tp: 5 for tp in reasons}, reasons, None)


LIVE = {("orders", 0): Committed(5), ("orders", 1): Committed(5)}
STALE = {("orders", 0): "StaleGroup", ("orders", 1): "StaleGroup"}
NOBODY = Protection()


def test_a_stale_group_becomes_one_group_deletion() -> None:
    result = P.recheck(proposal(STALE), EMPTY, LIVE, NOBODY, frozenset({"orders"}))
    assert result.proposal is not None and result.proposal.delete_group
    assert not result.proposal.require_topics_deleted and result.skipped == ()
    child = P.child_manifest({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}, result.proposal,
                             Mode.APPROVE, 0)
    assert child["spec"]["deleteGroup"] is True and "requireTopicsDeleted" not in child["spec"]
    assert P.child_name("p", result.proposal) != P.child_name("p", proposal(STALE))


@pytest.mark.parametrize(
    ("group", "live", "why"),
    [
        (BUSY, LIVE, P.GROUP_ACTIVE),
        (EMPTY, {**LIVE, ("audit", 0): Committed(1)}, P.OTHER_OFFSETS),
        (EMPTY, {**LIVE, ("orders", 1): Committed(9)}, P.COMMITTED_SINCE_SCAN),
    ],
)
def test_a_stale_group_that_changed_is_not_proposed(group: GroupInfo, live: Any, why: str) -> None:
    result = P.recheck(proposal(STALE), group, live, NOBODY, frozenset({"orders"}))
    assert result.proposal is None and {s.why for s in result.skipped} == {why}


def test_deleted_topics_all_an_empty_group_has_become_a_group_deletion_with_the_topics_rechecked() -> None:
    reasons = {("gone", 0): "DeletedTopic", ("gone", 1): "DeletedTopic"}
    live = {("gone", 0): Committed(5), ("gone", 1): Committed(5)}
    result = P.recheck(proposal(reasons), EMPTY, live, NOBODY, frozenset({"orders"}))
    assert result.proposal is not None and result.proposal.delete_group and result.proposal.require_topics_deleted
    child = P.child_manifest({"metadata": {"name": "p", "namespace": "ns"}}, result.proposal, Mode.AUTO, 0)
    assert child["spec"]["requireTopicsDeleted"] is True and child["spec"]["approved"] is True
    again = P.recheck(proposal(reasons), EMPTY, live, NOBODY, frozenset({"gone"}))  # re-created since the scan
    assert again.proposal is None and {s.why for s in again.skipped} == {P.DELETED_TOPIC_REPORT_ONLY}


def test_deleted_topics_of_a_group_with_other_offsets_are_reported_and_the_rest_proposed() -> None:
    reasons = {("gone", 0): "DeletedTopic", ("orders", 0): "EmptyGroup"}
    live = {("gone", 0): Committed(5), ("orders", 0): Committed(5), ("orders", 1): Committed(3)}
    result = P.recheck(proposal(reasons), EMPTY, live, NOBODY, frozenset({"orders"}))
    assert [(s.topic, s.why) for s in result.skipped] == [("gone", P.DELETED_TOPIC_REPORT_ONLY)]
    assert result.proposal is not None and not result.proposal.delete_group
    assert set(result.proposal.offsets) == {("orders", 0)}


def test_deleted_topics_of_a_group_with_members_are_reported() -> None:
    reasons = {("gone", 0): "DeletedTopic"}
    result = P.recheck(proposal(reasons), BUSY, {("gone", 0): Committed(5)}, NOBODY, frozenset({"orders"}))
    assert result.proposal is None and [s.why for s in result.skipped] == [P.DELETED_TOPIC_REPORT_ONLY]
