"""The OffsetReset state machine's decisions (decisions/reset_steps.py, reset_spec.py), as data in / data out:
no doubles, no I/O."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kafka_offset_operator.decisions import reset_steps as steps
from kafka_offset_operator.decisions.conditions import find
from kafka_offset_operator.decisions.reset_plan import LogRange, parse_target, plan_reset
from kafka_offset_operator.decisions.reset_spec import parse_reset_spec
from kafka_offset_operator.decisions.reset_steps import ResetStep
from kafka_offset_operator.model.backups import Action, BackupRecord, Requester
from kafka_offset_operator.model.offsets import Committed, GroupInfo, Member
from kafka_offsets_model.errors import SpecError

NOW = "2026-01-02T03:04:05Z"
EMPTY = GroupInfo("g", "Empty", "consumer")
BUSY = GroupInfo("g", "Stable", "consumer", "range", (Member("m1", "billing-app", "/10.0.0.7", ("orders",)),
                                                      Member("m2", "", "/10.0.0.8", ("orders",))))
ORDERS = {("orders", 0): LogRange(2, 10), ("orders", 1): LogRange(0, 4)}


def raw_spec(**extra: Any) -> dict[str, Any]:
    return {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "allTopics": True, "target": {"earliest": True},
            **extra}


def plan(target: dict[str, Any], committed: dict[tuple[str, int], int]) -> Any:
    current = {tp: Committed(o) for tp, o in committed.items()}
    return plan_reset("g", parse_target(target), sorted(ORDERS), current, ORDERS)


def cond(patch: dict[str, Any], kind: str) -> dict[str, Any]:
    return dict(find(patch.get("conditions"), kind) or {})


# -- the spec


def test_the_spec_is_read_with_the_reset_commands_target_and_scope() -> None:
    spec = parse_reset_spec(raw_spec(target={"shiftBy": -5}, topics=[{"name": "orders", "partitions": [1, 0]}],
                                     allTopics=None))
    assert (spec.group, spec.target.shift_by, spec.scope.all_topics, spec.approved) == ("g", -5, False, False)
    assert spec.scope.topics[0].partitions == (0, 1)


@pytest.mark.parametrize(("spec", "field"), [
    (raw_spec(target={}), "spec.target"),
    (raw_spec(target={"earliest": True, "latest": True}), "spec.target"),
    (raw_spec(target={"datetime": "yesterday"}), "spec.target.datetime"),
    (raw_spec(target={"fromBackup": "other-ns/backup"}), "spec.target.fromBackup"),
    (raw_spec(group=" g"), "spec.group"),
    ({k: v for k, v in raw_spec().items() if k != "allTopics"}, "spec.topics"),
    (raw_spec(topics=[{"name": "orders"}]), "spec.topics"),
])
def test_a_bad_spec_names_its_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_reset_spec({k: v for k, v in spec.items() if v is not None})
    assert err.value.field.startswith(field), err.value


# -- where are we


def test_next_step_plans_once_per_generation_then_waits_for_approval() -> None:
    assert steps.next_step(False, {}, 1) is ResetStep.PLAN
    planned = {"phase": "AwaitingApproval", "plan": {"observedGeneration": 1}}
    assert steps.next_step(False, planned, 1) is ResetStep.AWAIT
    assert steps.next_step(False, planned, 2) is ResetStep.PLAN  # the spec changed: a new dry run
    assert steps.next_step(True, planned, 2) is ResetStep.BACKUP
    assert steps.next_step(True, {"phase": "Pending"}, 2) is ResetStep.BACKUP
    assert steps.next_step(True, {"phase": "Running"}, 2) is ResetStep.COMMIT
    for phase in steps.FINAL:
        assert steps.next_step(True, {"phase": phase}, 2) is ResetStep.DONE


def test_needs_work_stops_the_timer_once_the_dry_run_is_shown_and_when_done() -> None:
    planned = {"phase": "AwaitingApproval", "plan": {"observedGeneration": 1}}
    assert steps.needs_work(raw_spec(), {}, 1)
    assert not steps.needs_work(raw_spec(), planned, 1)
    assert steps.needs_work(raw_spec(), planned, 2)
    assert steps.needs_work(raw_spec(approved=True), planned, 1)
    assert steps.needs_work(raw_spec(approved=True), {"phase": "Running"}, 1)
    assert not steps.needs_work(raw_spec(approved=True), {"phase": "Succeeded"}, 1)
    invalid = {"phase": "Pending", "observedGeneration": 1, "conditions": [
        {"type": "Degraded", "status": "True", "reason": "InvalidSpec", "message": "spec.group: bad"}]}
    assert not steps.needs_work(raw_spec(), invalid, 1) and steps.needs_work(raw_spec(), invalid, 2)
    waiting = {"phase": "Running", "conditions": [{"type": "Degraded", "status": "True", "reason": "GroupHasMembers"}]}
    assert steps.needs_work(raw_spec(approved=True), waiting, 1)
    for spec in (True, "x", []):  # not a mapping: visited once, to say what is wrong
        assert steps.needs_work(spec, None)  # type: ignore[arg-type]


def test_needs_work_while_paused_workloads_are_at_zero_even_with_an_invalid_spec() -> None:
    invalid = {"phase": "Pending", "observedGeneration": 1, "conditions": [
        {"type": "Degraded", "status": "True", "reason": "InvalidSpec", "message": "spec.target.fromBackup: gone"}],
        "pausedWorkloads": [{"kind": "Deployment", "name": "api", "replicas": 2, "state": "ScaledDown"}]}
    assert steps.needs_work(raw_spec(approved=True), invalid, 1)
    restored = {**invalid, "pausedWorkloads": [{**invalid["pausedWorkloads"][0], "state": "Restored"}]}
    assert not steps.needs_work(raw_spec(approved=True), restored, 1)


def test_an_invalid_spec_found_with_workloads_paused_ends_failed_with_nothing_changed() -> None:
    out = steps.invalid_while_paused({"phase": "Pending"}, "spec.target.fromBackup", "no backup 'x'", NOW, 1)
    assert (out.status["phase"], out.status["reset"], out.status["failed"]) == ("Failed", 0, 0)
    assert cond(out.status, "Degraded")["reason"] == "InvalidSpec"
    assert cond(out.status, "Degraded")["message"].startswith("spec.target.fromBackup: no backup 'x'")
    assert cond(out.status, "Ready")["reason"] == "Failed" and "scaled back" in cond(out.status, "Ready")["message"]


# -- the dry run


def test_the_dry_run_shows_each_partitions_current_and_new_offset_and_changes_nothing() -> None:
    shown = steps.plan_shown({}, plan({"shiftBy": -3}, {("orders", 0): 4, ("orders", 1): 3}), NOW, 1)
    patch = shown.status
    assert patch["phase"] == "AwaitingApproval"
    assert patch["plan"]["entries"] == [
        {"topic": "orders", "partition": 0, "current": 4, "new": 2,
         "message": "clamped to the log start offset 2 (asked 1)"},
        {"topic": "orders", "partition": 1, "current": 3, "new": 0}]
    assert (patch["plan"]["partitions"], patch["plan"]["changes"], patch["plan"]["observedGeneration"]) == (2, 2, 1)
    assert cond(patch, "Ready")["reason"] == "AwaitingApproval" and "nothing has been changed" in cond(patch, "Ready")["message"]
    assert {c["type"] for c in patch["conditions"]} == {"Ready", "Degraded"}  # neither Reconciling nor Stalled
    assert [e.reason for e in shown.events] == ["AwaitingApproval"]
    assert steps.plan_shown({"phase": "AwaitingApproval"}, plan({"earliest": True}, {}), NOW, 2).events == ()


def test_a_plan_kafka_would_refuse_is_shown_with_the_reason_and_is_final_once_approved() -> None:
    refused = plan({"shiftBy": 1}, {("orders", 0): 4})  # partition 1 has no committed offset to shift
    shown = steps.plan_shown({}, refused, NOW, 1).status
    assert cond(shown, "Degraded")["reason"] == "PlanRefused" and "orders-1" in cond(shown, "Degraded")["message"]
    assert cond(shown, "Stalled")["reason"] == "PlanRefused"  # a person must change the spec
    final = steps.plan_refused({}, refused, NOW, 1).status
    assert (final["phase"], final["reset"], cond(final, "Ready")["reason"]) == ("Failed", 0, "Failed")


def test_the_plan_in_the_status_is_bounded_and_counts_every_partition() -> None:
    ranges = {("t", p): LogRange(0, 10) for p in range(2500)}
    big = plan_reset("g", parse_target({"latest": True}), sorted(ranges), {}, ranges)
    shown = steps.plan_status(big, NOW, 1, approved=False)
    assert (len(shown["entries"]), shown["partitions"], shown["changes"]) == (steps.PLAN_LIMIT, 2500, 2500)


# -- waiting for the group


def test_members_are_named_in_a_condition_that_waits_and_does_not_fail() -> None:
    outcome = steps.members_present({"phase": "AwaitingApproval"}, BUSY, 0.5, NOW, 1)
    degraded = cond(outcome.status, "Degraded")
    assert degraded["reason"] == "GroupHasMembers"
    assert "billing-app at /10.0.0.7" in degraded["message"] and "m2 at /10.0.0.8" in degraded["message"]
    assert outcome.status["phase"] == "Pending" and cond(outcome.status, "Reconciling")["status"] == "True"
    assert "Stalled" not in {c["type"] for c in outcome.status["conditions"]}
    running = steps.members_present({"phase": "Running"}, BUSY, 0.5, NOW, 1).status
    assert "phase" not in running and cond(running, "Ready") == {}  # Ready keeps saying Running
    again = steps.members_present({"conditions": outcome.status["conditions"]}, BUSY, 0.5, NOW, 1)
    assert again.events == ()  # one Event per change, not one per retry


# -- backup and commit


def record(offsets: dict[tuple[str, int], int], to: Any) -> BackupRecord:
    return BackupRecord("offset-backup-x", Action.RESET, "cid", "k:9092", "g",
                        {tp: Committed(o) for tp, o in offsets.items()},
                        Requester("OffsetReset", "ns", "r", "uid", "approved OffsetReset"), NOW,
                        "2026-02-01T00:00:00Z", extra={steps.RESET_TO: steps.reset_to(to)})


def test_the_plan_to_commit_travels_with_the_backup() -> None:
    approved = plan({"offset": 3}, {("orders", 0): 5})
    stored = record({("orders", 0): 5}, approved)
    assert steps.parse_reset_to(stored.extra[steps.RESET_TO]) == {("orders", 0): Committed(3), ("orders", 1): Committed(3)}
    target = {"group": "g", "spec": raw_spec(target={"offset": 3}), "clusterId": "cid"}
    undo = steps.undo_of("ns", "r", target["spec"], stored.name)
    taken = steps.backup_taken({}, stored, approved, target, undo, NOW, 1)
    assert taken.status["phase"] == "Running" and taken.status["backup"]["name"] == stored.name
    assert taken.status["plan"]["approved"] is True and [e.reason for e in taken.events] == ["BackedUp"]
    manifest = yaml.safe_load(undo["manifest"])
    assert manifest["kind"] == "OffsetReset" and manifest["spec"] == {
        "kafka": {"bootstrapServers": "k:9092"}, "group": "g", "allTopics": True,
        "target": {"fromBackup": stored.name}, "approved": False}
    parse_reset_spec(manifest["spec"])  # the undo is a valid OffsetReset


def test_only_partitions_still_as_backed_up_are_committed() -> None:
    backup = {("t", 0): Committed(5), ("t", 1): Committed(7)}  # ("t", 2) had no offset
    to = {("t", 0): Committed(1), ("t", 1): Committed(1), ("t", 2): Committed(1)}
    fresh = steps.plan_commit(backup, to, {("t", 0): Committed(5), ("t", 1): Committed(7)}, started=False)
    assert fresh.to_commit == to and fresh.results == ()
    moved = steps.plan_commit(backup, to, {("t", 0): Committed(5), ("t", 1): Committed(9), ("t", 2): Committed(4)},
                              started=False)
    assert list(moved.to_commit) == [("t", 0)]
    assert [(r["partition"], r["status"]) for r in moved.results] == [(1, "Skipped"), (2, "Skipped")]


def test_a_resumed_commit_counts_what_the_earlier_attempt_committed_and_sends_the_rest() -> None:
    backup = {("t", 0): Committed(5), ("t", 1): Committed(7)}
    to = {("t", 0): Committed(1), ("t", 1): Committed(2)}
    resumed = steps.plan_commit(backup, to, {("t", 0): Committed(1), ("t", 1): Committed(7)}, started=True)
    assert list(resumed.to_commit) == [("t", 1)]
    assert [(r["partition"], r["status"], r["before"], r["after"]) for r in resumed.results] == [(0, "Reset", 5, 1)]
    assert steps.commit_started({"commitStartTime": NOW}, "later").status == {}


def test_results_carry_before_after_and_kafkas_error_names() -> None:
    backup = {("t", 0): Committed(5), ("t", 1): Committed(7), ("t", 2): Committed(3)}
    to = {("t", 0): Committed(1), ("t", 1): Committed(1), ("t", 2): Committed(3)}
    todo = steps.plan_commit(backup, to, backup, started=False)
    answers = {("t", 0): None, ("t", 1): "TOPIC_AUTHORIZATION_FAILED", ("t", 2): None}
    after = {("t", 0): Committed(1), ("t", 1): Committed(7), ("t", 2): Committed(3)}
    outcome = steps.finish_reset({}, EMPTY, parse_target({"offset": 1}), todo, backup, answers, after, 0.5, NOW, 1)
    patch = outcome.status
    assert [(r["partition"], r["status"], r["before"], r["after"], r.get("error")) for r in patch["results"]] == [
        (0, "Reset", 5, 1, None), (1, "Failed", 7, 7, "TOPIC_AUTHORIZATION_FAILED"), (2, "Unchanged", 3, 3, None)]
    assert (patch["phase"], patch["reset"], patch["failed"]) == ("PartiallyFailed", 1, 1)
    assert cond(patch, "Ready")["message"] == (  # every outcome counted, zeros included
        "reset 1 offsets of group g to offset 1; 1 already there; 0 skipped (committed since the backup); 1 failed "
        "(TOPIC_AUTHORIZATION_FAILED); undo: status.undo")
    assert cond(patch, "Stalled")["reason"] == "PartiallyFailed"
    ok = steps.finish_reset({}, EMPTY, parse_target({"offset": 1}), todo, backup,
                            dict.fromkeys(to), after, 0.5, NOW, 1).status
    assert (ok["phase"], cond(ok, "Ready")["status"]) == ("Succeeded", "True")


def test_a_member_that_joined_meanwhile_makes_the_commit_wait_not_fail() -> None:
    backup = {("t", 0): Committed(5)}
    todo = steps.plan_commit(backup, {("t", 0): Committed(1)}, backup, started=True)
    outcome = steps.finish_reset({"phase": "Running"}, BUSY, parse_target({"offset": 1}), todo, backup,
                                 {("t", 0): "UNKNOWN_MEMBER_ID"}, backup, 0.5, NOW, 1)
    assert "phase" not in outcome.status and cond(outcome.status, "Degraded")["reason"] == "GroupHasMembers"


def test_protect_and_a_frozen_spec_say_what_was_refused() -> None:
    refused = steps.protected({}, "billing-1", "guard", "billing-*", NOW, 1).status
    assert (refused["phase"], cond(refused, "Ready")["reason"]) == ("Failed", "Protected")
    assert "'billing-*'" in cond(refused, "Ready")["message"]
    frozen = steps.spec_frozen({}, ["spec.target"], NOW, 1).status
    assert cond(frozen, "Degraded")["reason"] == "SpecFrozen" and "spec.target" in cond(frozen, "Degraded")["message"]
    cleared = steps.spec_unfrozen({"conditions": frozen["conditions"]}, NOW, 1).status
    assert cond(cleared, "Degraded")["status"] == "False" and cond(cleared, "Stalled") == {}


def test_only_a_recorded_commit_start_means_the_offset_commit_may_have_been_sent() -> None:
    backed_up = {"backup": {"name": "offset-backup-x"}, "startTime": NOW}
    for phase in ("Running", "Failed"):  # e.g. PlanRefused or PauseTimedOut after the backup: nothing sent
        assert not steps.commit_sent({**backed_up, "phase": phase})
    assert steps.commit_sent({**backed_up, "phase": "Running", "commitStartTime": NOW})
    assert steps.commit_sent({**backed_up, "phase": "Succeeded", "commitStartTime": NOW})
    assert not steps.commit_sent({"phase": "Succeeded"})  # every partition already there: nothing was sent


def test_the_shared_words_of_a_lost_answer_and_of_a_connections_origin() -> None:
    from kafka_offset_operator.decisions.kafka_answers import answer_lost
    from kafka_offset_operator.reconcilers.visits import connection_where

    reset = answer_lost("OffsetCommit", 2, "timed out", "commits only partitions still at their backed-up offset")
    assert reset == ("the OffsetCommit of 2 offsets was sent but its answer was lost (timed out); Kafka may or may "
                     "not have applied it: the next attempt re-reads the group's offsets and commits only partitions "
                     "still at their backed-up offset")  # as the OffsetReset said before it shared the helper
    assert answer_lost("OffsetCommit", 2, "x").endswith("commits only partitions that still have no offset")
    assert connection_where(None) == "spec.kafka"
    assert connection_where("nightly") == "ConsumerGroupOffsetPolicy nightly spec.kafka"
