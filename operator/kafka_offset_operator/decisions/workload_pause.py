"""spec.pauseWorkloads of an OffsetReset, as plain functions (docs/offset-reset.md, "Consumers stopped and
restarted for you").

Kafka accepts an admin OffsetCommit only while the group has no members (`OffsetMetadataManager.validateOffsetCommit`,
`ClassicGroup.validateOffsetCommit`: UNKNOWN_MEMBER_ID while it is not Empty; docs/kafka-semantics.md), so the
usual runbook is: scale the consumers to zero, reset, scale them back. The operator does it, with the status
as its memory:

    approved ──> status.pausedWorkloads: each workload's replicas, state Recorded   (the safe point, written
             ──> scaled to 0, state ScaledDown                                         before anything is scaled)
             ──> the group Empty (before status.pauseStartTime + pauseTimeout) ──> backup ──> commit
             ──> any final phase, or the OffsetReset deleted ──> each scaled back to its recorded replicas

A scale back never fights a person: a workload found at neither 0 nor its recorded replicas was scaled by
someone meanwhile and is left as found (LeftAsFound); one that is gone is Gone. An operator restarted mid-way
reads the states and goes on from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.offsets import GroupInfo
from ..model.reasons import Reason
from ..model.times import parse_iso
from .conditions import Condition, find
from .reset_steps import FINAL, MEMBERS_SHOWN, PAUSE_PENDING
from .step_outcomes import AWAITING, FAILED, PENDING, RUNNING, Event, Outcome
from .step_outcomes import conds as _conds
from .step_outcomes import events_on_change as _on_change

RECORDED, SCALED_DOWN = PAUSE_PENDING  # replicas recorded, being scaled to zero; at zero
RESTORED, LEFT_AS_FOUND, GONE = "Restored", "LeftAsFound", "Gone"
DEFAULT_TIMEOUT_MS = 5 * 60 * 1000  # model/kinds/offset_reset.py PAUSE_TIMEOUT

RBAC_HINT = ("grant it with the install's opt-in: Helm value pauseWorkloads.enabled=true, or the kustomize component "
             "manifests/components/pause-workloads (docs/install.md)")


@dataclass(frozen=True)
class Workload:
    kind: str  # Deployment | StatefulSet
    name: str

    def describe(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Paused:
    """One workload as status.pausedWorkloads records it."""

    kind: str
    name: str
    replicas: int
    state: str
    message: str = ""

    @property
    def workload(self) -> Workload:
        return Workload(self.kind, self.name)

    @property
    def pending(self) -> bool:
        """Still to be scaled back (or to be found scaled back)."""
        return self.state in PAUSE_PENDING

    def as_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "replicas": self.replicas, "state": self.state}
        if self.message:
            out["message"] = self.message
        return out


def recorded(status: Mapping[str, Any]) -> list[Paused]:
    """status.pausedWorkloads (empty: nothing recorded yet). Entries that cannot be read are dropped: only the
    operator writes them."""
    out = []
    for entry in status.get("pausedWorkloads") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("replicas"), int):
            out.append(Paused(str(entry.get("kind")), str(entry.get("name")), int(entry["replicas"]),
                              str(entry.get("state") or RECORDED), str(entry.get("message") or "")))
    return out


def pending(status: Mapping[str, Any]) -> list[Paused]:
    return [p for p in recorded(status) if p.pending]


# -- pausing


def record(status: Mapping[str, Any], workloads: Sequence[Workload], replicas: Mapping[Workload, int], group: str,
           now: str, generation: int | None) -> Outcome:
    """The replicas of each workload, written BEFORE any is scaled: every scale back (after a failure, a
    deletion, a restart) reads them from here."""
    entries = [Paused(w.kind, w.name, replicas[w], RECORDED) for w in workloads]
    shown = ", ".join(f"{w.describe()} ({replicas[w]})" for w in workloads)
    message = (f"approved; scaling {shown} to zero so that group {group} becomes Empty (Kafka accepts an admin "
               "OffsetCommit only then); their replicas are recorded in status.pausedWorkloads")
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.PAUSING_WORKLOADS, message),
                   Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    patch.update(phase=PENDING, pauseStartTime=now, pausedWorkloads=[p.as_status() for p in entries])
    return Outcome(patch, (Event("Normal", Reason.WORKLOADS_PAUSED, message),))


def scaled_down(status: Mapping[str, Any]) -> Outcome:
    """Every Recorded workload is at zero now."""
    entries = recorded(status)
    if not any(p.state == RECORDED for p in entries):
        return Outcome()
    return Outcome({"pausedWorkloads": [
        (Paused(p.kind, p.name, p.replicas, SCALED_DOWN, "scaled to 0") if p.state == RECORDED else p).as_status()
        for p in entries]})


def deadline_ms(status: Mapping[str, Any], timeout_ms: int) -> int | None:
    started = parse_iso(str(status.get("pauseStartTime") or ""))
    return None if started is None else started + timeout_ms


def expired(status: Mapping[str, Any], timeout_ms: int, now_ms: int) -> bool:
    deadline = deadline_ms(status, timeout_ms)
    return deadline is not None and now_ms >= deadline


def applies(status: Mapping[str, Any]) -> bool:
    """Whether pauseTimeout still bounds the wait: workloads were paused and no OffsetCommit may have been sent
    (Pending, or Running before commitStartTime: waiting for members or Kafka after the backup). Once the
    commit may have been sent the reset finishes first, then scales back."""
    return (bool(recorded(status)) and status.get("phase") in (None, PENDING, AWAITING, RUNNING)
            and not status.get("commitStartTime"))


def last_problem(status: Mapping[str, Any]) -> str | None:
    """The retried problem the status shows (Degraded), for a timeout that is not the members' fault."""
    degraded = find(status.get("conditions"), "Degraded")
    if degraded is None or degraded.get("status") != "True":
        return None
    return f"{degraded.get('reason')}: {degraded.get('message')}"


def members_text(group: GroupInfo) -> str:
    shown = ", ".join(f"{m.client_id or m.member_id} at {m.client_host}" for m in group.members[:MEMBERS_SHOWN])
    more = f" and {len(group.members) - MEMBERS_SHOWN} more" if len(group.members) > MEMBERS_SHOWN else ""
    return f"{shown}{more}"


def waiting(status: Mapping[str, Any], group: GroupInfo, deadline: str, now: str, generation: int | None) -> Outcome:
    """Scaled to zero, the group still has members (pods stopping): wait, until the deadline."""
    paused = ", ".join(f"{p.kind} {p.name}" for p in recorded(status))
    message = (f"{paused} scaled to 0; waiting until {deadline} for group {group.group_id} to become Empty: "
               f"{len(group.members)} member(s) left (state {group.state}): {members_text(group)}")
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.PAUSING_WORKLOADS, message),
                   Condition("Degraded", "False", Reason.AS_EXPECTED, ""))
    return Outcome(patch)


def timed_out(status: Mapping[str, Any], group: GroupInfo | None, problem: str | None, timeout: str, now: str,
              generation: int | None) -> Outcome:
    """The group did not become Empty within pauseTimeout: Failed, nothing reset, and (the caller, next) the
    workloads scaled back. Ending is the safer choice: the consumers are down for as long as the wait lasts."""
    if group is not None and group.active:
        left = (f"group {group.group_id} still has {len(group.members)} member(s) (state {group.state}): "
                f"{members_text(group)}")
    elif group is not None:
        left = f"group {group.group_id} is Empty but the reset did not start ({problem or 'retried in vain'})"
    else:
        left = f"the reset could not go on ({problem})"
    backup = (status.get("backup") or {}).get("name") if isinstance(status.get("backup"), Mapping) else None
    if backup:
        left += f"; backup {backup} kept, no OffsetCommit sent"
    message = (f"pauseTimeout {timeout} passed: {left}; nothing reset; the paused workloads are scaled back to "
               "their recorded replicas (status.pausedWorkloads). Consumers outside spec.pauseWorkloads? Stop "
               "them too, or list their workloads, and create a new OffsetReset")
    patch = _conds(status, now, generation, Condition("Ready", "False", Reason.PAUSE_TIMED_OUT, message),
                   Condition("Degraded", "True", Reason.PAUSE_TIMED_OUT, message))
    patch.update(phase=FAILED, completionTime=now, reset=0, failed=0)
    return Outcome(patch, (Event("Warning", Reason.PAUSE_TIMED_OUT, message),))


def missing(status: Mapping[str, Any], index: int, workload: Workload, namespace: str, now: str,
            generation: int | None) -> Outcome:
    """A workload spec.pauseWorkloads names does not exist: nothing is scaled (not even the others); retried,
    as it may be created (the spec itself is frozen once approved: delete the OffsetReset to give up)."""
    message = (f"spec.pauseWorkloads[{index}].name: {workload.describe()} not found in namespace {namespace}; "
               "nothing scaled, nothing reset; waiting for it (or delete this OffsetReset)")
    degraded = Condition("Degraded", "True", Reason.WORKLOAD_NOT_FOUND, message)
    patch = _conds(status, now, generation, degraded,
                   Condition("Ready", "False", Reason.WORKLOAD_NOT_FOUND, message))
    if status.get("phase") in (None, "AwaitingApproval"):
        patch["phase"] = PENDING
    return Outcome(patch, _on_change(status, degraded, Event("Warning", Reason.WORKLOAD_NOT_FOUND, message)))


def access_denied(status: Mapping[str, Any], workload: Workload, verb: str, namespace: str, answer: str, now: str,
                  generation: int | None, retry_seconds: float) -> Outcome:
    """HTTP 403 on a workload's scale: the install did not opt in to the pause RBAC. Says which permission is
    missing and how to grant it; one Event per change, a retry per interval (no storm)."""
    resource = "deployments/scale" if workload.kind == "Deployment" else "statefulsets/scale"
    message = (f"the operator may not {verb} {resource} (apps) in namespace {namespace} for {workload.describe()} "
               f"({answer}); {RBAC_HINT}; retrying every {retry_seconds:g}s")
    degraded = Condition("Degraded", "True", Reason.WORKLOAD_ACCESS_DENIED, message)
    updates = [degraded]
    if status.get("phase") not in FINAL:
        updates.append(Condition("Ready", "False", Reason.WORKLOAD_ACCESS_DENIED, message))
    patch = _conds(status, now, generation, *updates)
    if status.get("phase") in (None, "AwaitingApproval"):
        patch["phase"] = PENDING
    return Outcome(patch, _on_change(status, degraded, Event("Warning", Reason.WORKLOAD_ACCESS_DENIED, message)))


# -- scaling back


def restore_action(entry: Paused, current: int | None) -> tuple[int | None, Paused]:
    """What to do with one workload to be scaled back, given its replicas now (None: it is gone): the replicas
    to set (None: touch nothing) and its entry afterwards. Zero means it is as the operator left it; its
    recorded count means it is back already (an earlier attempt, or it was never scaled); anything else is a
    person's doing, and a person wins."""
    if current is None:
        return None, Paused(entry.kind, entry.name, entry.replicas, GONE, "not found when scaling back: deleted meanwhile")
    if current == entry.replicas:
        return None, Paused(entry.kind, entry.name, entry.replicas, RESTORED, f"at its recorded {entry.replicas} replicas")
    if current == 0:
        return entry.replicas, Paused(entry.kind, entry.name, entry.replicas, RESTORED,
                                      f"scaled back to {entry.replicas} replicas")
    return None, Paused(entry.kind, entry.name, entry.replicas, LEFT_AS_FOUND,
                        f"found at {current} replicas, not 0: scaled by someone meanwhile; left as it is (recorded "
                        f"{entry.replicas})")


def restored(status: Mapping[str, Any], entries: Sequence[Paused]) -> Outcome:
    """The entries after a scale back; one Event for those restored, a Warning for each left alone."""
    before = {(p.kind, p.name): p for p in recorded(status)}
    events: list[Event] = []
    back = [p for p in entries if p.state == RESTORED and before.get((p.kind, p.name), p).pending]
    if back:
        events.append(Event("Normal", Reason.WORKLOADS_RESTORED, "scaled back: " + ", ".join(
            f"{p.kind} {p.name} to {p.replicas}" for p in back)))
    for p in entries:
        if p.state in (LEFT_AS_FOUND, GONE) and before.get((p.kind, p.name), p).pending:
            events.append(Event("Warning", Reason.WORKLOAD_LEFT_AS_FOUND, f"{p.kind} {p.name}: {p.message}"))
    return Outcome({"pausedWorkloads": [p.as_status() for p in entries]}, tuple(events))
