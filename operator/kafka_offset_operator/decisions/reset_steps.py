"""The OffsetReset state machine as plain functions (see docs/offset-reset.md).

Each function takes what the reconciler read (spec, current status, what Kafka answered) and returns an
`Outcome` (step_outcomes'): a JSON merge patch for `.status` and the Events to post. The reconciler writes
the patch BEFORE its next Kafka call that changes offsets, so the status is always a safe point to resume:

    (new) ──plan──> AwaitingApproval (a dry run: the plan in status.plan, nothing changed)
          ──approved──> [no members] plan again ──> backup stored ──> Running
          ──> [no members] re-check ──> commitStartTime ──> OffsetCommit ──> Succeeded | PartiallyFailed | Failed

The plan that is committed is the one computed at approval, right before the backup; it is stored with the
backup (`extra.resetTo`), so a resumed reset commits exactly it, whatever the spec says later. Never twice,
never over a newer commit: a resumed commit sends only partitions still at their backed-up offset.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import yaml

from ..model.api import API_VERSION, DELETION_KIND, RESET_KIND
from ..model.backups import BackupRecord
from ..model.offsets import TP, Committed, GroupInfo, group_busy
from ..model.reasons import Reason
from . import step_outcomes as shared
from .conditions import Condition, find
from .fresh_verdict import FreshVerdict
from .kafka_answers import EXPLAIN
from .reset_plan import ResetPlan, ResetTarget
from .step_outcomes import (  # the phases both one-shot kinds have, and results that fit the object
    AWAITING,
    FAILED,
    PARTIALLY_FAILED,
    PENDING,
    RESULTS_BUDGET,
    RUNNING,
    SUCCEEDED,
    Event,
    Outcome,
    bounded_results,
    frozen_fields,
    own_spec_invalid,
)
from .step_outcomes import conds as _conds
from .step_outcomes import events_on_change as _on_change
from .step_outcomes import spec_unfrozen as spec_unfrozen

FINAL = (SUCCEEDED, PARTIALLY_FAILED, FAILED)

RESET = "Reset"
UNCHANGED = "Unchanged"
SKIPPED = "Skipped"
FAILED_RESULT = "Failed"

PLAN_LIMIT = 1000  # plan entries shown in the status (the counts cover all; the backup holds the whole plan)
MEMBERS_SHOWN = 10  # members named in a GroupHasMembers condition
PAUSE_PENDING = ("Recorded", "ScaledDown")  # status.pausedWorkloads states still to be scaled back (workload_pause)
RESET_TO = "resetTo"  # the backup's extra key holding the approved plan: [[topic, partition, offset, epoch, metadata]]


class ResetStep(StrEnum):
    PLAN = "plan"  # not approved: compute the dry run's plan (once per generation)
    AWAIT = "await"  # not approved, the plan shown is the current spec's
    BACKUP = "backup"  # approved: plan again, store the backup
    COMMIT = "commit"  # re-check and commit what is still at its backed-up offset
    DONE = "done"


# -- where are we


def next_step(approved: bool, status: Mapping[str, Any], generation: int | None) -> ResetStep:
    phase = status.get("phase")
    if phase in (None, PENDING, AWAITING):
        if approved:
            return ResetStep.BACKUP
        planned = (status.get("plan") or {}).get("observedGeneration")
        return ResetStep.AWAIT if phase == AWAITING and planned == generation else ResetStep.PLAN
    if phase == RUNNING:
        return ResetStep.COMMIT
    return ResetStep.DONE


def needs_work(spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None, generation: int | None = None) -> bool:
    """Whether the operator keeps visiting this object (its timer runs only while true). Anything that is
    not a mapping reads as empty, so the visit says what is wrong with it."""
    spec = spec if isinstance(spec, Mapping) else {}
    status = status if isinstance(status, Mapping) else {}
    phase = status.get("phase")
    degraded = find(status.get("conditions"), "Degraded")
    frozen = bool(frozen_fields(spec, status))
    if any(isinstance(w, Mapping) and w.get("state") in PAUSE_PENDING for w in status.get("pausedWorkloads") or ()):
        return True  # paused workloads to scale back (or a pause under way): never left at zero, whatever else
    if degraded is not None and degraded.get("status") == "True":
        reason = degraded.get("reason")
        if own_spec_invalid(degraded, status, generation):
            return False  # only a new spec fixes its own spec: Kopf asks again when the object changes
        if reason == Reason.SPEC_FROZEN:
            if not frozen:
                return True  # back as approved: clear the condition
        elif reason == Reason.PLAN_REFUSED and phase == AWAITING:
            pass  # a dry run's plan that cannot be carried out: shown; re-planned on a new spec or approval
        elif phase not in FINAL or reason in _CLEARS_WHEN_SETTLED:
            return True
    elif frozen:
        return True
    if phase in (None, PENDING, RUNNING):
        return True
    if phase == AWAITING:
        return bool(spec.get("approved")) or (status.get("plan") or {}).get("observedGeneration") != generation
    return False


def commit_sent(status: Mapping[str, Any]) -> bool:
    """Whether an OffsetCommit may have reached Kafka: only once commitStartTime is recorded (written right
    before it is sent). A final phase with a backup is not enough: a reset refused or timed out after its
    backup (PlanRefused, PauseTimedOut, ...) never sent one."""
    return bool(status.get("commitStartTime"))


_CLEARS_WHEN_SETTLED = frozenset({Reason.INVALID_SPEC, Reason.SECRET_NOT_FOUND, Reason.POLICY_NOT_FOUND,
                                  Reason.KAFKA_UNAVAILABLE, Reason.KUBERNETES_API_ERROR, Reason.GROUP_HAS_MEMBERS,
                                  Reason.CLUSTER_MISMATCH, Reason.BACKUP_NOT_STORED, Reason.WORKLOAD_NOT_FOUND,
                                  Reason.WORKLOAD_ACCESS_DENIED})


# -- outcomes that change nothing in Kafka


def plan_status(plan: ResetPlan, now: str, generation: int | None, *, approved: bool) -> dict[str, Any]:
    """status.plan: per-partition current and new offsets (up to PLAN_LIMIT entries and RESULTS_BUDGET bytes;
    the counts cover every partition)."""
    entries: list[dict[str, Any]] = []
    used = 0
    for row in plan.rows:
        if len(entries) >= PLAN_LIMIT:
            break
        entry: dict[str, Any] = {"topic": row.topic, "partition": row.partition}
        if row.current is not None:
            entry["current"] = row.current
        if row.new is not None:
            entry["new"] = row.new
        message = f"error: {row.error}" if row.error else row.note
        if message:
            entry["message"] = message
        size = len(json.dumps(entry, separators=(",", ":"))) + 1
        if used + size > RESULTS_BUDGET:
            break
        entries.append(entry)
        used += size
    out: dict[str, Any] = {"computedAt": now, "approved": approved, "partitions": len(plan.rows),
                           "changes": plan.changes, "entries": entries}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def plan_shown(status: Mapping[str, Any], plan: ResetPlan, now: str, generation: int | None) -> Outcome:
    """The dry run: the plan in the status, nothing changed. A plan Kafka's tool would refuse as a whole (a
    partition that does not exist, a shift of a partition without a committed offset) says so (PlanRefused)."""
    refusal = plan.refusal
    summary = (f"dry run: {plan.changes} of {len(plan.rows)} partitions of group {plan.group} would move to "
               f"{plan.target.describe()} (status.plan); nothing has been changed; set spec.approved to true to "
               "commit the plan computed then")
    ready = Condition("Ready", "False", Reason.AWAITING_APPROVAL, summary)
    if refusal is not None:
        degraded = Condition("Degraded", "True", Reason.PLAN_REFUSED, f"the plan cannot be carried out: {refusal}")
    else:
        degraded = Condition("Degraded", "False", Reason.AS_EXPECTED, "")
    patch = _conds(status, now, generation, ready, degraded)
    patch.update(phase=AWAITING, plan=plan_status(plan, now, generation, approved=False))
    events: tuple[Event, ...] = ()
    if refusal is not None:
        events = _on_change(status, degraded, Event("Warning", Reason.PLAN_REFUSED, degraded.message))
    elif status.get("phase") != AWAITING:
        events = (Event("Normal", Reason.AWAITING_APPROVAL, summary),)
    return Outcome(patch, events)


def plan_refused(status: Mapping[str, Any], plan: ResetPlan, now: str, generation: int | None) -> Outcome:
    """Approved, but the plan cannot be carried out (Kafka's tool refuses such a reset as a whole): final,
    nothing backed up or changed."""
    message = f"the plan cannot be carried out: {plan.refusal}; nothing changed"
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.FAILED, message),
                   Condition("Degraded", "True", Reason.PLAN_REFUSED, message))
    patch.update(phase=FAILED, completionTime=now, reset=0, failed=0,
                 plan=plan_status(plan, now, generation, approved=True))
    return Outcome(patch, (Event("Warning", Reason.PLAN_REFUSED, message),))


def invalid_while_paused(status: Mapping[str, Any], field_path: str, problem: str, now: str,
                         generation: int | None) -> Outcome:
    """Approved, workloads scaled down, and the plan cannot be made from the (frozen) spec: e.g. the fromBackup
    it names is gone. Only a new spec could fix it and an approved spec cannot change, so waiting would keep
    the consumers at zero for ever: Failed, nothing backed up or changed (the caller then scales them back)."""
    message = (f"{field_path}: {problem}; nothing changed; the paused workloads are scaled back to their recorded "
               "replicas (status.pausedWorkloads); create a new OffsetReset with a spec that can be carried out")
    degraded = Condition("Degraded", "True", Reason.INVALID_SPEC, message)
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.FAILED, message), degraded)
    patch.update(phase=FAILED, completionTime=now, reset=0, failed=0)
    return Outcome(patch, (Event("Warning", Reason.INVALID_SPEC, message),))


def members_present(status: Mapping[str, Any], group: GroupInfo, retry_seconds: float, now: str,
                    generation: int | None) -> Outcome:
    """The group has members: Kafka accepts an admin OffsetCommit only while it has none. Waiting, not
    failing; the condition names the members (client id and host) so someone can stop them."""
    shown = ", ".join(f"{m.client_id or m.member_id} at {m.client_host}" for m in group.members[:MEMBERS_SHOWN])
    more = f" and {len(group.members) - MEMBERS_SHOWN} more" if len(group.members) > MEMBERS_SHOWN else ""
    who = f": {shown}{more}" if shown else ""
    message = (f"group {group.group_id} has {len(group.members)} member(s) (state {group.state}){who}; Kafka "
               "accepts an admin OffsetCommit only while the group has none: stop its consumers; nothing changed "
               f"yet; retrying every {retry_seconds:g}s")
    degraded = Condition("Degraded", "True", Reason.GROUP_HAS_MEMBERS, message)
    updates = [degraded]
    if status.get("phase") in (None, PENDING, AWAITING):
        updates.append(Condition("Ready", "False", Reason.GROUP_HAS_MEMBERS, f"approved; waiting: {message}"))
    patch = _conds(status, now, generation, *updates)
    if status.get("phase") in (None, AWAITING):
        patch["phase"] = PENDING
    return Outcome(patch, _on_change(status, degraded, Event("Warning", Reason.GROUP_HAS_MEMBERS, message)))


def awaiting_kafka(status: Mapping[str, Any], code: str, message: str, retry_seconds: float, now: str,
                   generation: int | None, *, approved: bool) -> Outcome:
    """Kafka unreachable or busy: nothing changed, try again later (Ready says so once approved)."""
    return shared.kafka_waiting(status, code, message, retry_seconds, now, generation, approved=approved)


def settled(status: Mapping[str, Any], now: str, generation: int | None) -> Outcome:
    """Nothing to do: clear a retried problem left from an earlier attempt, if any."""
    return shared.settled(status, _CLEARS_WHEN_SETTLED, now, generation)


def protected(status: Mapping[str, Any], group: str, policy: str, pattern: str, now: str,
              generation: int | None) -> Outcome:
    """The referenced policy protects the group: refused, approved or not. Final: nothing changed."""
    message = (f"group {group} is protected by ConsumerGroupOffsetPolicy {policy} (spec.protect.groups pattern "
               f"{pattern!r}); nothing reset")
    return shared.protected(status, message, "reset", now, generation, FAILED)


def spec_frozen(status: Mapping[str, Any], fields: Sequence[str], now: str, generation: int | None) -> Outcome:
    """The spec changed after approval (an older CRD let it in): the approved target is acted on."""
    message = (f"{', '.join(fields)} changed after approval; the operator acts on what was approved "
               "(status.target and the plan stored with the backup): create a new OffsetReset for another target")
    return shared.spec_frozen(status, message, now, generation)


# -- backup


def reset_to(plan: ResetPlan) -> list[list[Any]]:
    """The approved plan as the backup keeps it (extra.resetTo): what the commit sends, nothing else."""
    return [[t, p, c.offset, c.leader_epoch, c.metadata] for (t, p), c in sorted(plan.to_commit.items())]


def parse_reset_to(entries: Sequence[Sequence[Any]]) -> dict[TP, Committed]:
    return {(str(e[0]), int(e[1])): Committed(int(e[2]), int(e[3]), str(e[4])) for e in entries}


def uncommitted(plan: ResetPlan) -> list[dict[str, Any]]:
    """Partitions the reset commits that had no offset before (the backup's extra.uncommitted, as the reset
    command writes it): an undo leaves them at the reset's offset (Kafka has no "uncommit")."""
    return [{"topic": r.topic, "partition": r.partition} for r in plan.rows if r.new is not None and r.current is None]


def added_offsets(plan: ResetPlan) -> dict[TP, int]:
    """The partitions the reset gives an offset the group did not have, with that offset: an undo from the
    backup cannot take them away (Kafka has no "uncommit"), an OffsetDeletion can (undo_of offers it)."""
    return {r.tp: r.new for r in plan.rows if r.new is not None and r.current is None}


def undo_of(namespace: str, name: str, approved_spec: Mapping[str, Any], backup: str,
            bootstrap_servers: str = "HOST:PORT", added: Mapping[TP, int] | None = None) -> dict[str, str]:
    """How to undo this reset: a new OffsetReset (a dry run until approved) that resets the same group from
    the backup this one wrote; the `reset` command that does the same (a dry run: it prints the plan; add
    --execute to commit; on a secured cluster it needs --command-config with the connection as properties).
    With `added` (added_offsets), also the OffsetDeletion (not approved) that deletes those partitions' offsets
    while they are still at the reset's value (expectedOffsets): the rest of the undo."""
    connection: dict[str, Any] = {}
    if "policyRef" in approved_spec:  # the connection as the reset had it, whatever it holds
        connection["policyRef"] = dict(approved_spec["policyRef"] or {})
    else:
        connection["kafka"] = dict(approved_spec.get("kafka") or {})
    spec: dict[str, Any] = dict(connection)
    spec.update(group=approved_spec.get("group"), allTopics=True, target={"fromBackup": backup})
    for key in ("pauseWorkloads", "pauseTimeout"):  # the undo stops the same consumers
        if key in approved_spec:
            spec[key] = approved_spec[key]
    spec["approved"] = False
    manifest = {"apiVersion": API_VERSION, "kind": RESET_KIND,
                "metadata": {"name": f"undo-{name}"[:253].rstrip("-."), "namespace": namespace}, "spec": spec}
    command = (f"kafka-offset-operator reset --bootstrap-server {bootstrap_servers} --group "
               f"{shlex.quote(str(approved_spec.get('group')))} --all-topics --from-backup {namespace}/{backup}")
    out = {"manifest": yaml.safe_dump(manifest, sort_keys=False), "command": command}
    if added:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(added):
            by_topic.setdefault(topic, []).append(partition)
        deletion = {"apiVersion": API_VERSION, "kind": DELETION_KIND,
                    "metadata": {"name": f"undo-{name}-added"[:253].rstrip("-."), "namespace": namespace},
                    "spec": {**connection, "group": approved_spec.get("group"),
                             "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                             "expectedOffsets": [{"topic": t, "partition": p, "offset": o}
                                                 for (t, p), o in sorted(added.items())],
                             "approved": False}}
        out["offsetDeletion"] = yaml.safe_dump(deletion, sort_keys=False)
    return out


def backup_taken(status: Mapping[str, Any], record: BackupRecord, plan: ResetPlan, target: Mapping[str, Any],
                 undo: Mapping[str, str], now: str, generation: int | None,
                 offsets_log: Mapping[str, int] | None = None) -> Outcome:
    """The backup is stored (and read back): the reset is Running; the plan shown is the one committed.
    `offsets_log`: where the group's __consumer_offsets partition ended before the backup was read (the
    re-check before the commit reads the group's records from there)."""
    message = (f"backed up {record.partitions} committed offsets of group {record.group} to ConfigMap {record.name}; "
               f"resetting {len(plan.to_commit)} partitions to {plan.target.describe()}")
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.RUNNING, message),
                   Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    patch.update(phase=RUNNING, startTime=now, target=dict(target), undo=dict(undo),
                 plan=plan_status(plan, now, generation, approved=True),
                 backup={"name": record.name, "takenAt": record.taken_at, "expiresAt": record.expires_at,
                         "partitions": record.partitions,
                         **({"offsetsLog": dict(offsets_log)} if offsets_log is not None else {})})
    return Outcome(patch, (Event("Normal", Reason.BACKED_UP, message + record.requested_by.people),))


# -- commit


@dataclass(frozen=True)
class CommitPlan:
    to_commit: dict[TP, Committed]  # still at their backed-up offset: one admin OffsetCommit
    results: tuple[dict[str, Any], ...]  # final already (committed by an earlier attempt, or since the backup)


def plan_commit(backup: Mapping[TP, Committed], reset: Mapping[TP, Committed], current: Mapping[TP, Committed],
                started: bool) -> CommitPlan:
    """Right before the commit: a partition is committed only while it is as backed up (no offset, if the
    backup has none). `started`: an earlier attempt may have sent the commit (status.commitStartTime), so
    a partition at its new offset was most likely reset by it. Any other offset was committed since the
    backup by someone else: left as it is."""
    to_commit: dict[TP, Committed] = {}
    results: list[dict[str, Any]] = []
    for tp, new in sorted(reset.items()):
        before, now = backup.get(tp), current.get(tp)
        if now == before:
            to_commit[tp] = new
        elif started and now is not None and now.offset == new.offset:
            results.append(_result(tp, RESET, before, now, "reset by an earlier attempt (found at its new offset)"))
        else:
            results.append(_result(tp, SKIPPED, before, now, f"committed since the backup (offset "
                                   f"{'none' if now is None else now.offset}, backed up "
                                   f"{'none' if before is None else before.offset}); left as is"))
    return CommitPlan(to_commit, tuple(results))


def skip_changed(plan: CommitPlan, verdict: FreshVerdict, backup: Mapping[TP, Committed],
                 current: Mapping[TP, Committed]) -> CommitPlan:
    """The verdict re-derived from fresh facts (decisions/fresh_verdict.py): a partition the group committed
    again since the backup, the same offset included, is in use by someone: left as it is (Skipped)."""
    keep = {tp: c for tp, c in plan.to_commit.items() if verdict.why(tp) is None}
    skipped = tuple(_result(tp, SKIPPED, backup.get(tp), current.get(tp), f"left as is: {verdict.why(tp)}")
                    for tp in sorted(plan.to_commit) if verdict.why(tp) is not None)
    return CommitPlan(keep, (*plan.results, *skipped))


def commit_started(status: Mapping[str, Any], now: str) -> Outcome:
    """Written before the OffsetCommit is sent (once): the mark a resumed reset reads in plan_commit."""
    return Outcome() if status.get("commitStartTime") else Outcome({"commitStartTime": now})


def finish_reset(status: Mapping[str, Any], group: GroupInfo, target: ResetTarget, plan: CommitPlan,
                 backup: Mapping[TP, Committed], answers: Mapping[TP, str | None], after: Mapping[TP, Committed],
                 retry_seconds: float, now: str, generation: int | None) -> Outcome:
    """Record Kafka's answers, with each partition's offset before (the backup) and after (OffsetFetch read
    right after the commit). A busy group (UNKNOWN_MEMBER_ID: a member joined meanwhile) means: not done,
    wait; what was committed is found at its new offset next time."""
    if any(group_busy(error) for error in answers.values()):
        return members_present(status, group, retry_seconds, now, generation)
    new: list[dict[str, Any]] = [dict(r) for r in plan.results]
    for tp, wanted in sorted(plan.to_commit.items()):
        error = answers.get(tp, "UNKNOWN_SERVER_ERROR")
        before = backup.get(tp)
        if error is not None:
            new.append(_result(tp, FAILED_RESULT, before, after.get(tp), EXPLAIN.get(error, ""), error))
        elif before is not None and before.offset == wanted.offset:
            new.append(_result(tp, UNCHANGED, before, after.get(tp)))
        elif before is None:  # Kafka has no "uncommit": the undo from the backup cannot remove it
            new.append(_result(tp, RESET, None, after.get(tp), f"no committed offset before the reset; an undo from "
                               f"the backup leaves it at {wanted.offset}: status.undo.offsetDeletion deletes it"))
        else:
            new.append(_result(tp, RESET, before, after.get(tp)))
    results, summary = bounded_results((), None, new, RESET)
    tally = summary or _tally(results)
    by_status = tally["byStatus"]
    done, failed = by_status.get(RESET, 0), by_status.get(FAILED_RESULT, 0)
    phase = FAILED if failed and not (done or by_status.get(UNCHANGED, 0)) else PARTIALLY_FAILED if failed else SUCCEEDED
    errors = sorted(tally["byError"])
    text = (f"reset {done} offsets of group {group.group_id} to {target.describe()}; "
            f"{by_status.get(UNCHANGED, 0)} already there; {by_status.get(SKIPPED, 0)} skipped (committed since "
            f"the backup)")
    text += "".join(f"; {n} {status}" for status, n in sorted(by_status.items())
                    if status not in (RESET, UNCHANGED, SKIPPED, FAILED_RESULT))  # every outcome is counted
    text += f"; {failed} failed" + (f" ({', '.join(errors)})" if errors else "")
    text += "; undo: status.undo"
    if phase == SUCCEEDED:
        conds = (Condition("Ready", "True", Reason.SUCCEEDED, text), Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
        event = Event("Normal", Reason.SUCCEEDED, text)
    else:
        conds = (Condition("Ready", "False", Reason(phase), text), Condition("Degraded", "True", Reason(phase), text))
        event = Event("Warning", Reason(phase), text)
    patch = _conds(status, now, generation, *conds)
    patch.update(phase=phase, completionTime=now, reset=done, failed=failed, results=results, resultsSummary=summary)
    return Outcome(patch, (event,))


def _tally(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    by_status: dict[str, int] = {}
    by_error: dict[str, int] = {}
    for r in results:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        if r.get("error"):
            by_error[r["error"]] = by_error.get(r["error"], 0) + 1
    return {"byStatus": by_status, "byError": by_error}


def _result(tp: TP, status: str, before: Committed | None, after: Committed | None, message: str = "",
            error: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": tp[0], "partition": tp[1], "status": status}
    if before is not None:
        out["before"] = before.offset
    if after is not None:
        out["after"] = after.offset
    if error:
        out["error"] = error
    if message:
        out["message"] = message
    return out
