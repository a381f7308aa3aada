"""What the OffsetDeletion and OffsetReset state machines (deletion_steps, reset_steps) share: the `Outcome`
a step returns, how conditions are merged into a status patch, one Event per change of a condition, and the
outcomes both kinds give in the same words (Kafka unreachable, spec back as approved, a retried problem
cleared). Each kind keeps its own wording where it has one: the functions here take the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.reasons import Reason
from .conditions import Condition, find, merge_conditions

PENDING = "Pending"
AWAITING = Reason.AWAITING_APPROVAL.value


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: Reason
    message: str


@dataclass(frozen=True)
class Outcome:
    status: dict[str, Any] = field(default_factory=dict)  # a JSON merge patch of .status
    events: tuple[Event, ...] = ()


def conds(status: Mapping[str, Any], now: str, generation: int | None, *updates: Condition) -> dict[str, Any]:
    """A status patch with the conditions updated (the whole list: a merge patch replaces lists) and the
    generation they describe."""
    patch: dict[str, Any] = {"conditions": merge_conditions(status.get("conditions"), updates, now, generation)}
    if generation is not None:
        patch["observedGeneration"] = generation
    return patch


def events_on_change(status: Mapping[str, Any], cond: Condition, event: Event) -> tuple[Event, ...]:
    """One event per change of a condition, not one per retry."""
    old = find(status.get("conditions"), cond.type)
    if old is not None and (old.get("status"), old.get("reason")) == (cond.status, cond.reason):
        return ()
    return (event,)


def degraded_warning(status: Mapping[str, Any], reason: Reason, message: str, now: str, generation: int | None,
                     *also: Condition) -> tuple[dict[str, Any], tuple[Event, ...]]:
    """Degraded=True for `reason` (after the conditions in `also`), with a Warning the first time: the patch
    (for the caller to add to) and the events."""
    degraded = Condition("Degraded", "True", reason, message)
    return (conds(status, now, generation, *also, degraded),
            events_on_change(status, degraded, Event("Warning", reason, message)))


def own_spec_invalid(degraded: Mapping[str, Any], status: Mapping[str, Any], generation: int | None) -> bool:
    """InvalidSpec about this object's own spec (the message names a `spec.` field), for the generation
    it describes. One about the referenced policy's connection is not: editing the policy fixes it."""
    return (degraded.get("reason") == Reason.INVALID_SPEC and generation is not None
            and status.get("observedGeneration") == generation
            and str(degraded.get("message") or "").startswith("spec"))


def kafka_waiting(status: Mapping[str, Any], code: str, message: str, retry_seconds: float, now: str,
                  generation: int | None, *, approved: bool) -> Outcome:
    """Kafka unreachable or busy: nothing changed, try again later. An approved object that has not started
    says so in Ready too (it is no longer awaiting approval: it is waiting for Kafka)."""
    text = f"{code}: {message}; retrying every {retry_seconds:g}s"
    not_started = status.get("phase") in (None, PENDING, AWAITING)
    also = ([Condition("Ready", "False", Reason.KAFKA_UNAVAILABLE, f"approved; waiting for Kafka: {text}")]
            if approved and not_started else [])
    patch, events = degraded_warning(status, Reason.KAFKA_UNAVAILABLE, text, now, generation, *also)
    if not status.get("phase") or (approved and not_started):
        patch["phase"] = PENDING
    return Outcome(patch, events)


def protected(status: Mapping[str, Any], message: str, counter: str, now: str, generation: int | None,
              failed: str) -> Outcome:
    """The referenced policy protects the group: refused, approved or not. Final (phase `failed`, the kind's
    `counter` at 0): nothing was (or will be) changed."""
    patch, events = degraded_warning(status, Reason.PROTECTED, message, now, generation,
                                     Condition("Ready", "False", Reason.PROTECTED, message))
    patch.update({"phase": failed, "completionTime": now, counter: 0})
    return Outcome(patch, events)


def protection_unknown(status: Mapping[str, Any], message: str, now: str, generation: int | None) -> Outcome:
    """A policy whose patterns match the group has not recorded which Kafka cluster it reaches: nothing is
    changed until it has (its next run), retried (decisions/protection.py)."""
    return Outcome(*degraded_warning(status, Reason.PROTECTION_UNKNOWN, message, now, generation))


def protected_for_now(status: Mapping[str, Any], message: str, now: str, generation: int | None) -> Outcome:
    """A change asked for after the object's own change (a restore) to a group a policy protects: refused while
    the protection stands (the phase stays; retried)."""
    return Outcome(*degraded_warning(status, Reason.PROTECTED, message, now, generation))


def spec_frozen(status: Mapping[str, Any], message: str, now: str, generation: int | None) -> Outcome:
    """The spec changed after approval: the operator keeps acting on what was approved (the kind's message
    says where that is kept)."""
    return Outcome(*degraded_warning(status, Reason.SPEC_FROZEN, message, now, generation))


def spec_unfrozen(status: Mapping[str, Any], now: str, generation: int | None) -> Outcome:
    """The spec is as approved again: clear a SpecFrozen condition, if any."""
    degraded = find(status.get("conditions"), "Degraded")
    if degraded is None or degraded.get("reason") != Reason.SPEC_FROZEN:
        return Outcome()
    return Outcome(conds(status, now, generation, Condition("Degraded", "False", Reason.AS_EXPECTED, "")))


def settled(status: Mapping[str, Any], clears: frozenset[Reason], now: str, generation: int | None) -> Outcome:
    """Nothing to do: clear a retried problem (one of the kind's `clears`) left from an earlier attempt."""
    degraded = find(status.get("conditions"), "Degraded")
    if degraded is None or degraded.get("status") != "True" or degraded.get("reason") not in clears:
        return Outcome()
    return Outcome(conds(status, now, generation, Condition("Degraded", "False", Reason.AS_EXPECTED, "")))


def frozen_fields(spec: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
    """The spec fields that differ from what was approved (empty before approval). spec.approved and
    spec.restore (an OffsetDeletion's; an OffsetReset has none) may change."""
    approved = (status.get("target") or {}).get("spec")
    if not isinstance(approved, Mapping):
        return []
    keys = sorted((set(spec) | set(approved)) - {"restore", "approved"})
    return [f"spec.{k}" for k in keys if spec.get(k) != approved.get(k)]
