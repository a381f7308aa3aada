"""The OffsetDeletion state machine as plain functions (see docs/offset-deletion.md).

Each function takes what the handler read (spec, current status, what Kafka answered) and returns an
`Outcome`: a JSON merge patch for `.status` and the Kubernetes Events to post. The handler writes the patch
BEFORE its next Kafka call, so the status is always a safe point to resume from:

    (new) ──> AwaitingApproval ──approved──> Running: backup written ──> deleteStartTime written
          ──> OffsetDelete ──> Succeeded | PartiallyFailed | Failed ──restore──> Restored

With spec.deleteGroup the same machine deletes the whole group (DeleteGroups) instead: the backup holds every
offset the group has, the live re-check right before DeleteGroups (`group_deletion_problem`) sends nothing
unless the group still has no members and exactly the backed-up offsets (all of listed topics; with
spec.requireTopicsDeleted all of topics that no longer exist), and `finish_group_deletion` records Kafka's
answer for the group (status.groupResult) and for each backed-up partition, so restore is the same.

Never twice: a resumed deletion re-reads the committed offsets and deletes only partitions still at their
backed-up value; a resumed restore commits only partitions that still have no offset. So an offset a
consumer committed after our delete (or after our restore) is never deleted (or overwritten) by a retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..model.backups import BackupRecord, backup_entries
from ..model.kinds.offset_deletion import DeletionSpec
from ..model.offsets import TP, Committed, GroupInfo, group_busy
from ..model.reasons import Reason
from . import step_outcomes as shared
from .conditions import Condition, find
from .fresh_verdict import FreshVerdict
from .kafka_answers import EXPLAIN
from .step_outcomes import (
    AWAITING,
    FAILED,
    PARTIALLY_FAILED,
    PENDING,
    RESULTS_BUDGET,
    RESULTS_LIMIT,
    RUNNING,
    SUCCEEDED,
    Event,
    Outcome,
    bounded_results,
    json_size,
    kafka_waiting,
    own_spec_invalid,
    summarize_results,
)
from .step_outcomes import conds as _conds
from .step_outcomes import events_on_change as _events_on_change
from .step_outcomes import frozen_fields as frozen_fields
from .step_outcomes import spec_unfrozen as spec_unfrozen

# Phases (status.phase) beyond those both one-shot kinds share (step_outcomes): Restored is the deletion's own.
RESTORED = Reason.RESTORED.value

DELETED = "Deleted"
FAILED_RESULT = "Failed"
SKIPPED = "Skipped"
NOT_COMMITTED = "NotCommitted"


class DeletionStep(StrEnum):
    AWAIT = "await"  # not approved: nothing to do with Kafka
    BACKUP = "backup"  # read the committed offsets and write them into the status
    DELETE = "delete"  # re-check and delete what is still at its backed-up value
    RESTORE = "restore"  # re-commit the deleted offsets
    DONE = "done"


# -- where are we


def next_step(spec: DeletionSpec, status: Mapping[str, Any]) -> DeletionStep:
    phase = status.get("phase")
    if phase in (None, PENDING, AWAITING):
        return DeletionStep.BACKUP if spec.approved else DeletionStep.AWAIT
    if phase == RUNNING:
        return DeletionStep.DELETE
    if phase in (SUCCEEDED, PARTIALLY_FAILED) and spec.restore and not status.get("restoreTime"):
        return DeletionStep.RESTORE
    return DeletionStep.DONE


def needs_work(spec: Mapping[str, Any] | None, status: Mapping[str, Any] | None, generation: int | None = None) -> bool:
    """Whether the operator should keep visiting this object (its retry timer runs only while true). Kopf
    asks this of every object it sees, before any check: a spec or status that is not a mapping (a CRD
    installed without its schema lets one in) reads as empty, so the visit says what is wrong with it."""
    spec = spec if isinstance(spec, Mapping) else {}
    status = status if isinstance(status, Mapping) else {}
    phase = status.get("phase")
    degraded = find(status.get("conditions"), "Degraded")
    frozen = bool(frozen_fields(spec, status))
    if degraded is not None and degraded.get("status") == "True":
        if own_spec_invalid(degraded, status, generation):
            return False  # only a new spec can fix it: Kopf calls this again when the object changes
        if degraded.get("reason") == Reason.SPEC_FROZEN:
            if not frozen:
                return True  # the spec is back as approved: clear the condition
        elif phase not in (FAILED, PARTIALLY_FAILED, RESTORED) or degraded.get("reason") in _CLEARS_WHEN_SETTLED:
            return True
    elif frozen:
        return True  # say that the change is ignored
    if phase in (None, PENDING, RUNNING):
        return True
    if phase == AWAITING:
        return bool(spec.get("approved"))
    if phase in (SUCCEEDED, PARTIALLY_FAILED):
        return bool(spec.get("restore")) and not status.get("restoreTime")
    return False


# -- outcomes that change no Kafka state




def kafka_problem(
    status: Mapping[str, Any], code: str, message: str, retry_seconds: float, now: str, generation: int | None,
    *, approved: bool = False,
) -> Outcome:
    """Kafka unreachable or busy: nothing changed, try again later. An approved deletion that has not
    started says so in Ready too (it is no longer awaiting approval: it is waiting for Kafka)."""
    return kafka_waiting(status, code, message, retry_seconds, now, generation, approved=approved)


def rebase_plan(spec: DeletionSpec) -> str | None:
    """What an approval of a keep-alive rebase will do, for its status while it waits."""
    if not spec.rebase:
        return None
    partitions = len(spec.expected) or sum(len(t.partitions or ()) for t in spec.topics)
    return (f"plan: keep-alive rebase of protected group {spec.group}: back up its {partitions} committed offsets, "
            "re-check that it has no members, a protocol type and exactly these offsets, DeleteGroups, then "
            "re-commit the backup at once (a simple group, whose offsets then expire by commit time)")


def awaiting_approval(status: Mapping[str, Any], now: str, generation: int | None, plan: str | None = None) -> Outcome:
    text = "waiting for spec.approved to be true; nothing has been deleted"
    ready = Condition("Ready", "False", Reason.AWAITING_APPROVAL, f"{text}; {plan}" if plan else text)
    patch = _conds(status, now, generation, ready, Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    patch["phase"] = AWAITING
    events = () if status.get("phase") == AWAITING else (Event("Normal", Reason.AWAITING_APPROVAL, ready.message),)
    return Outcome(patch, events)


def settled(status: Mapping[str, Any], now: str, generation: int | None) -> Outcome:
    """Nothing to do: clear a problem condition left from an earlier attempt, if any (a RestoreBlocked too,
    once spec.restore is withdrawn: nothing is blocked any more)."""
    return shared.settled(status, _CLEARS_WHEN_SETTLED, now, generation)


_CLEARS_WHEN_SETTLED = frozenset({Reason.INVALID_SPEC, Reason.SECRET_NOT_FOUND, Reason.POLICY_NOT_FOUND,
                                  Reason.KAFKA_UNAVAILABLE, Reason.KUBERNETES_API_ERROR, Reason.RESTORE_BLOCKED,
                                  Reason.CLUSTER_MISMATCH, Reason.BACKUP_NOT_STORED})




def protected(status: Mapping[str, Any], group: str, policy: str, pattern: str, now: str,
              generation: int | None) -> Outcome:
    """The referenced policy protects the group: `protect` wins over every OffsetDeletion that references
    it, approved or not. Final: nothing was (or will be) deleted."""
    message = (f"group {group} is protected by ConsumerGroupOffsetPolicy {policy} (spec.protect.groups pattern "
               f"{pattern!r}); nothing deleted")
    return shared.protected(status, message, "deleted", now, generation, FAILED)


def spec_frozen(status: Mapping[str, Any], fields: Sequence[str], now: str, generation: int | None) -> Outcome:
    """The spec changed after approval: the operator keeps acting on what was approved (status.target)."""
    message = (f"{', '.join(fields)} changed after approval; the operator acts on what was approved "
               "(status.target); only spec.restore may change: create a new OffsetDeletion for another target")
    return shared.spec_frozen(status, message, now, generation)


# -- backup


@dataclass(frozen=True)
class BackupPlan:
    offsets: dict[TP, Committed]  # what will be deleted, as committed now
    results: tuple[dict[str, Any], ...]  # final already: nothing committed, or committed since the scan
    group_missing: Outcome | None = None  # the group does not exist: final, no backup needed


def plan_backup(
    spec: DeletionSpec,
    status: Mapping[str, Any],
    group: GroupInfo,
    committed: Mapping[TP, Committed],
    now: str,
    generation: int | None,
) -> BackupPlan:
    """From the group's committed offsets: what to back up (the partitions this deletion will delete) and
    the results already final (nothing committed; committed since the policy's scan)."""
    offsets: dict[TP, Committed] = {}
    results: list[dict[str, Any]] = []
    for topic in spec.topics:
        if topic.partitions is None:
            parts = sorted(p for (t, p) in committed if t == topic.name)
            if not parts:
                results.append({"topic": topic.name, "status": NOT_COMMITTED,
                                "message": "the group has no committed offset for this topic"})
        else:
            parts = list(topic.partitions)
        for p in parts:
            tp = (topic.name, p)
            current = committed.get(tp)
            if current is None:
                results.append(_result(tp, NOT_COMMITTED, message="no committed offset"))
            elif tp in spec.expected and spec.expected[tp] != current.offset:
                results.append(_result(tp, SKIPPED, message=f"committed since the scan (offset {current.offset}, "
                                                         f"scanned {spec.expected[tp]}); not deleted"))
            else:
                offsets[tp] = current
    if not group.exists and not committed:
        return BackupPlan({}, (), _group_missing(spec, status, now, generation))
    return BackupPlan(offsets, tuple(results))




def backup_taken(status: Mapping[str, Any], record: BackupRecord, plan: BackupPlan, target: Mapping[str, Any],
                 now: str, generation: int | None, *, inline_limit: int = 1000,
                 offsets_log: Mapping[str, int] | None = None) -> Outcome:
    """The backup is stored (and was read back): record where, what is about to be deleted, and where the
    group's __consumer_offsets partition ended before it was read (`offsets_log`: the re-check's baseline)."""
    backup: dict[str, Any] = {"name": record.name, "takenAt": record.taken_at, "partitions": record.partitions,
                              "expiresAt": record.expires_at}
    if offsets_log is not None:
        backup["offsetsLog"] = dict(offsets_log)
    if record.partitions <= inline_limit:  # for kubectl; the stored backup is the one restore reads
        entries = backup_entries(record.offsets)
        if json_size(entries) <= RESULTS_BUDGET:  # long topic names: the ConfigMap alone
            backup["offsets"] = entries
    message = (f"backed up {record.partitions} committed offsets of group {record.group} to ConfigMap "
               f"{record.name}; deleting")
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.RUNNING, message),
                   Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    results, summary = bounded_results((), None, plan.results, DELETED)
    patch.update(phase=RUNNING, startTime=now, backup=backup, results=results, resultsSummary=summary,
                 target=dict(target))
    return Outcome(patch, (Event("Normal", Reason.BACKED_UP, message + record.requested_by.people),))




def _group_missing(spec: DeletionSpec, status: Mapping[str, Any], now: str, generation: int | None) -> Outcome:
    message = f"consumer group {spec.group} does not exist (no members, no committed offsets); nothing deleted"
    results = [{"topic": t.name, "status": FAILED_RESULT, "error": "GROUP_ID_NOT_FOUND",
                "message": EXPLAIN["GROUP_ID_NOT_FOUND"]} for t in spec.topics]
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.FAILED, message),
                   Condition("Degraded", "True", Reason.GROUP_NOT_FOUND, message))
    patch.update(phase=FAILED, startTime=now, completionTime=now, results=results, deleted=0, failed=len(results),
                 backup={"takenAt": now, "partitions": 0, "offsets": []})
    return Outcome(patch, (Event("Warning", Reason.GROUP_NOT_FOUND, message),))


# -- whole-group deletion (spec.deleteGroup)


def plan_group_backup(spec: DeletionSpec, status: Mapping[str, Any], group: GroupInfo,
                      committed: Mapping[TP, Committed], topics: frozenset[str] | None, now: str,
                      generation: int | None) -> BackupPlan:
    """DeleteGroups deletes every offset of the group, so the backup holds every one. A group whose premise
    does not hold already (members, offsets of unlisted topics, committed since the scan, a topic that
    exists) is not backed up and not deleted: final, with why."""
    if not group.exists and not committed:
        return BackupPlan({}, (), _group_missing(spec, status, now, generation))
    problem = group_deletion_problem(spec, group, committed, None, topics)
    if problem is not None:
        return BackupPlan({}, (), group_not_deleted(spec, status, committed, problem, now, generation))
    return BackupPlan(dict(committed), ())


def group_deletion_problem(spec: DeletionSpec, group: GroupInfo, committed: Mapping[TP, Committed],
                           backup: Mapping[TP, Committed] | None, topics: frozenset[str] | None) -> str | None:
    """The live re-check of a whole-group deletion: why DeleteGroups must not be sent now, or None.
    `backup`: what was backed up (None before the backup); `topics`: the cluster's topics now (read only
    with spec.requireTopicsDeleted)."""
    if group.active:
        return (f"the group has {len(group.members)} member(s) now (state {group.state}): it is in use; Kafka would "
                "refuse DeleteGroups (NON_EMPTY_GROUP)")
    if not committed:
        return "the group has no committed offsets now (expired or deleted elsewhere)"
    if spec.rebase and group.exists and not group.protocol_type:
        return "it is a simple group already (no protocol type): a keep-alive rebase would change nothing"
    unlisted = sorted({t for t, _ in committed} - spec.topic_names)
    if unlisted:
        return (f"the group has offsets of topics not in spec.topics ({_names(unlisted)}), which DeleteGroups "
                "would delete too")
    if spec.expected:
        changed = sorted(tp for tp, c in committed.items() if spec.expected.get(tp) != c.offset)
        if changed:
            return f"the group committed since the scan ({_tps(changed)}): it is not as proposed"
    if backup is not None and dict(committed) != dict(backup):
        changed = sorted(tp for tp in set(committed) | set(backup) if committed.get(tp) != backup.get(tp))
        return f"the group's offsets changed since the backup ({_tps(changed)})"
    if spec.require_topics_deleted and topics is not None:
        present = sorted({t for t, _ in committed} & topics)
        if present:
            return (f"topic(s) {_names(present)} exist(s) (again): spec.requireTopicsDeleted deletes the group only "
                    "while all its offsets are of deleted topics")
    return None


def _names(names: Sequence[str], limit: int = 5) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _tps(tps: Sequence[TP], limit: int = 5) -> str:
    return _names([f"{t}-{p}" for t, p in tps], limit)


def group_not_deleted(spec: DeletionSpec, status: Mapping[str, Any], committed: Mapping[TP, Committed],
                      problem: str, now: str, generation: int | None) -> Outcome:
    """The live re-check failed: DeleteGroups was not sent, nothing was deleted. Final (phase Failed): the
    premise the deletion was approved on is gone; a new OffsetDeletion is needed if it comes back."""
    message = f"group {spec.group} not deleted: {problem}"
    results = [_result(tp, SKIPPED, message="the group was not deleted") for tp in sorted(committed)]
    bounded, summary = bounded_results((), None, results, DELETED)
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.GROUP_CHANGED, message),
                   Condition("Degraded", "True", Reason.GROUP_CHANGED, message))
    patch.update(phase=FAILED, completionTime=now, deleted=0, failed=0, results=bounded, resultsSummary=summary,
                 groupResult={"status": SKIPPED, "message": problem})
    if not status.get("startTime"):
        patch["startTime"] = now
    return Outcome(patch, (Event("Warning", Reason.GROUP_CHANGED, message),))


def finish_group_deletion(spec: DeletionSpec, status: Mapping[str, Any], backup: Mapping[TP, Committed],
                          error: str | None, now: str, generation: int | None) -> Outcome:
    """DeleteGroups' answer for the group (status.groupResult): on success every backed-up partition is
    Deleted (restore reads them), else every one Failed with Kafka's error name, as a top-level OffsetDelete
    error would be."""
    if error is None:
        new = [_result(tp, DELETED) for tp in sorted(backup)]
        group_result = {"status": DELETED, "message": f"deleted with its {len(backup)} committed offsets"}
        text = f"deleted group {spec.group} (DeleteGroups) with its {len(backup)} committed offsets"
        phase, kind = SUCCEEDED, "Normal"
    else:
        explain = EXPLAIN.get(error, "")
        new = [_result(tp, FAILED_RESULT, error, explain) for tp in sorted(backup)]
        group_result = {"status": FAILED_RESULT, "error": error, "message": explain or f"Kafka refused ({error})"}
        text = f"group {spec.group} not deleted: Kafka answered DeleteGroups with {error}"
        phase, kind = FAILED, "Warning"
    results, results_summary = bounded_results(status.get("results") or (), status.get("resultsSummary"), new,
                                               DELETED)
    tally = results_summary or summarize_results(results)
    reason = Reason(phase)
    if phase == SUCCEEDED:
        conds = (Condition("Ready", "True", reason, text), Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    else:
        conds = (Condition("Ready", "False", reason, text), Condition("Degraded", "True", reason, text))
    patch = _conds(status, now, generation, *conds)
    patch.update(phase=phase, completionTime=now, deleted=tally["byStatus"].get(DELETED, 0),
                 failed=tally["byStatus"].get(FAILED_RESULT, 0), results=results, resultsSummary=results_summary,
                 groupResult=group_result)
    return Outcome(patch, (Event(kind, reason, text),))


# -- delete


@dataclass(frozen=True)
class DeletePlan:
    to_delete: tuple[TP, ...]  # still at their backed-up value: send these in one OffsetDelete
    results: tuple[dict[str, Any], ...]  # final already (gone, or committed since the backup)


def plan_deletion(backup: Mapping[TP, Committed], current: Mapping[TP, Committed], started: bool) -> DeletePlan:
    """Re-check right before deleting. `started`: an earlier attempt may have sent the OffsetDelete already
    (status.deleteStartTime was written), so an offset that is gone now was most likely deleted by it."""
    to_delete: list[TP] = []
    results: list[dict[str, Any]] = []
    for tp, saved in sorted(backup.items()):
        now_committed = current.get(tp)
        if now_committed is None:
            if started:
                results.append(_result(tp, DELETED, message="deleted (gone when re-read after an earlier attempt sent the OffsetDelete)"))
            else:
                results.append(_result(tp, NOT_COMMITTED, message="no longer committed when the deletion ran "
                                                               "(expired or deleted elsewhere)"))
        elif now_committed == saved:
            to_delete.append(tp)
        else:
            results.append(_result(tp, SKIPPED, message=f"committed since the backup (offset {now_committed.offset}, "
                                                     f"backed up {saved.offset}); not deleted"))
    return DeletePlan(tuple(to_delete), tuple(results))


def apply_verdict(plan: DeletePlan, verdict: FreshVerdict) -> DeletePlan:
    """The verdict re-derived from fresh facts (decisions/fresh_verdict.py): a partition it says not to touch
    is Skipped, with what changed and when."""
    keep = tuple(tp for tp in plan.to_delete if verdict.why(tp) is None)
    skipped = tuple(_result(tp, SKIPPED, message=f"not deleted: {verdict.why(tp)}")
                    for tp in plan.to_delete if verdict.why(tp) is not None)
    return DeletePlan(keep, (*plan.results, *skipped))


def deletion_started(status: Mapping[str, Any], now: str) -> Outcome:
    """Written before the OffsetDelete is sent (once): the mark a resumed run reads in plan_deletion."""
    if status.get("deleteStartTime"):
        return Outcome()
    return Outcome({"deleteStartTime": now})


def finish_deletion(
    spec: DeletionSpec,
    status: Mapping[str, Any],
    plan: DeletePlan,
    answers: Mapping[TP, str | None],
    top_error: str | None,
    now: str,
    generation: int | None,
    results_limit: int = RESULTS_LIMIT,
    results_budget: int = RESULTS_BUDGET,
) -> Outcome:
    """Record Kafka's answer: per partition, or one top-level error that Kafka applies to all of them."""
    new: list[dict[str, Any]] = [dict(r) for r in plan.results]
    for tp in plan.to_delete:
        error = top_error if top_error is not None else answers.get(tp, "UNKNOWN_SERVER_ERROR")
        if error is None:
            new.append(_result(tp, DELETED))
        else:
            new.append(_result(tp, FAILED_RESULT, error, EXPLAIN.get(error, "")))
    results, results_summary = bounded_results(status.get("results") or (), status.get("resultsSummary"), new, DELETED,
                                       results_limit, results_budget)
    tally = results_summary or summarize_results(results)
    deleted, failed = tally["byStatus"].get(DELETED, 0), tally["byStatus"].get(FAILED_RESULT, 0)
    phase = FAILED if failed and not deleted else PARTIALLY_FAILED if failed else SUCCEEDED
    errors = sorted(tally["byError"])
    summary = f"deleted {deleted} committed offsets of group {spec.group}; " + outcome_counts(tally["byStatus"])
    if errors:
        summary += f" ({', '.join(errors)})"
    reason = Reason(phase)
    if phase == SUCCEEDED:
        conds = (Condition("Ready", "True", reason, summary), Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
        event = Event("Normal", reason, summary)
    else:
        conds = (Condition("Ready", "False", reason, summary), Condition("Degraded", "True", reason, summary))
        event = Event("Warning", reason, summary)
    patch = _conds(status, now, generation, *conds)
    patch.update(phase=phase, completionTime=now, deleted=deleted, failed=failed, results=results,
                 resultsSummary=results_summary)
    return Outcome(patch, (event,))


def outcome_counts(by_status: Mapping[str, int]) -> str:
    """Every outcome but Deleted counted, zeros included ("skipped 10; not committed 0; failed 0"), so a
    Ready message adds up to the partitions asked for; a status not named here is counted too."""
    named = ((SKIPPED, "skipped"), (NOT_COMMITTED, "not committed"))  # skipped: changed since the scan or backup
    parts = [f"{word} {by_status.get(status, 0)}" for status, word in named]
    parts += [f"{status} {n}" for status, n in sorted(by_status.items())
              if status not in (DELETED, FAILED_RESULT, SKIPPED, NOT_COMMITTED)]
    return "; ".join([*parts, f"failed {by_status.get(FAILED_RESULT, 0)}"])











def _result(tp: TP, status: str, error: str | None = None, message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"topic": tp[0], "partition": tp[1], "status": status}
    if error:
        out["error"] = error
    if message:
        out["message"] = message
    return out


def deleted_partitions(status: Mapping[str, Any], backup: Mapping[TP, Committed]) -> list[TP]:
    """Partitions this deletion deleted: per-partition results, or (compacted) every backed-up partition of a
    topic whose deletions were summed, minus those with another result."""
    explicit = {(r["topic"], r["partition"]) for r in status.get("results") or () if "partition" in r}
    out = {(r["topic"], r["partition"]) for r in status.get("results") or ()
           if r["status"] == DELETED and "partition" in r}
    summed = {r["topic"] for r in status.get("results") or () if r["status"] == DELETED and "partition" not in r}
    out |= {tp for tp in backup if tp[0] in summed and tp not in explicit}
    return sorted(out)


# -- restore


@dataclass(frozen=True)
class RestorePlan:
    to_commit: dict[TP, Committed]
    results: tuple[dict[str, Any], ...]  # final already (restored before, or committed since the deletion)


def plan_restore(
    backup: Mapping[TP, Committed], deleted: Sequence[TP], current: Mapping[TP, Committed]
) -> RestorePlan:
    """Commit back only partitions that still have no offset: one at its backed-up value was restored by an
    earlier attempt, and one at another value was committed by the group since; both are left alone."""
    to_commit: dict[TP, Committed] = {}
    results: list[dict[str, Any]] = []
    for tp in deleted:
        saved = backup.get(tp)
        if saved is None:
            continue
        now_committed = current.get(tp)
        if now_committed is None:
            to_commit[tp] = saved
        elif now_committed == saved:
            results.append(_result(tp, RESTORED))
        else:
            results.append(_result(tp, SKIPPED, message=f"committed since the deletion (offset "
                                                     f"{now_committed.offset}); left as is"))
    return RestorePlan(to_commit, tuple(results))


def cluster_mismatch(status: Mapping[str, Any], expected: str | None, found: str | None, retry_seconds: float,
                     now: str, generation: int | None) -> Outcome:
    """The connection now reaches another cluster than the one the offsets were deleted from."""
    message = (f"the Kafka cluster reached now (id {found}) is not the one the offsets were deleted from (id "
               f"{expected}, status.target); nothing restored; retrying every {retry_seconds:g}s")
    degraded = Condition("Degraded", "True", Reason.CLUSTER_MISMATCH, message)
    return Outcome(_conds(status, now, generation, degraded),
                   _events_on_change(status, degraded, Event("Warning", Reason.CLUSTER_MISMATCH, message)))


def restore_blocked(
    status: Mapping[str, Any], group: GroupInfo, retry_seconds: float, now: str, generation: int | None
) -> Outcome:
    message = (f"group {group.group_id} has {len(group.members)} active member(s) (state {group.state}): Kafka "
               f"accepts an admin OffsetCommit only when the group has none; retrying every {retry_seconds:g}s")
    degraded = Condition("Degraded", "True", Reason.RESTORE_BLOCKED, message)
    patch = _conds(status, now, generation, degraded)
    return Outcome(patch, _events_on_change(status, degraded, Event("Warning", Reason.RESTORE_BLOCKED, message)))


def finish_restore(
    status: Mapping[str, Any],
    plan: RestorePlan,
    answers: Mapping[TP, str | None],
    group: GroupInfo,
    retry_seconds: float,
    now: str,
    generation: int | None,
) -> Outcome:
    """Record the OffsetCommit's answers. A busy group (UNKNOWN_MEMBER_ID: a member joined meanwhile) means:
    not done, retry; what was committed is found at its value next time. (Answers worth a retry for any
    other reason, a moving coordinator, come as a KafkaFailure from the adapter instead.)"""
    if any(group_busy(error) for error in answers.values()):
        return restore_blocked(status, group, retry_seconds, now, generation)
    new = list(plan.results)
    for tp in sorted(plan.to_commit):
        error = answers.get(tp, "UNKNOWN_SERVER_ERROR")
        new.append(_result(tp, RESTORED) if error is None else _result(tp, FAILED_RESULT, error, EXPLAIN.get(error, "")))
    results, summary = bounded_results((), None, new, RESTORED)
    tally = summary or summarize_results(results)
    restored, failed = tally["byStatus"].get(RESTORED, 0), tally["byStatus"].get(FAILED_RESULT, 0)
    message = f"restored {restored} offsets of group {group.group_id}" + (f"; {failed} failed" if failed else "")
    if failed:
        conds = (Condition("Ready", "False", Reason.RESTORE_INCOMPLETE, message),
                 Condition("Degraded", "True", Reason.RESTORE_INCOMPLETE, message))
        event = Event("Warning", Reason.RESTORE_INCOMPLETE, message)
    else:
        conds = (Condition("Ready", "True", Reason.RESTORED, message), Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
        event = Event("Normal", Reason.RESTORED, message)
    patch = _conds(status, now, generation, *conds)
    patch.update(phase=RESTORED, restoreTime=now, restored=restored, restoreResults=results,
                 restoreResultsSummary=summary)
    return Outcome(patch, (event,))
