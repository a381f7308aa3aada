"""What the OffsetDeletion and OffsetReset state machines (deletion_steps, reset_steps) share: the `Outcome`
a step returns, how conditions are merged into a status patch, one Event per change of a condition, and the
outcomes both kinds give in the same words (Kafka unreachable, spec back as approved, a retried problem
cleared), and the steps both take in the same way: a spec problem, the protecting pattern, the target
frozen at approval, a backup not stored, results bounded to fit the object, a status write refused, and the
phases both have. Each kind keeps its own wording where it has one: the functions here take the message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_offsets_model.policy import Protection

from ..model.reasons import Reason
from .conditions import Condition, find, merge_conditions

# Phases (status.phase) both kinds have; all but Pending are also the Ready condition's reason in that phase.
PENDING = "Pending"
AWAITING = Reason.AWAITING_APPROVAL.value
RUNNING = Reason.RUNNING.value
SUCCEEDED = Reason.SUCCEEDED.value
PARTIALLY_FAILED = Reason.PARTIALLY_FAILED.value
FAILED = Reason.FAILED.value

# Results that fit the object (bounded_results): one object, spec and status, must stay under etcd's 1.5 MiB
# and a status write under the API server's 3 MiB request limit, and a deletion of every committed partition
# of its topics (or a reset of every partition of a group) may touch any number of partitions.
RESULTS_LIMIT = 1000  # per-partition result entries kept as they are
RESULTS_BUDGET = 256 * 1024  # bytes of JSON for status.results, and again for status.restoreResults
SAMPLE_PER_KIND = 20  # past the limit: examples of each (status, Kafka error) kept before any others


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


# -- what both kinds do with a spec, a target, a backup and their results


def spec_problem(
    status: Mapping[str, Any], field_path: str, problem: str, reason: Reason, now: str, generation: int | None
) -> Outcome:
    """A spec (or a Secret/policy it names) the operator cannot use: say which field, wait for a fix."""
    message = f"{field_path}: {problem}"
    degraded = Condition("Degraded", "True", reason, message)
    patch = conds(status, now, generation, Condition("Ready", "False", reason, message), degraded)
    if not status.get("phase"):
        patch["phase"] = PENDING
    return Outcome(patch, events_on_change(status, degraded, Event("Warning", reason, message)))


def protecting_pattern(protection: Protection, group: str) -> str | None:
    """The first of a policy's protect.groups patterns that matches `group`, if any."""
    return next((p for p in protection.groups if Protection(groups=(p,)).protects(group)), None)


def target_of(spec: Mapping[str, Any], kafka: Mapping[str, Any], cluster_id: str | None,
              bootstrap_servers: str) -> dict[str, Any]:
    """What is acted on, frozen at approval: the cluster (id, the brokers reached, and the connection as
    written, Secrets and a Strimzi cluster by reference only), the group, and the approved spec. Later steps
    and restore use this, never the current spec."""
    return {
        "clusterId": cluster_id,
        "bootstrapServers": bootstrap_servers,
        "group": spec.get("group"),
        "kafka": dict(kafka),
        "spec": {k: v for k, v in spec.items() if k not in ("restore", "approved")},
    }


def backup_not_stored(status: Mapping[str, Any], message: str, retry_seconds: float, now: str,
                      generation: int | None) -> Outcome:
    """No backup, no change: the store refused or read back something else. Retried."""
    text = f"{message}; nothing was changed in Kafka; retrying every {retry_seconds:g}s"
    degraded = Condition("Degraded", "True", Reason.BACKUP_NOT_STORED, text)
    return Outcome(conds(status, now, generation, degraded),
                   events_on_change(status, degraded, Event("Warning", Reason.BACKUP_NOT_STORED, text)))


def bounded_results(
    previous: Sequence[Mapping[str, Any]], previous_summary: Mapping[str, Any] | None,
    new: Sequence[Mapping[str, Any]], done: str, limit: int = RESULTS_LIMIT, budget: int = RESULTS_BUDGET,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Results as they go into the status, and their summary (None while every entry fits).

    Past `limit` entries or `budget` bytes, the `done` ones (Deleted, Restored) are summed per topic
    (`{topic, status, count}`: restore reads those topics' partitions from the stored backup), and of the
    others a sample stays: up to SAMPLE_PER_KIND of each status and Kafka error first, then as many more as
    fit. The summary counts every partition by status and by error. `previous` may itself be a sample
    (`previous_summary` counts it all)."""
    merged = [dict(r) for r in previous] + [dict(r) for r in new]
    if previous_summary is None and len(merged) <= limit and json_size(merged) <= budget:
        return merged, None
    tally = summarize_results(new, previous_summary if previous_summary is not None else summarize_results(previous))
    per_topic: dict[str, int] = {}
    others = []
    for r in merged:
        if r["status"] == done:
            per_topic[r["topic"]] = per_topic.get(r["topic"], 0) + int(r.get("count", 1))
        else:
            others.append(r)
    verb = done.lower()
    out = [{"topic": t, "status": done, "message": f"{n} partitions {verb}", "count": n}
           for t, n in sorted(per_topic.items())]
    seen: dict[tuple[str, str], int] = {}
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for r in others:
        kind = (r["status"], str(r.get("error", "")))
        seen[kind] = seen.get(kind, 0) + 1
        (first if seen[kind] <= SAMPLE_PER_KIND else rest).append(r)
    used = json_size(out)
    for r in first + rest:
        size = json_size(r) + 1
        if len(out) >= limit + len(per_topic) or used + size > budget:
            break
        out.append(r)
        used += size
    tally["shown"] = len(out) - len(per_topic)
    tally["message"] = (f"{tally['partitions']} results: {len(per_topic)} topics' {verb} partitions are summed; "
                        f"{tally['shown']} other results shown, up to {SAMPLE_PER_KIND} of each status and error "
                        "first; byStatus and byError count them all")
    return out, tally


def write_refused(status: Mapping[str, Any], patch: Mapping[str, Any], message: str, now: str,
                  generation: int | None) -> dict[str, Any]:
    """The API server refused a status write for its size or content (413, 422, etcd's limit): the same
    patch without what can be large (per-partition results, the status' copy of the backup's offsets and of
    the approved spec), with the results counted in their summary and a WriteRefused condition. The step's
    facts (phase, backup name, target, counts, times) stay, so the state machine goes on from them."""
    small = {k: v for k, v in patch.items() if k not in ("results", "restoreResults", "conditions")}
    for name in ("results", "restoreResults"):
        if patch.get(name) is not None:
            summary = dict(patch.get(f"{name}Summary") or summarize_results(patch[name]))
            summary["shown"] = 0
            summary["message"] = f"{name} not stored: the API server refused the status write ({message[:200]})"
            small[name] = None
            small[f"{name}Summary"] = summary
    if isinstance(small.get("backup"), Mapping):
        small["backup"] = {**small["backup"], "offsets": None}
    if isinstance(small.get("target"), Mapping):
        small["target"] = {**small["target"], "spec": None}
    text = f"the status could not be written in full, so per-partition details were left out: {message}"
    small.update(conds(status, now, generation, Condition("Degraded", "True", Reason.WRITE_REFUSED, text)))
    return small


def summarize_results(results: Sequence[Mapping[str, Any]], start: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Counts per status and per Kafka error (a summed entry counts its `count`)."""
    by_status: dict[str, int] = dict((start or {}).get("byStatus") or {})
    by_error: dict[str, int] = dict((start or {}).get("byError") or {})
    total = int((start or {}).get("partitions") or 0)
    for r in results:
        n = int(r.get("count", 1))
        total += n
        by_status[r["status"]] = by_status.get(r["status"], 0) + n
        if r.get("error"):
            by_error[r["error"]] = by_error.get(r["error"], 0) + n
    return {"partitions": total, "byStatus": by_status, "byError": by_error}


def json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))
