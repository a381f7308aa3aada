"""Carrying out keep-alive plans against Kafka (decisions/keepalive.py decides; docs/keep-alive.md explains).

A rebase is the one step that removes offsets for a moment (DeleteGroups, then the admin OffsetCommit of
the backup), so its backup is saved durably BEFORE the group is deleted, and dropped only once the offsets
are back. An operator that dies in between finds the backup on its next run (`resume_interrupted`) and
commits the partitions that still have no offset, never overwriting one a consumer committed since.

With `write=False` (a DryRun policy) the same pass only reads (DescribeGroups, OffsetFetch) and reports
what it would do: DryRun writes nothing to Kafka, ever, and leaves the backup store alone too.

Every write it makes has its audit line (adapters/audit.py, the OffsetDeletion's format), naming the policy,
the operator as requester and (mode Auto) approver: the re-commit, the rebase's DeleteGroups and OffsetCommit,
a request whose answer was lost. A resumed rebase writes the DeleteGroups line again, marked
`confirmed=after-restart` (the process that sent it may have died before its own line: at-least-once).
A re-commit of unchanged offsets is preceded by its intent (IntentStore: the offsets and where the group's
`__consumer_offsets` partition ended); an intent still open when a run starts is resolved from the commit
records since that position (`resume_recommits`): found, its line marked `confirmed=after-restart`; not
found, nothing was applied and the pass decides afresh; undecidable, a line `outcome=unknown-after-restart`.
It never re-commits on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_offsets_model.raw import OFFSETS_TOPIC

from ..adapters import audit
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.offsets_topic import group_records
from ..decisions.fresh_verdict import FreshFacts, rebase_premise_gone, recommitted_since
from ..decisions.keepalive import (
    KeepAlivePlan,
    Method,
    needs_live_view,
    plan_group,
    preview,
    protected_groups,
    recommit_finding,
)
from ..model.api import POLICY_KIND
from ..model.backups import RecommitIntent
from ..model.group_log import GroupRecord
from ..model.offsets import OUTCOME_UNKNOWN, TP, Committed, GroupInfo, KafkaFailure, group_busy
from ..model.reasons import Reason
from ..model.report import ScannedOffset
from .fresh_facts import log_end, log_position, offsets_partition, since_scan

RECOMMITTED = "Recommitted"
REBASED = "Rebased"
RESUMED = "Resumed"
BLOCKED = "Blocked"
PROPOSED = "Proposed"  # Approve: the rebase waits as an OffsetDeletion (or Auto approved one that waited)
WOULD_RECOMMIT = "WouldRecommit"  # DryRun: what a policy that acts would do
WOULD_REBASE = "WouldRebase"
UNNEEDED = "Unneeded"  # the fresh facts say the group kept itself alive since the scan: nothing done


class RebaseBackupStore(Protocol):
    """Where rebase backups live while a rebase is under way (a ConfigMap owned by the policy)."""

    def load_all(self) -> dict[str, dict[TP, Committed]]: ...

    def save(self, group: str, offsets: Mapping[TP, Committed]) -> str | None:
        """Store it durably; the backup's name (for the audit lines), if it has one."""

    def backup_name(self, group: str) -> str | None:
        """The name of the group's backup still under way (an interrupted rebase's), if it has one."""

    def drop(self, group: str) -> None: ...


class IntentStore(Protocol):
    """Where a re-commit's intent is stored before it is sent (adapters/keepalive_store.RecommitIntents)."""

    def pending(self) -> list[RecommitIntent]:
        """Intents an earlier run stored and never marked done (its process died in between)."""

    def intend(self, group: str, offsets: Mapping[TP, Committed], offsets_log: Mapping[str, int] | None) -> str | None:
        """Store it durably before the OffsetCommit; the record's name."""

    def settle(self, record_name: str, group: str) -> None:
        """The commit's answer and its audit line are written: done."""


def audit_body(policy: Mapping[str, Any], requested_by: str | None, approved_by: str | None) -> dict[str, Any]:
    """Who keep-alive's audit lines name: the policy whose protection it carries out, the operator as the
    requester and, in mode Auto (where the operator approves its policy's changes, as it does the policy's
    proposals), as the approver. A re-commit of unchanged offsets in Approve mode runs without an approval
    (docs/keep-alive.md): approvedBy=none says so."""
    meta = policy.get("metadata") or {}
    spec = {k: v for k, v in (("requestedBy", requested_by), ("approvedBy", approved_by)) if v}
    return {"kind": POLICY_KIND, "metadata": {"namespace": meta.get("namespace"), "name": meta.get("name")},
            "spec": spec}


@contextmanager
def _sent(call: str, who: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
          after: Mapping[TP, Committed] | None, backup: str | None) -> Iterator[None]:
    """A write whose answer was lost (the connection dropped, a timeout) may have been applied: its audit line
    says it was sent, with the error for its outcome, before the failure ends the run (the next run re-reads)."""
    try:
        yield
    except KafkaFailure as failure:
        if failure.code in OUTCOME_UNKNOWN:
            audit.changed(call, who, group, before, after, {}, failure.code, backup)
        raise


@dataclass(frozen=True)
class KeepAliveResult:
    group: str
    outcome: str  # Recommitted | Rebased | Resumed | Blocked
    partitions: int
    message: str

    @property
    def line(self) -> str:
        return f"{self.group}: {self.message}"

    @property
    def preview(self) -> bool:
        """Only said, nothing done (DryRun, or not needed after all): no Event, no metric."""
        return self.outcome in (WOULD_RECOMMIT, WOULD_REBASE, UNNEEDED)

    @property
    def reason(self) -> Reason:
        """The reason of the Event that reports it."""
        return _EVENT_REASONS[self.outcome]


_EVENT_REASONS = {RECOMMITTED: Reason.KEEP_ALIVE_RECOMMITTED, REBASED: Reason.KEEP_ALIVE_REBASED,
                  RESUMED: Reason.KEEP_ALIVE_RESUMED, BLOCKED: Reason.KEEP_ALIVE_BLOCKED,
                  PROPOSED: Reason.KEEP_ALIVE_PROPOSED}

# Approve mode: a rebase becomes a proposal that waits for an approval (docs/keep-alive.md). Given the group
# and its live offsets, it creates (or finds) the proposal and says so; None lets the pass rebase itself
# (Auto mode, when no proposal of the policy waits for the group).
Proposer = Callable[[str, Mapping[TP, Committed]], "KeepAliveResult | None"]


def carry_out(admin: KafkaAdmin, store: RebaseBackupStore, plan: KeepAlivePlan, *, write: bool = True,
              propose: Proposer | None = None, fresh: FreshFacts | None = None,
              who: Mapping[str, Any] | None = None, intents: IntentStore | None = None,
              timeout_ms: int = 10_000) -> KeepAliveResult | None:
    """One plan. Kafka failures of a whole request raise KafkaFailure (the run retries later). Without
    `write`, only reads: what would be done, with the offsets it would concern. With `propose`, a rebase
    (which deletes the group for a moment) is handed to it instead of done here; a re-commit of unchanged
    offsets is not (it changes only their commit time). `fresh`: the group's records since the scan
    (decisions/fresh_verdict.py): a rebase whose premise is gone is neither done nor proposed, and
    partitions the group committed itself since are not re-committed. `who`: what its audit lines name
    (audit_body). `intents`: where a re-commit's intent is stored before it is sent (the operator always
    passes one; without it a crash between the commit and its line leaves no line)."""
    who = who if who is not None else audit_body({}, None, None)
    if not write and plan.method is not None:
        offsets = len(admin.committed_offsets(plan.group))
        if not offsets:
            return KeepAliveResult(plan.group, BLOCKED, 0, "no committed offsets left to keep alive")
        outcome = WOULD_REBASE if plan.method is Method.REBASE else WOULD_RECOMMIT
        return KeepAliveResult(plan.group, outcome, 0, preview(plan.method, offsets))
    if plan.method is Method.RECOMMIT:
        return _recommit(admin, plan.group, recommitted_since(fresh) if fresh is not None else {}, who, intents,
                         timeout_ms)
    if plan.method is Method.REBASE:
        gone = rebase_premise_gone(fresh) if fresh is not None else None
        if gone is not None:
            return KeepAliveResult(plan.group, UNNEEDED, 0, f"not rebased this run: {gone}")
        if propose is not None:
            live = admin.committed_offsets(plan.group)
            if not live:
                return KeepAliveResult(plan.group, BLOCKED, 0, "no committed offsets left to keep alive")
            proposed = propose(plan.group, live)
            if proposed is not None:
                return proposed
        return _rebase(admin, store, plan.group, who)
    if plan.blocked:
        return KeepAliveResult(plan.group, BLOCKED, 0, f"cannot keep alive: {plan.blocked}")
    return None


def _recommit(admin: KafkaAdmin, group: str, fresh: Mapping[TP, str], who: Mapping[str, Any],
              intents: IntentStore | None, timeout_ms: int) -> KeepAliveResult:
    # Where the group's records end, before its offsets are read: the commit's records come after it.
    position = log_position(admin, group, timeout_ms) if intents is not None else None
    # The live offsets, not the scanned ones: a keep-alive never moves a group back.
    live = admin.committed_offsets(group)
    if not live:
        return KeepAliveResult(group, BLOCKED, 0, "no committed offsets left to keep alive")
    offsets = {tp: c for tp, c in live.items() if tp not in fresh}  # committed by the group since the scan
    if not offsets:
        return KeepAliveResult(group, UNNEEDED, 0, f"not re-committed: the group committed all {len(live)} "
                               f"offsets itself since the scan ({next(iter(fresh.values()))})")
    record = intents.intend(group, offsets, position) if intents is not None else None  # durable before
    with _sent("OffsetCommit", who, group, offsets, offsets, None):
        answers = admin.commit_offsets(group, offsets)
    audit.changed("OffsetCommit", who, group, offsets, offsets, answers, None, None)  # the same values, new time
    if intents is not None and record is not None:
        intents.settle(record, group)
    errors = sorted({e for e in answers.values() if e is not None})
    done = sum(1 for e in answers.values() if e is None)
    busy = [e for e in errors if group_busy(e)]
    if busy:
        return KeepAliveResult(group, BLOCKED, 0, "it has members; Kafka accepts an admin OffsetCommit only "
                               f"while a group has none ({busy[0]})")
    text = f"re-committed {done} offsets (expiry restarts from now)"
    if len(offsets) < len(live):
        text += f"; {len(live) - len(offsets)} committed by the group itself since the scan left as they are"
    if errors:
        text += f"; {len(answers) - done} refused: {', '.join(errors)}"
    return KeepAliveResult(group, RECOMMITTED, done, text)


def _rebase(admin: KafkaAdmin, store: RebaseBackupStore, group: str, who: Mapping[str, Any]) -> KeepAliveResult:
    live = admin.describe_group(group)
    if live.active or not live.protocol_type:
        return KeepAliveResult(group, BLOCKED, 0, f"not rebased: the group changed (state {live.state})")
    backup = admin.committed_offsets(group)
    if not backup:
        return KeepAliveResult(group, BLOCKED, 0, "no committed offsets left to keep alive")
    name = store.save(group, backup)  # durable before anything is removed
    with _sent("DeleteGroups", who, group, backup, None, name):
        error = admin.delete_group(group)
    audit.changed("DeleteGroups", who, group, backup, None, {tp: error for tp in backup}, error, name)
    if error == "NON_EMPTY_GROUP":  # a member joined since the check: it keeps the group alive itself
        store.drop(group)
        return KeepAliveResult(group, BLOCKED, 0, "not rebased: a member joined (NON_EMPTY_GROUP)")
    if error not in (None, "GROUP_ID_NOT_FOUND"):
        store.drop(group)
        return KeepAliveResult(group, BLOCKED, 0, f"not rebased: DeleteGroups answered {error}")
    return _commit_backup(admin, store, group, backup, admin.committed_offsets(group), who, name, REBASED,
                          "rebased as a simple group (DeleteGroups, then the {n} backed-up offsets re-committed): "
                          "its offsets now expire by commit time and are re-committed before they do")


def _commit_backup(admin: KafkaAdmin, store: RebaseBackupStore, group: str, backup: Mapping[TP, Committed],
                   current: Mapping[TP, Committed], who: Mapping[str, Any], name: str | None, outcome: str,
                   text: str) -> KeepAliveResult:
    missing = {tp: c for tp, c in backup.items() if tp not in current}  # never overwrite a newer commit
    answers: dict[TP, str | None] = {}
    if missing:
        with _sent("OffsetCommit", who, group, None, missing, name):
            answers = admin.commit_offsets(group, missing)
        audit.changed("OffsetCommit", who, group, None, missing, answers, None, name)
    if any(group_busy(e) for e in answers.values()):
        return KeepAliveResult(group, BLOCKED, 0, (
            f"a consumer joined while it was being rebased; {len(missing)} backed-up offsets are kept and "
            "re-committed (where still uncommitted) once the group is empty again"))
    store.drop(group)
    failed = sorted({e for e in answers.values() if e is not None})
    message = text.format(n=sum(1 for e in answers.values() if e is None))
    if failed:
        message += f"; refused: {', '.join(failed)}"
    return KeepAliveResult(group, outcome, len(missing), message)


def resume_interrupted(admin: KafkaAdmin, store: RebaseBackupStore, *, write: bool = True,
                       who: Mapping[str, Any] | None = None) -> list[KeepAliveResult]:
    """Finish rebases an earlier run began but did not end (operator restart, consumer race). Without
    `write`, say which wait (a policy switched to DryRun mid-way must not leave that unsaid). What it finds
    done in Kafka gets its audit line again, marked confirmed after a restart: backed-up offsets gone (the
    DeleteGroups was sent), or every offset back in a group that is simple now (a rebase only starts on a
    group with a protocol type: DeleteGroups and the re-commit were both sent)."""
    who = who if who is not None else audit_body({}, None, None)
    out = []
    for group, backup in sorted(store.load_all().items()):
        live = admin.describe_group(group)
        current = admin.committed_offsets(group)
        name = store.backup_name(group)
        if all(tp in current for tp in backup):
            if write:
                if live.exists and not live.protocol_type:  # rebased in full: its lines may be missing
                    audit.confirmed("DeleteGroups", who, group, backup, None, name)
                    audit.confirmed("OffsetCommit", who, group, None, {tp: current[tp] for tp in backup}, name)
                store.drop(group)  # never deleted, or already re-committed
            continue
        if write:
            audit.confirmed("DeleteGroups", who, group, backup, None, name)
        if live.active:
            out.append(KeepAliveResult(group, BLOCKED, 0, "an interrupted rebase waits for the group to be empty"))
            continue
        if not write:
            missing = sum(1 for tp in backup if tp not in current)
            out.append(KeepAliveResult(group, BLOCKED, 0, (
                f"an interrupted rebase left {missing} backed-up offsets uncommitted; DryRun writes nothing to "
                "Kafka: they are re-committed by the first run in Approve or Auto mode")))
            continue
        out.append(_commit_backup(admin, store, group, backup, current, who, name, RESUMED,
                                  "finished an interrupted rebase ({n} offsets re-committed)"))
    return out


def resume_recommits(admin: KafkaAdmin, intents: IntentStore, *, write: bool = True,
                     who: Mapping[str, Any] | None = None, timeout_ms: int = 10_000) -> list[KeepAliveResult]:
    """Resolve re-commits an earlier run stored the intent of and never marked done (its process died after
    storing it: before the OffsetCommit, or after it and before its audit line). Kafka's records since the
    intent's position decide (decisions/keepalive.recommit_finding): found, the line an earlier process may
    not have written, marked `confirmed=after-restart` (at-least-once); not found, nothing was applied, no
    line; undecidable, a line saying so (`outcome=unknown-after-restart`). Each is then marked done. Nothing
    is re-committed here: a group still due is planned by the pass afresh. Without `write` (DryRun), left
    for the first run that acts (DryRun leaves the backup store alone)."""
    who = who if who is not None else audit_body({}, None, None)
    out = []
    for intent in intents.pending() if write else []:
        finding = recommit_finding(intent.offsets, *_records_since(admin, intent, timeout_ms))
        if finding.unknown is not None:
            audit.unknown("OffsetCommit", who, intent.group, intent.offsets, intent.offsets, None, finding.unknown)
        elif finding.found:
            audit.confirmed("OffsetCommit", who, intent.group, finding.found, finding.found, None)
            out.append(KeepAliveResult(intent.group, RECOMMITTED, len(finding.found), (
                f"a re-commit of {len(finding.found)} offsets an earlier run sent before it stopped was applied "
                "(confirmed from __consumer_offsets)")))
        intents.settle(intent.record, intent.group)
    return out


def _records_since(admin: KafkaAdmin, intent: RecommitIntent,
                   timeout_ms: int) -> tuple[list[GroupRecord] | None, str | None]:
    """The group's records since its intent's position, or why they cannot be read (KafkaFailure: the run
    fails and the intent stays open for the next one)."""
    log = intent.offsets_log
    if not log:
        return None, "the intent recorded no __consumer_offsets position"
    partition = offsets_partition(admin, intent.group)
    if partition != log.get("partition"):
        return None, f"__consumer_offsets has other partitions since the intent (the group is now in {partition})"
    start = admin.list_offsets([(OFFSETS_TOPIC, partition)], "earliest")[(OFFSETS_TOPIC, partition)]
    if start > log["offset"]:
        return None, f"the records of __consumer_offsets-{partition} since the intent were removed (log start {start})"
    _, records = group_records(admin.settings, intent.group, partition, log["offset"], timeout_ms,
                               log_end(admin, partition))
    return records, None


def run_pass(admin: KafkaAdmin, store: RebaseBackupStore, protected: Iterable[ScannedOffset], now_ms: int,
             lead: int, *, write: bool = True, propose: Proposer | None = None,
             snapshot: Mapping[str, Any] | None = None, timeout_ms: int = 10_000,
             who: Mapping[str, Any] | None = None, intents: IntentStore | None = None) -> list[KeepAliveResult]:
    """One keep-alive pass after an analysis: resolve interrupted re-commits (`intents`), finish interrupted rebases, then handle every protected group
    that is due (see keepalive.plan_group). `write=False` (DryRun): the same decisions, reported, not done.
    `snapshot` (the report's {partition: end offset}): before acting on a group, its records since the scan
    are read (fresh_facts.since_scan), so a group that kept itself alive meanwhile is left alone. `who`: what
    the audit lines of its writes name (audit_body)."""
    results = resume_recommits(admin, intents, write=write, who=who, timeout_ms=timeout_ms) if intents else []
    results += resume_interrupted(admin, store, write=write, who=who)
    touched = {r.group for r in results}
    for group in protected_groups(protected):
        if group.group in touched or not needs_live_view(group, now_ms, lead):
            continue
        live = admin.describe_group(group.group) if group.group_type == "classic" else GroupInfo(group.group, "Unknown")
        plan = plan_group(group, live, now_ms, lead)
        fresh = since_scan(admin, group.group, snapshot, timeout_ms) if write and plan.acts and snapshot else None
        result = carry_out(admin, store, plan, write=write, propose=propose, fresh=fresh, who=who,
                           intents=intents, timeout_ms=timeout_ms)
        if result is not None:
            results.append(result)
    return results
