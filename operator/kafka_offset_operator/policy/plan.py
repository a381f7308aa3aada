"""What a policy run decides, as plain functions: which OffsetDeletions to propose after the live re-check,
what they look like, and the status to write. No I/O: the handler reads Kafka and Kubernetes and passes
the answers in.

The live re-check (BRIEF §5): the analysis reads a snapshot of __consumer_offsets, so before proposing
anything the operator asks Kafka again (DescribeGroups, OffsetFetch) and drops every partition whose
premise no longer holds: committed since the scan, no longer committed, a group that got members, a topic
a live member subscribes to. The OffsetDeletion re-checks once more right before it deletes
(spec.expectedOffsets), so a commit that lands after the proposal is skipped as well.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from offset_expiry.policy import Protection

from ..deletion.conditions import Condition, merge_conditions
from ..kafka_admin import TP, Committed, GroupInfo
from .results import Report, ScannedOffset
from .spec import Mode

API_GROUP = "kafkaoffsets.dev"
API_VERSION = f"{API_GROUP}/v1alpha1"
POLICY_LABEL = f"{API_GROUP}/policy"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kafka-offset-operator"}
TOP_CANDIDATES = 20  # the CRD's maxItems for status.topCandidates
MAX_NAME = 63  # children's names stay valid label values

# Why a scanned candidate partition is not proposed.
PROTECTED = "Protected"
NOT_COMMITTED = "NoLongerCommitted"
COMMITTED_SINCE_SCAN = "CommittedSinceScan"
GROUP_ACTIVE = "GroupHasMembers"
SUBSCRIBED = "SubscribedByLiveMember"
SUBSCRIPTION_UNKNOWN = "SubscriptionUnknown"
NOT_SIMPLE = "NoLongerStandalone"

# Reasons whose premise is a group without members.
_NEEDS_EMPTY = frozenset({"EmptyGroup", "Standalone"})


def iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str | None) -> int | None:
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


# -- proposals


@dataclass(frozen=True)
class Proposal:
    """The candidate offsets of one group: one OffsetDeletion."""

    group: str
    group_type: str
    offsets: Mapping[TP, int]  # as the scan saw them
    reasons: Mapping[TP, str]
    broker_expires_at: int | None  # the earliest the broker itself would expire one of them

    @property
    def topics(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for topic, partition in sorted(self.offsets):
            out[topic].append(partition)
        return dict(out)


@dataclass(frozen=True)
class Skip:
    group: str
    topic: str
    partition: int
    why: str


@dataclass(frozen=True)
class Recheck:
    proposal: Proposal | None  # what is still worth proposing, or None
    skipped: tuple[Skip, ...] = ()


def proposals(candidates: Iterable[ScannedOffset]) -> list[Proposal]:
    by_group: dict[str, list[ScannedOffset]] = defaultdict(list)
    for offset in candidates:
        if offset.candidate:
            by_group[offset.group].append(offset)
    out = []
    for group in sorted(by_group):
        rows = by_group[group]
        expiries = [r.broker_expires_at for r in rows if r.broker_expires_at is not None]
        out.append(Proposal(
            group=group,
            group_type=rows[0].group_type,
            offsets={r.tp: r.offset for r in rows},
            reasons={r.tp: r.reason for r in rows},
            broker_expires_at=min(expiries) if expiries else None,
        ))
    return out


def recheck(proposal: Proposal, live: GroupInfo, committed: Mapping[TP, Committed], protection: Protection) -> Recheck:
    """Keep only partitions still at their scanned offset whose premise still holds in the live group.

    A KIP-848 group is invisible to DescribeGroups (it answers Dead / GROUP_ID_NOT_FOUND): for those only
    the offsets are compared, and OffsetDelete itself refuses topics their members subscribe to
    (GROUP_SUBSCRIBED_TO_TOPIC, ModernGroup.isSubscribedToTopic)."""
    group = proposal.group
    if protection.protects(group):
        return Recheck(None, tuple(Skip(group, t, p, PROTECTED) for t, p in sorted(proposal.offsets)))
    classic = proposal.group_type == "classic"
    subscribed = live.subscribed_topics if live.active else frozenset()
    keep: dict[TP, int] = {}
    skipped: list[Skip] = []
    for tp in sorted(proposal.offsets):
        why = _why_not(proposal, tp, live, committed.get(tp), subscribed, classic)
        if why is None:
            keep[tp] = proposal.offsets[tp]
        else:
            skipped.append(Skip(group, tp[0], tp[1], why))
    if not keep:
        return Recheck(None, tuple(skipped))
    kept = Proposal(group, proposal.group_type, keep, {tp: proposal.reasons[tp] for tp in keep},
                    proposal.broker_expires_at)
    return Recheck(kept, tuple(skipped))


def _why_not(proposal: Proposal, tp: TP, live: GroupInfo, now: Committed | None,
             subscribed: frozenset[str] | None, classic: bool) -> str | None:
    if now is None:
        return NOT_COMMITTED
    if now.offset != proposal.offsets[tp]:
        return COMMITTED_SINCE_SCAN
    if not classic:
        return None
    reason = proposal.reasons[tp]
    if reason in _NEEDS_EMPTY and live.active:
        return GROUP_ACTIVE
    if reason == "Standalone" and live.protocol_type:
        return NOT_SIMPLE
    if live.state in ("PreparingRebalance", "CompletingRebalance"):
        return SUBSCRIPTION_UNKNOWN
    if subscribed is None:
        return SUBSCRIPTION_UNKNOWN
    if tp[0] in subscribed:
        return SUBSCRIBED
    return None


# -- the OffsetDeletions


def child_name(policy: str, proposal: Proposal) -> str:
    """Deterministic: the same group with the same scanned offsets gets the same name, so a re-run (or a
    second operator visit) finds the existing OffsetDeletion instead of making another."""
    content = json.dumps([proposal.group, sorted([t, p, o] for (t, p), o in proposal.offsets.items())])
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]
    prefix = policy[: MAX_NAME - len(digest) - 1].rstrip("-.")
    return f"{prefix}-{digest}"


def owner_reference(policy_body: Mapping[str, Any]) -> dict[str, Any]:
    meta = policy_body.get("metadata") or {}
    return {
        "apiVersion": policy_body.get("apiVersion", API_VERSION),
        "kind": policy_body.get("kind", "ConsumerGroupOffsetPolicy"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": False,
    }


def child_manifest(policy_body: Mapping[str, Any], proposal: Proposal, mode: Mode, scan_time_ms: int) -> dict[str, Any]:
    """The OffsetDeletion for one proposal: owned by the policy, using its connection (policyRef), approved
    only in Auto mode, carrying the scanned offsets so the deletion skips what was committed since."""
    meta = policy_body["metadata"]
    reasons = sorted(set(proposal.reasons.values()))
    return {
        "apiVersion": API_VERSION,
        "kind": "OffsetDeletion",
        "metadata": {
            "name": child_name(meta["name"], proposal),
            "namespace": meta["namespace"],
            "labels": {**MANAGED_BY, POLICY_LABEL: meta["name"]},
            "annotations": {
                f"{API_GROUP}/group": proposal.group,
                f"{API_GROUP}/reasons": ",".join(reasons),
                f"{API_GROUP}/scan-time": iso(scan_time_ms),
            },
            "ownerReferences": [owner_reference(policy_body)],
        },
        "spec": {
            "policyRef": {"name": meta["name"]},
            "group": proposal.group,
            "topics": [{"name": t, "partitions": ps} for t, ps in proposal.topics.items()],
            "expectedOffsets": [
                {"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(proposal.offsets.items())
            ],
            "approved": mode is Mode.AUTO,
        },
    }


def children(policy_body: Mapping[str, Any], kept: Sequence[Proposal], mode: Mode, scan_time_ms: int) -> list[dict[str, Any]]:
    """DryRun proposes nothing; Approve and Auto one OffsetDeletion per group."""
    if mode is Mode.DRY_RUN:
        return []
    return [child_manifest(policy_body, p, mode, scan_time_ms) for p in kept]


def approve_existing(mode: Mode, child: Mapping[str, Any] | None, policy_body: Mapping[str, Any]) -> bool:
    """In Auto mode, a proposal this policy made earlier (in Approve mode) and that still waits is approved:
    Auto means the policy's proposals are approved. Rejecting a proposal is deleting it, so nothing a person
    decided is overridden. Only children this very policy owns are touched."""
    if mode is not Mode.AUTO or child is None or (child.get("spec") or {}).get("approved"):
        return False
    uid = (policy_body.get("metadata") or {}).get("uid")
    owners = (child.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("uid") == uid and o.get("kind") == "ConsumerGroupOffsetPolicy" for o in owners)


# -- status


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
    proposed_groups: int = 0
    skipped: tuple[Skip, ...] = ()
    keep_alive: Sequence[str] = field(default_factory=tuple)  # one line per keep-alive action or problem


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
        "conditions": merge_conditions(status.get("conditions"), [
            Condition("Ready", "True", "AnalysisSucceeded", _ready_message(run)),
            Condition("Degraded", "False", "AsExpected", "the last analysis run succeeded"),
        ], now, generation),
    }
    if generation is not None:
        patch["observedGeneration"] = generation
    return patch


def run_failed(status: Mapping[str, Any], reason: str, message: str, now_ms: int, retry_ms: int,
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


def spec_invalid(status: Mapping[str, Any], field_path: str, problem: str, reason: str, now_ms: int,
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


def running(status: Mapping[str, Any], engine: str, now_ms: int, generation: int | None) -> dict[str, Any]:
    """Shown while an analysis runs (a Progressing condition, as Deployments have)."""
    return {"conditions": merge_conditions(status.get("conditions"), [
        Condition("Progressing", "True", "AnalysisRunning", f"analysis running ({engine} engine) since {iso(now_ms)}"),
    ], iso(now_ms), generation)}


def settled(status: Mapping[str, Any], now_ms: int, generation: int | None) -> dict[str, Any]:
    return {"conditions": merge_conditions(status.get("conditions"), [
        Condition("Progressing", "False", "Idle", "no analysis running"),
    ], iso(now_ms), generation)}
