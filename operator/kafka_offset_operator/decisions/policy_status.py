"""A policy run's status as plain functions: lastRun, nextRunTime, topCandidates and the conditions."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_offsets_model.policy import Policy, regex_pattern_warnings, unmatched_pattern_warnings

from ..model.reasons import Reason
from ..model.report import Report, ScannedOffset
from ..model.times import iso
from .conditions import Condition, find, merge_conditions
from .policy_spec import Mode
from .proposals import Skip

TOP_CANDIDATES = 20  # the CRD's maxItems for status.topCandidates
MAX_WARNINGS = 20  # the CRD's maxItems for status.warnings


@dataclass(frozen=True)
class RunSummary:
    """One finished run, as the status shows it."""

    engine: str
    start_ms: int
    completion_ms: int
    report: Report
    mode: Mode
    deletions_created: int = 0
    deletions_existing: int = 0
    skipped: tuple[Skip, ...] = ()
    keep_alive: Sequence[str] = field(default_factory=tuple)  # one line per keep-alive action or problem
    refused: Sequence[str] = ()  # one line per OffsetDeletion the API server refused (413, 422)
    warnings: Sequence[str] = ()  # one line per doubtful group pattern (policy_warnings)


def policy_warnings(policy: Policy, groups: Iterable[str]) -> list[str]:
    """What the analyze CLI warns about, for the status: group patterns are globs, so a pattern that looks
    like a regular expression (`^live-.*$`, `team-a.*`) surely matches less than meant; and a pattern that
    matched none of the groups with committed offsets in this run is likely a typo. Neither stops a run."""
    return [*regex_pattern_warnings(policy), *unmatched_pattern_warnings(policy, frozenset(groups))]


def top_candidates(candidates: Iterable[ScannedOffset], limit: int = TOP_CANDIDATES) -> list[dict[str, Any]]:
    """The groups with the most candidate partitions, then by name."""
    by_group: dict[str, list[ScannedOffset]] = defaultdict(list)
    for offset in candidates:
        by_group[offset.group].append(offset)
    ranked = sorted(by_group.items(), key=lambda item: (-len(item[1]), item[0]))[:limit]
    out = []
    for group, rows in ranked:
        entry: dict[str, Any] = {
            "group": group,
            "topics": sorted({r.topic for r in rows}),
            "partitions": len(rows),
            "reason": ",".join(sorted({r.reason for r in rows})),
        }
        expiries = [r.broker_expires_at for r in rows if r.broker_expires_at is not None]
        if expiries:
            entry["brokerExpiresAt"] = iso(min(expiries))
        out.append(entry)
    return out


def _ready_message(run: RunSummary) -> str:
    report = run.report
    groups = len({o.group for o in report.candidates})
    text = f"{len(report.candidates)} candidate offsets in {groups} groups"
    if run.mode is Mode.DRY_RUN:
        text += " (DryRun: nothing proposed)"
    else:
        text += f"; {run.deletions_created} OffsetDeletions created"
        if run.deletions_existing:
            text += f", {run.deletions_existing} already existed"
        text += " (approved)" if run.mode is Mode.AUTO else " (awaiting approval)"
    if run.skipped:
        counts = Counter(s.why for s in run.skipped)
        text += "; skipped after the live re-check: " + ", ".join(f"{n} {why}" for why, n in sorted(counts.items()))
    if run.keep_alive:
        text += "; keep-alive: " + "; ".join(run.keep_alive)
    if run.warnings:
        text += f"; {len(run.warnings)} {'warning' if len(run.warnings) == 1 else 'warnings'} about group patterns (status.warnings)"
    return text


def run_succeeded(status: Mapping[str, Any], run: RunSummary, next_run_ms: int, generation: int | None) -> dict[str, Any]:
    summary = run.report.summary
    now = iso(run.completion_ms)
    patch: dict[str, Any] = {
        "lastRun": {
            "startTime": iso(run.start_ms),
            "completionTime": now,
            "engine": run.engine,
            "recordsScanned": int(summary.get("recordsScanned", 0)),
            "skippedRecords": int(summary.get("skippedRecords", 0)),
            "groupsSeen": int(summary.get("groups", 0)),
            "offsets": int(summary.get("offsets", 0)),
            "candidates": len(run.report.candidates),
            "candidatesByReason": run.report.candidates_by_reason,
            "deletionsCreated": run.deletions_created,
        },
        "nextRunTime": iso(next_run_ms),
        "topCandidates": top_candidates(run.report.candidates),
        "warnings": [line[:1000] for line in run.warnings[:MAX_WARNINGS]],
        "conditions": merge_conditions(status.get("conditions"), [
            Condition("Ready", "True", Reason.ANALYSIS_SUCCEEDED, _ready_message(run)),
            Condition("Degraded", "True", Reason.WRITE_REFUSED, _refused_message(run.refused)) if run.refused
            else Condition("Degraded", "False", Reason.AS_EXPECTED, "the last analysis run succeeded"),
        ], now, generation),
    }
    if generation is not None:
        patch["observedGeneration"] = generation
    return patch


def _refused_message(refused: Sequence[str]) -> str:
    """Not retried: the same proposal is made again at the next scheduled run only."""
    return (f"the API server refused {len(refused)} OffsetDeletions (not retried before the next scheduled run): "
            + "; ".join(refused[:3]))[:2000]


def run_failed(status: Mapping[str, Any], reason: Reason, message: str, now_ms: int, retry_ms: int,
               generation: int | None) -> dict[str, Any]:
    """A failed run (Kafka unreachable, Spark failed, a Secret missing): Degraded with the reason, and the
    retry time as nextRunTime. lastRun keeps the last good run."""
    now = iso(now_ms)
    patch: dict[str, Any] = {
        "nextRunTime": iso(retry_ms),
        "conditions": merge_conditions(status.get("conditions"), [
            Condition("Ready", "False", reason, message),
            Condition("Degraded", "True", reason, f"{message} (retrying at {iso(retry_ms)})"),
        ], now, generation),
    }
    if generation is not None:
        patch["observedGeneration"] = generation
    return patch


def spec_invalid(status: Mapping[str, Any], field_path: str, problem: str, reason: Reason, now_ms: int,
                 generation: int | None) -> dict[str, Any]:
    """A spec the operator cannot run: nothing is retried until the spec changes (no crash loop)."""
    message = f"{field_path}: {problem}"
    patch: dict[str, Any] = {
        "nextRunTime": None,
        "conditions": merge_conditions(status.get("conditions"), [
            Condition("Ready", "False", reason, message),
            Condition("Degraded", "True", reason, f"{message}; fix the spec to run again"),
        ], iso(now_ms), generation),
    }
    if generation is not None:
        patch["observedGeneration"] = generation
    return patch


def kafka_cluster(status: Mapping[str, Any], cluster_id: str | None, generation: int | None) -> dict[str, Any]:
    """The patch recording which Kafka cluster the spec's connection reaches (decisions/protection.py reads
    it for this generation only), or {} when the status says so already."""
    recorded = {"id": cluster_id, "observedGeneration": generation}
    if cluster_id is None or generation is None or status.get("kafkaCluster") == recorded:
        return {}
    return {"kafkaCluster": recorded}


def ready_event(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, Reason, str] | None:
    """The Event a status write is worth (type, reason, message): one when the Ready condition's reason
    changes (a first run, a failure, a spec refused, a recovery), none for the same condition again (a retry,
    the next successful run), so `kubectl describe` tells what happened without one Event per run."""
    before, after = find(old.get("conditions"), "Ready"), find(new.get("conditions"), "Ready")
    if after is None or (before is not None and before.get("reason") == after.get("reason")):
        return None
    return ("Normal" if after.get("status") == "True" else "Warning", Reason(str(after.get("reason"))),
            str(after.get("message") or ""))


def running(status: Mapping[str, Any], engine: str, now_ms: int, generation: int | None) -> dict[str, Any]:
    """Shown while an analysis runs (a Progressing condition, as Deployments have)."""
    return {"conditions": merge_conditions(status.get("conditions"), [
        Condition("Progressing", "True", Reason.ANALYSIS_RUNNING, f"analysis running ({engine} engine) since {iso(now_ms)}"),
    ], iso(now_ms), generation)}


def settled(status: Mapping[str, Any], now_ms: int, generation: int | None) -> dict[str, Any]:
    return {"conditions": merge_conditions(status.get("conditions"), [
        Condition("Progressing", "False", Reason.IDLE, "no analysis running"),
    ], iso(now_ms), generation)}


def earliest_expiries(report: Report, limit: int) -> dict[tuple[str, str], int]:
    """(kind, group) -> when the broker expires the group's first offset (epoch ms), for the `limit` groups
    that expire first among the candidates and among the protected groups (kind "candidate", "protected"):
    what a dashboard and an alert on protected groups need, with a bounded number of series."""
    out: dict[tuple[str, str], int] = {}
    for kind, offsets in (("candidate", report.candidates), ("protected", report.protected)):
        first: dict[str, int] = {}
        for offset in offsets:
            if offset.broker_expires_at is not None:
                first[offset.group] = min(first.get(offset.group, offset.broker_expires_at), offset.broker_expires_at)
        for group, at in sorted(first.items(), key=lambda item: (item[1], item[0]))[:limit]:
            out[(kind, group)] = at
    return out
