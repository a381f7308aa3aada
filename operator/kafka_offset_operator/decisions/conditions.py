"""Kubernetes-style conditions: a list keyed by type whose lastTransitionTime moves only when status does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    """The whole new list (a merge patch replaces lists). Types not updated are kept as they are."""
    by_type = {c.get("type"): dict(c) for c in current or () if c.get("type")}
    for cond in updates:
        old = by_type.get(cond.type)
        moved = old is None or old.get("status") != cond.status
        new: dict[str, Any] = {
            "type": cond.type,
            "status": cond.status,
            "reason": str(cond.reason),
            "message": cond.message,
            "lastTransitionTime": now if moved or old is None else old.get("lastTransitionTime", now),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        by_type[cond.type] = new
    order = ["Ready", "Degraded"]
    return sorted(by_type.values(), key=lambda c: (order.index(c["type"]) if c["type"] in order else 9, c["type"]))


def find(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None
