"""The OffsetDeletion state machine's decisions, as data in / data out (no doubles, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions import deletion_steps as steps
from kafka_offset_operator.decisions import kafka_answers, status_patch, step_outcomes
from kafka_offset_operator.decisions.conditions import Condition, merge_conditions
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.deletion_steps import DeletionStep
from kafka_offset_operator.model import backups
from kafka_offset_operator.model.offsets import Committed, GroupInfo, Member
from kafka_offsets_model.errors import SpecError

NOW = "2026-01-02T03:04:05Z"
EMPTY = GroupInfo("g", "Empty", "consumer")
GONE = GroupInfo("g", "Dead", error="GROUP_ID_NOT_FOUND")
BUSY = GroupInfo("g", "Stable", "consumer", "range", (Member("m1", "c", "/h", ("orders",)),))


def spec(**extra: Any) -> Any:
    base = {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "topics": [{"name": "orders"}], "approved": True}
    return parse_spec({**base, **extra})


def test_next_step_follows_the_phases() -> None:
    assert steps.next_step(spec(approved=False), {}) is DeletionStep.AWAIT
    assert steps.next_step(spec(), {}) is DeletionStep.BACKUP
    assert steps.next_step(spec(), {"phase": "AwaitingApproval"}) is DeletionStep.BACKUP
    assert steps.next_step(spec(), {"phase": "Running"}) is DeletionStep.DELETE
    assert steps.next_step(spec(), {"phase": "Succeeded"}) is DeletionStep.DONE
    assert steps.next_step(spec(restore=True), {"phase": "PartiallyFailed"}) is DeletionStep.RESTORE
    assert steps.next_step(spec(restore=True), {"phase": "Succeeded", "restoreTime": NOW}) is DeletionStep.DONE
    assert steps.next_step(spec(restore=True), {"phase": "Failed"}) is DeletionStep.DONE  # nothing was deleted


def test_needs_work_keeps_the_timer_only_while_there_is_something_to_do() -> None:
    assert steps.needs_work({"approved": False}, {})
    assert not steps.needs_work({"approved": False}, {"phase": "AwaitingApproval"})
    assert steps.needs_work({"approved": True}, {"phase": "AwaitingApproval"})
    assert steps.needs_work({}, {"phase": "Running"})
    assert not steps.needs_work({}, {"phase": "Succeeded"})
    assert steps.needs_work({"restore": True}, {"phase": "Succeeded"})
    assert not steps.needs_work({"restore": True}, {"phase": "Restored", "restoreTime": NOW})
    waiting = {"phase": "AwaitingApproval", "conditions": [{"type": "Degraded", "status": "True", "reason": "SecretNotFound"}]}
    assert steps.needs_work({"approved": False}, waiting)  # retry until the Secret exists


def record(offsets: dict[Any, Committed], name: str = "offset-backup-x") -> backups.BackupRecord:
    who = backups.Requester("OffsetDeletion", "kafka", "x", "u-1", "approved OffsetDeletion")
    return backups.BackupRecord(name, backups.Action.DELETE, "cid", "k:9092", "g", offsets, who, NOW,
                                "2026-02-01T03:04:05Z")


def test_backup_keeps_what_will_be_deleted_and_settles_the_rest() -> None:
    s = spec(topics=[{"name": "orders"}, {"name": "pay", "partitions": [0, 1]}, {"name": "none"}],
             expectedOffsets=[{"topic": "orders", "partition": 1, "offset": 10}])
    committed = {("orders", 0): Committed(3, 0, "m"), ("orders", 1): Committed(11), ("pay", 0): Committed(5),
                 ("other", 0): Committed(1)}
    result = steps.plan_backup(s, {}, EMPTY, committed, NOW, 7)
    assert result.offsets == {("orders", 0): Committed(3, 0, "m"), ("pay", 0): Committed(5)}
    target = step_outcomes.target_of({"group": "g", "approved": True, "kafka": {"bootstrapServers": "k:9092"}},
                             {"bootstrapServers": "k:9092"}, "cid", "k:9092")
    outcome = steps.backup_taken({}, record(result.offsets), result, target, NOW, 7)
    patch = outcome.status
    assert (patch["phase"], patch["startTime"], patch["observedGeneration"]) == ("Running", NOW, 7)
    assert patch["backup"]["name"] == "offset-backup-x" and patch["backup"]["partitions"] == 2
    assert patch["backup"]["offsets"] == [
        {"topic": "orders", "partition": 0, "offset": 3, "leaderEpoch": 0, "metadata": "m"},
        {"topic": "pay", "partition": 0, "offset": 5, "leaderEpoch": -1, "metadata": ""}]
    assert patch["target"] == {"clusterId": "cid", "bootstrapServers": "k:9092", "group": "g",
                               "kafka": {"bootstrapServers": "k:9092"},
                               "spec": {"group": "g", "kafka": {"bootstrapServers": "k:9092"}}}
    statuses = {(r["topic"], r.get("partition")): r["status"] for r in patch["results"]}
    assert statuses == {("orders", 1): "Skipped", ("pay", 1): "NotCommitted", ("none", None): "NotCommitted"}
    assert [e.reason for e in outcome.events] == ["BackedUp"]


def test_large_backup_is_named_not_copied_and_round_trips() -> None:
    committed = {("orders", p): Committed(p + 1) for p in range(5)}
    result = steps.plan_backup(spec(), {}, EMPTY, committed, NOW, None)
    outcome = steps.backup_taken({}, record(result.offsets), result, {}, NOW, None, inline_limit=3)
    assert "offsets" not in outcome.status["backup"] and outcome.status["backup"]["name"] == "offset-backup-x"
    assert backups.decode(backups.encode(record(result.offsets))) == record(committed)
    with pytest.raises(backups.BackupError):
        backups.decode(b"not gzip")


def test_unknown_group_without_offsets_fails_at_once() -> None:
    outcome = steps.plan_backup(spec(), {}, GONE, {}, NOW, None).group_missing
    assert outcome is not None
    assert outcome.status["phase"] == "Failed"
    assert outcome.status["results"] == [{"topic": "orders", "status": "Failed", "error": "GROUP_ID_NOT_FOUND",
                                          "message": kafka_answers.EXPLAIN["GROUP_ID_NOT_FOUND"]}]


BACKUP = {("orders", 0): Committed(3), ("orders", 1): Committed(4), ("orders", 2): Committed(5)}


def test_deletion_recheck_deletes_only_what_is_unchanged() -> None:
    current = {("orders", 0): Committed(3), ("orders", 1): Committed(8)}  # 1 moved on, 2 is gone
    first = steps.plan_deletion(BACKUP, current, started=False)
    assert first.to_delete == (("orders", 0),)
    assert {(r["partition"], r["status"]) for r in first.results} == {(1, "Skipped"), (2, "NotCommitted")}
    # After a restart with the request possibly sent, a gone offset is ours.
    resumed = steps.plan_deletion(BACKUP, current, started=True)
    assert {(r["partition"], r["status"]) for r in resumed.results} == {(1, "Skipped"), (2, "Deleted")}


def test_the_ready_message_counts_every_outcome() -> None:
    current = {("orders", 0): Committed(3), ("orders", 1): Committed(8)}  # 1 moved on, 2 is gone
    todo = steps.plan_deletion(BACKUP, current, started=False)
    outcome = steps.finish_deletion(spec(), {"phase": "Running"}, todo, {("orders", 0): None}, None, NOW, None)
    ready = next(c for c in outcome.status["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "deleted 1 committed offsets of group g; skipped 1; not committed 1; failed 0"
    assert outcome.events[0].message == ready["message"]


def test_deletion_started_is_written_once() -> None:
    assert steps.deletion_started({}, NOW).status == {"deleteStartTime": NOW}
    assert steps.deletion_started({"deleteStartTime": "earlier"}, NOW).status == {}


@pytest.mark.parametrize(
    ("answers", "top", "phase", "deleted", "failed"),
    [
        ({("orders", 0): None, ("orders", 1): None}, None, "Succeeded", 2, 0),
        ({("orders", 0): None, ("orders", 1): "GROUP_SUBSCRIBED_TO_TOPIC"}, None, "PartiallyFailed", 1, 1),
        ({("orders", 0): "UNKNOWN_TOPIC_OR_PARTITION", ("orders", 1): "GROUP_SUBSCRIBED_TO_TOPIC"}, None, "Failed", 0, 2),
        ({}, "NON_EMPTY_GROUP", "Failed", 0, 2),
    ],
)
def test_finish_deletion_phase_from_kafkas_answers(answers: dict, top: str | None, phase: str, deleted: int,
                                                   failed: int) -> None:
    todo = steps.DeletePlan((("orders", 0), ("orders", 1)), ())
    outcome = steps.finish_deletion(spec(), {"phase": "Running"}, todo, answers, top, NOW, None)
    assert (outcome.status["phase"], outcome.status["deleted"], outcome.status["failed"]) == (phase, deleted, failed)
    errors = {r.get("error") for r in outcome.status["results"]} - {None}
    assert errors == ({top} if top else {e for e in answers.values() if e})
    ready = next(c for c in outcome.status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == ("True" if phase == "Succeeded" else "False")
    assert [e.type for e in outcome.events] == ["Normal" if phase == "Succeeded" else "Warning"]


def test_huge_results_are_summed_per_topic_and_still_restorable() -> None:
    todo = steps.DeletePlan(tuple(("t", p) for p in range(6)), ())
    answers = {("t", p): None for p in range(5)} | {("t", 5): "UNKNOWN_TOPIC_OR_PARTITION"}
    status = steps.finish_deletion(spec(), {}, todo, answers, None, NOW, None, results_limit=4).status
    assert status["deleted"] == 5 and status["failed"] == 1
    assert status["results"][0] == {"topic": "t", "status": "Deleted", "message": "5 partitions deleted", "count": 5}
    backup = {("t", p): Committed(p) for p in range(6)}
    assert steps.deleted_partitions(status, backup) == [("t", p) for p in range(5)]


def test_restore_commits_only_partitions_still_without_an_offset() -> None:
    current = {("orders", 1): Committed(4), ("orders", 2): Committed(9)}
    todo = steps.plan_restore(BACKUP, [("orders", 0), ("orders", 1), ("orders", 2)], current)
    assert todo.to_commit == {("orders", 0): Committed(3)}
    assert {(r["partition"], r["status"]) for r in todo.results} == {(1, "Restored"), (2, "Skipped")}
    done = steps.finish_restore({"phase": "Succeeded"}, todo, {("orders", 0): None}, EMPTY, 30, NOW, None).status
    assert (done["phase"], done["restored"], done["restoreTime"]) == ("Restored", 2, NOW)


def test_restore_blocked_by_members_is_a_condition_and_one_event() -> None:
    first = steps.restore_blocked({"phase": "Succeeded"}, BUSY, 30, NOW, None)
    degraded = next(c for c in first.status["conditions"] if c["type"] == "Degraded")
    assert (degraded["reason"], "phase" in first.status) == ("RestoreBlocked", False)
    assert "1 active member" in degraded["message"] and len(first.events) == 1
    again = steps.restore_blocked(status_patch.merge_patch({"phase": "Succeeded"}, first.status), BUSY, 30, NOW, None)
    assert again.events == ()
    assert not status_patch.changes(status_patch.merge_patch({"phase": "Succeeded"}, first.status), again.status)
    # A member that joined between the check and the commit: UNKNOWN_MEMBER_ID means the same.
    todo = steps.RestorePlan({("orders", 0): Committed(3)}, ())
    racing = steps.finish_restore({"phase": "Succeeded"}, todo, {("orders", 0): "UNKNOWN_MEMBER_ID"}, BUSY, 30, NOW, None)
    assert "phase" not in racing.status


def test_every_busy_group_answer_blocks_the_restore() -> None:
    todo = steps.RestorePlan({("orders", 0): Committed(3)}, ())
    for busy in ("UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"):
        blocked = steps.finish_restore({"phase": "Succeeded"}, todo, {("orders", 0): busy}, BUSY, 30, NOW, None)
        assert [(c["type"], c["reason"]) for c in blocked.status["conditions"]] == [
                ("Degraded", "RestoreBlocked"), ("Reconciling", "RestoreBlocked")]
        assert "phase" not in blocked.status


def test_spec_problem_names_the_field_and_waits_in_pending() -> None:
    outcome = step_outcomes.spec_problem({}, "spec.kafka.sasl.secretRef", "Secret 'x' not found", "SecretNotFound", NOW, 1)
    assert outcome.status["phase"] == "Pending"
    degraded = next(c for c in outcome.status["conditions"] if c["type"] == "Degraded")
    assert degraded["message"] == "spec.kafka.sasl.secretRef: Secret 'x' not found"
    assert steps.settled(status_patch.merge_patch({}, outcome.status), NOW, 1).status["conditions"][1]["status"] == "False"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"group": ""}, "spec.group"),
        ({"group": " padded"}, "spec.group"),
        ({"topics": []}, "spec.topics"),
        ({"topics": [{"name": "bad topic"}]}, "spec.topics[0].name"),
        ({"topics": [{"name": "a"}, {"name": "a"}]}, "spec.topics[1].name"),
        ({"topics": [{"name": "a", "partitions": [0, -1]}]}, "spec.topics[0].partitions[1]"),
        ({"kafka": None}, "spec.kafka"),
        ({"policyRef": {"name": "p"}}, "spec.policyRef"),
        ({"approved": "yes"}, "spec.approved"),
        ({"expectedOffsets": [{"topic": "a", "partition": 0, "offset": -2}]}, "spec.expectedOffsets[0].offset"),
    ],
)
def test_bad_specs_name_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as err:
        spec(**change)
    assert err.value.field == field


def test_conditions_keep_their_transition_time_while_status_holds() -> None:
    first = merge_conditions([], [Condition("Ready", "False", "A", "a")], "t1", 1)
    second = merge_conditions(first, [Condition("Ready", "False", "B", "b")], "t2", 2)
    third = merge_conditions(second, [Condition("Ready", "True", "C", "c")], "t3", 2)
    assert [c["lastTransitionTime"] for c in (first[0], second[0], third[0])] == ["t1", "t1", "t3"]


def test_merge_patch_is_rfc7386() -> None:
    assert status_patch.merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"c": 2}, "l": [2]}
