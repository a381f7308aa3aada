"""Kubernetes-style conditions: a list keyed by type whose lastTransitionTime moves only when status does.

Ready and Degraded are what the operator decides; Reconciling and Stalled are derived from them here, in
kstatus' "abnormal-true" form (present only while True), so that kstatus, Flux and `kubectl wait` read a
resource's progress without knowing our reasons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.reasons import Reason


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: Reason
    message: str


def merge_conditions(
    current: Sequence[Mapping[str, Any]] | None, updates: Sequence[Condition], now: str, generation: int | None
) -> list[dict[str, Any]]:
    """The whole new list (a merge patch replaces lists). Types not updated are kept as they are; Reconciling
    and Stalled are derived afresh from the result."""
    old_by_type = {c.get("type"): c for c in current or () if c.get("type")}
    by_type = {t: dict(c) for t, c in old_by_type.items() if t not in KSTATUS_TYPES}
    for cond in updates:
        by_type[cond.type] = _entry(cond, old_by_type.get(cond.type), now, generation)
    for cond in kstatus_conditions(list(by_type.values())):
        by_type[cond.type] = _entry(cond, old_by_type.get(cond.type), now, generation)
    order = ["Ready", "Degraded", "Reconciling", "Stalled"]
    return sorted(by_type.values(), key=lambda c: (order.index(c["type"]) if c["type"] in order else 9, c["type"]))


def _entry(cond: Condition, old: Mapping[str, Any] | None, now: str, generation: int | None) -> dict[str, Any]:
    moved = old is None or old.get("status") != cond.status
    entry: dict[str, Any] = {
        "type": cond.type,
        "status": cond.status,
        "reason": str(cond.reason),
        "message": cond.message,
        "lastTransitionTime": now if moved or old is None else old.get("lastTransitionTime", now),
    }
    if generation is not None:
        entry["observedGeneration"] = generation
    return entry


KSTATUS_TYPES = ("Reconciling", "Stalled")

# Problems only a person can clear (a spec fix, a withdrawn restore, another Kafka cluster): kstatus "Stalled".
NEEDS_A_PERSON = frozenset({
    Reason.INVALID_SPEC,
    Reason.FAILED,
    Reason.PARTIALLY_FAILED,
    Reason.GROUP_NOT_FOUND,
    Reason.GROUP_CHANGED,
    Reason.PROTECTED,
    Reason.CLUSTER_MISMATCH,
    Reason.RESTORE_INCOMPLETE,
    Reason.SPEC_FROZEN,
    Reason.PLAN_REFUSED,
    Reason.PAUSE_TIMED_OUT,
    Reason.APPROVAL_REFUSED,
})


def kstatus_conditions(conditions: Iterable[Mapping[str, Any]]) -> list[Condition]:
    """Reconciling / Stalled from Ready and Degraded (an empty list when neither holds).

    Stalled: Ready or Degraded names a reason only a person can clear. Reconciling: otherwise, while the
    operator is still working towards Ready (a first run, a retry, a backup, a blocked restore). A deletion
    awaiting approval is neither: the operator has done all it can until someone approves it.
    """
    by_type = {c.get("type"): c for c in conditions}
    ready, degraded, progressing = by_type.get("Ready"), by_type.get("Degraded"), by_type.get("Progressing")
    troubled = [c for c, bad in ((degraded, "True"), (ready, "False")) if c is not None and c.get("status") == bad]
    for cond in troubled:
        if cond.get("reason") in NEEDS_A_PERSON:
            return _derived("Stalled", cond)
    if troubled and troubled[0].get("reason") != Reason.AWAITING_APPROVAL:
        return _derived("Reconciling", troubled[0])
    if ready is None and progressing is not None and progressing.get("status") == "True":
        return _derived("Reconciling", progressing)
    return []


def _derived(type_: str, source: Mapping[str, Any]) -> list[Condition]:
    """A kstatus condition carrying the reason and message of the condition it comes from."""
    reason = str(source.get("reason", ""))
    if reason not in Reason.__members__.values():  # not one of ours: leave kstatus to Ready alone
        return []
    return [Condition(type_, "True", Reason(reason), str(source.get("message", "")))]


def generation_of(body: Mapping[str, Any]) -> int | None:
    """An object's metadata.generation: what a condition's observedGeneration says it was written for."""
    value = (body.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None


def find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None
