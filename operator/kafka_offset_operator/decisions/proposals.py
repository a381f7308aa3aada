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

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offset_expiry.policy import Protection
from offset_expiry.rules import Reason

from ..model.api import API_VERSION, DELETION_KIND, GROUP, MANAGED_BY, POLICY_KIND, POLICY_LABEL
from ..model.offsets import TP, Committed, GroupInfo
from ..model.report import ScannedOffset
from .policy_spec import Mode
from .times import iso

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
_NEEDS_EMPTY = frozenset({Reason.EMPTY_GROUP, Reason.STANDALONE})


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
    if reason == Reason.STANDALONE and live.protocol_type:
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


def child_manifest(policy_body: Mapping[str, Any], owner: Mapping[str, Any], proposal: Proposal, mode: Mode,
                   scan_time_ms: int) -> dict[str, Any]:
    """The OffsetDeletion for one proposal: owned by the policy, using its connection (policyRef), approved
    only in Auto mode, carrying the scanned offsets so the deletion skips what was committed since."""
    meta = policy_body["metadata"]
    reasons = sorted(set(proposal.reasons.values()))
    return {
        "apiVersion": API_VERSION,
        "kind": DELETION_KIND,
        "metadata": {
            "name": child_name(meta["name"], proposal),
            "namespace": meta["namespace"],
            "labels": {**MANAGED_BY, POLICY_LABEL: meta["name"]},
            "annotations": {
                f"{GROUP}/group": proposal.group,
                f"{GROUP}/reasons": ",".join(reasons),
                f"{GROUP}/scan-time": iso(scan_time_ms),
            },
            "ownerReferences": [dict(owner)],
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


def children(policy_body: Mapping[str, Any], owner: Mapping[str, Any], kept: Sequence[Proposal], mode: Mode,
             scan_time_ms: int) -> list[dict[str, Any]]:
    """DryRun proposes nothing; Approve and Auto one OffsetDeletion per group."""
    if mode is Mode.DRY_RUN:
        return []
    return [child_manifest(policy_body, owner, p, mode, scan_time_ms) for p in kept]


def approve_existing(mode: Mode, child: Mapping[str, Any] | None, policy_body: Mapping[str, Any]) -> bool:
    """In Auto mode, a proposal this policy made earlier (in Approve mode) and that still waits is approved:
    Auto means the policy's proposals are approved. Rejecting a proposal is deleting it, so nothing a person
    decided is overridden. Only children this very policy owns are touched."""
    if mode is not Mode.AUTO or child is None or (child.get("spec") or {}).get("approved"):
        return False
    uid = (policy_body.get("metadata") or {}).get("uid")
    owners = (child.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("uid") == uid and o.get("kind") == POLICY_KIND for o in owners)
