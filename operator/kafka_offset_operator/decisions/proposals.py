"""What a policy run decides, as plain functions: which OffsetDeletions to propose after the live re-check,
what they look like, and what becomes of them (Auto's approval, the policy's deletion, its history limit).
No I/O: the handler reads Kafka and Kubernetes and passes the answers in.

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
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_offsets_model.codec import partition_for
from kafka_offsets_model.policy import Protection
from kafka_offsets_model.rules import OffsetReason

from ..model.api import API_VERSION, DELETION_KIND, GROUP, MANAGED_BY, POLICY_LABEL
from ..model.kinds.common import MAX_PARTITIONS, MAX_TOPICS
from ..model.offsets import TP, Committed, GroupInfo
from ..model.report import ScannedOffset
from ..model.times import iso
from .deletion_steps import RESTORED
from .policy_spec import Mode
from .step_outcomes import AWAITING, FAILED, PARTIALLY_FAILED, PENDING, SUCCEEDED

MAX_NAME = 63  # children's names stay valid label values
POLICY_UID = f"{GROUP}/policy-uid"  # on a policy's OffsetDeletions: the uid of the policy that made them

# OffsetDeletion phases (decisions/deletion_steps.py): still waiting (no status yet counts too), and final.
_WAITING = frozenset({None, PENDING, AWAITING})
_FINAL = frozenset({SUCCEEDED, PARTIALLY_FAILED, FAILED, RESTORED})

# Why a scanned candidate partition is not proposed.
PROTECTED = "Protected"
NOT_COMMITTED = "NoLongerCommitted"
COMMITTED_SINCE_SCAN = "CommittedSinceScan"
GROUP_ACTIVE = "GroupHasMembers"
SUBSCRIBED = "SubscribedByLiveMember"
SUBSCRIPTION_UNKNOWN = "SubscriptionUnknown"
NOT_SIMPLE = "NoLongerStandalone"
# Whole-group deletion (DeleteGroups: rules.staleGroups, and deletedTopics: Delete)
OTHER_OFFSETS = "GroupHasOtherOffsets"  # the group has live offsets the proposal does not cover
TOPIC_EXISTS = "TopicExistsAgain"  # a topic the scan saw deleted exists now
DELETED_TOPIC_REPORT_ONLY = "DeletedTopicReportOnly"  # see _recheck_deleted_topics
TOO_LARGE = "GroupTooLargeForOneDeletion"  # a whole group must fit one OffsetDeletion (MAX_PARTITIONS)

# Reasons whose premise is a group without members.
_NEEDS_EMPTY = frozenset({OffsetReason.EMPTY_GROUP, OffsetReason.STANDALONE})


# -- proposals


@dataclass(frozen=True)
class Proposal:
    """The candidate offsets of one group: one OffsetDeletion."""

    group: str
    group_type: str
    offsets: Mapping[TP, int]  # as the scan saw them
    reasons: Mapping[TP, str]
    broker_expires_at: int | None  # the earliest the broker itself would expire one of them
    delete_group: bool = False  # DeleteGroups for the whole group (the offsets are all it has)
    require_topics_deleted: bool = False  # ... and only while they are all of deleted topics
    commit_times: Mapping[TP, int] = field(default_factory=dict)  # each offset's commit timestamp, as scanned
    group_state: str = ""  # the group's state as scanned

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
            commit_times={r.tp: r.commit_timestamp for r in rows if r.commit_timestamp > 0},
            group_state=rows[0].group_state,
        ))
    return out


def recheck(proposal: Proposal, live: GroupInfo, committed: Mapping[TP, Committed], protection: Protection,
            topics: frozenset[str] | None = None) -> Recheck:
    """Keep only partitions still at their scanned offset whose premise still holds in the live group.
    `committed` is every offset the group has now; `topics` the cluster's topics now (None: unknown).

    Whole groups (DeleteGroups) are proposed for a stale group (StaleGroup) and for an Empty group whose
    offsets are all of deleted topics (DeletedTopic): only when the group has no members and its live
    offsets are exactly the proposal's (`_recheck_group`). Offsets of deleted topics in any other group are
    reported, not proposed: OffsetDelete cannot remove them (UNKNOWN_TOPIC_OR_PARTITION).

    A KIP-848 group is invisible to DescribeGroups (it answers Dead / GROUP_ID_NOT_FOUND): for those only
    the offsets are compared, and OffsetDelete itself refuses topics their members subscribe to
    (GROUP_SUBSCRIBED_TO_TOPIC, ModernGroup.isSubscribedToTopic)."""
    group = proposal.group
    if protection.protects(group):
        return Recheck(None, tuple(Skip(group, t, p, PROTECTED) for t, p in sorted(proposal.offsets)))
    if OffsetReason.STALE_GROUP in proposal.reasons.values():
        return _recheck_group(proposal, live, committed, None)
    deleted = {tp for tp, reason in proposal.reasons.items() if reason == OffsetReason.DELETED_TOPIC}
    if deleted:
        group_wide = _recheck_deleted_topics(proposal, live, committed, topics, deleted)
        if group_wide is not None:
            return group_wide
        reported = [Skip(group, t, p, NOT_COMMITTED if (t, p) not in committed else DELETED_TOPIC_REPORT_ONLY)
                    for t, p in sorted(deleted)]
        rest = {tp: o for tp, o in proposal.offsets.items() if tp not in deleted}
        if not rest:
            return Recheck(None, tuple(reported))
        others = recheck(replace(proposal, offsets=rest, reasons={tp: proposal.reasons[tp] for tp in rest}), live,
                         committed, protection, topics)
        return Recheck(others.proposal, (*reported, *others.skipped))
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
    kept = replace(proposal, offsets=keep, reasons={tp: proposal.reasons[tp] for tp in keep})
    return Recheck(kept, tuple(skipped))


def _recheck_group(proposal: Proposal, live: GroupInfo, committed: Mapping[TP, Committed],
                   topics: frozenset[str] | None, require_topics_deleted: bool = False) -> Recheck:
    """The whole group, or nothing: no members, and its live offsets exactly the scanned ones."""
    why = None
    if live.active:
        why = GROUP_ACTIVE
    elif set(committed) - set(proposal.offsets):
        why = OTHER_OFFSETS
    elif any(committed.get(tp) is None or committed[tp].offset != o for tp, o in proposal.offsets.items()):
        why = COMMITTED_SINCE_SCAN
    elif require_topics_deleted and topics is not None and {t for t, _ in committed} & topics:
        why = TOPIC_EXISTS
    elif len(proposal.offsets) > MAX_PARTITIONS or len(proposal.topics) > MAX_TOPICS:
        why = TOO_LARGE
    if why is not None:
        return Recheck(None, tuple(Skip(proposal.group, t, p, why) for t, p in sorted(proposal.offsets)))
    return Recheck(replace(proposal, delete_group=True, require_topics_deleted=require_topics_deleted))


def _recheck_deleted_topics(proposal: Proposal, live: GroupInfo, committed: Mapping[TP, Committed],
                            topics: frozenset[str] | None, deleted: set[TP]) -> Recheck | None:
    """Offsets of deleted topics: Kafka refuses OffsetDelete for a topic missing from its metadata
    (KafkaApis.handleOffsetDeleteRequest answers UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees the
    request), so they can only go with their whole group. That is proposed when they are all the Empty group
    has (with spec.requireTopicsDeleted, re-checked before DeleteGroups); None otherwise (the caller reports
    them, and proposes the group's other candidates as usual: once those are deleted, a later run finds the
    deleted topics' offsets all the group has left)."""
    if deleted != set(proposal.offsets) or set(committed) != deleted or live.active:
        return None
    result = _recheck_group(proposal, live, committed, topics, require_topics_deleted=True)
    return result if result.proposal is not None else None


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
    if reason == OffsetReason.STANDALONE and live.protocol_type:
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
    # The scanned commit times are part of the proposal: a group that committed the same offsets again (its
    # deletion was Skipped for it) and went stale again is a new proposal, not the finished one.
    offsets = sorted([t, p, o, *([proposal.commit_times[(t, p)]] if (t, p) in proposal.commit_times else [])]
                     for (t, p), o in proposal.offsets.items())
    # A whole-group deletion is another object than an OffsetDelete of the same offsets.
    content = json.dumps([proposal.group, offsets, "DeleteGroups"] if proposal.delete_group else [proposal.group, offsets])
    digest = hashlib.sha256(content.encode()).hexdigest()[:10]
    prefix = policy[: MAX_NAME - len(digest) - 1].rstrip("-.")
    return f"{prefix}-{digest}"


@dataclass(frozen=True)
class Approvals:
    """What a policy's proposals say about approval (decisions/approval.py): the operator's own user name as
    requester (and as approver in Auto mode, which approves them), and four eyes copied from the policy so
    the admission policy can compare requester and approver."""

    user: str | None = None
    separate_approver: bool = False

    def fields(self, mode: Mode) -> dict[str, Any]:
        out: dict[str, Any] = {"approved": mode is Mode.AUTO}
        if self.user:
            out["requestedBy"] = self.user
            if mode is Mode.AUTO:
                out["approvedBy"] = self.user
        if self.separate_approver:
            out["separateApprover"] = True
        return out

    def approve_patch(self) -> dict[str, Any]:
        """Auto's approval of a proposal that waits: approved, by the operator."""
        return {"spec": {"approved": True, **({"approvedBy": self.user} if self.user else {})}}


def child_manifest(policy_body: Mapping[str, Any], proposal: Proposal, mode: Mode, scan_time_ms: int,
                   approvals: Approvals = Approvals(), snapshot: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The OffsetDeletion for one proposal: using the policy's connection (policyRef), approved only in Auto
    mode, carrying the facts of the scan (spec.scan: the end offset the scan read of the group's
    __consumer_offsets partition, from the report's `snapshot` {partition: end offset}; each offset's commit
    timestamp and rule) so that right before deleting the operator reads only what the group wrote since and
    skips whatever changed, a re-commit of the same offset included (decisions/fresh_verdict.py).

    No ownerReference to the policy: Kubernetes would garbage-collect the child with its policy (a GitOps
    prune), finished deletions and their results included. Provenance is the policy label (which policy by
    name) and the POLICY_UID annotation (which incarnation of it); `on_policy_deleted` takes only the
    children that never started."""
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
                POLICY_UID: str(meta.get("uid") or ""),
            },
        },
        "spec": {
            "policyRef": {"name": meta["name"]},
            "group": proposal.group,
            "topics": [{"name": t, "partitions": ps} for t, ps in proposal.topics.items()],
            "expectedOffsets": [
                {"topic": t, "partition": p, "offset": o, "reason": proposal.reasons[(t, p)],
                 **({"commitTimestamp": proposal.commit_times[(t, p)]} if (t, p) in proposal.commit_times else {})}
                for (t, p), o in sorted(proposal.offsets.items())
            ],
            **({"scan": scan} if (scan := scan_facts(proposal, scan_time_ms, snapshot)) else {}),
            **approvals.fields(mode),
            **({"deleteGroup": True} if proposal.delete_group else {}),
            **({"requireTopicsDeleted": True} if proposal.require_topics_deleted else {}),
        },
    }


def scan_facts(proposal: Proposal, scan_time_ms: int, snapshot: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """spec.scan: the group's __consumer_offsets partition (abs(javaHashCode(groupId)) % partitions, as
    GroupCoordinatorService.partitionFor) and where the scan's snapshot of it ended; None without a snapshot."""
    if not snapshot:
        return None
    partition = partition_for(proposal.group, len(snapshot))
    end = snapshot.get(str(partition))  # the report keys partitions as JSON strings
    if end is None:
        return None
    return {"time": iso(scan_time_ms), "offsetsPartition": partition, "offsetsEndOffset": int(end),
            "groupType": proposal.group_type, **({"groupState": proposal.group_state} if proposal.group_state else {})}


REBASE_REASON = "KeepAliveRebase"


def rebase_manifest(policy_body: Mapping[str, Any], group: str, offsets: Mapping[TP, int], mode: Mode,
                    now_ms: int, approvals: Approvals = Approvals()) -> dict[str, Any] | None:
    """Keep-alive's rebase of a protected group as a proposal (Approve mode: docs/keep-alive.md says why an
    OffsetDeletion): deleteGroup and restore at once, with the live offsets as expectedOffsets, so it runs
    only if the group is still exactly as proposed. None when the group does not fit one OffsetDeletion."""
    proposal = Proposal(group, "classic", dict(offsets), dict.fromkeys(offsets, REBASE_REASON), None,
                        delete_group=True)
    if len(offsets) > MAX_PARTITIONS or len(proposal.topics) > MAX_TOPICS:
        return None
    manifest = child_manifest(policy_body, proposal, mode, now_ms, approvals)
    digest = hashlib.sha256(json.dumps([group, sorted([t, p, o] for (t, p), o in offsets.items()),
                                        REBASE_REASON]).encode()).hexdigest()[:10]
    prefix = policy_body["metadata"]["name"][: MAX_NAME - len(digest) - len("-rebase-")].rstrip("-.")
    manifest["metadata"]["name"] = f"{prefix}-rebase-{digest}"
    manifest["spec"].update(restore=True, rebase=True)
    return manifest


def rebase_state(child: Mapping[str, Any] | None, policy_body: Mapping[str, Any]) -> str:
    """Where a rebase proposal of this name stands: `missing`, `waiting` (for an approval), `under way`
    (approved, not finished), or `ended` (finished, or not this policy's). An ended one is not made again
    under the same name: the policy says so (a Warning each run) until it is deleted or trimmed."""
    if child is None:
        return "missing"
    if not belongs_to(child, policy_body) or finished(child):
        return "ended"
    return "under way" if (child.get("spec") or {}).get("approved") else "waiting"


def children(policy_body: Mapping[str, Any], kept: Sequence[Proposal], mode: Mode, scan_time_ms: int,
             approvals: Approvals = Approvals(), snapshot: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """DryRun proposes nothing; Approve and Auto one OffsetDeletion per group, or several for a group whose
    candidates do not fit one (`split`)."""
    if mode is Mode.DRY_RUN:
        return []
    return [child_manifest(policy_body, part, mode, scan_time_ms, approvals, snapshot) for p in kept
            for part in ([p] if p.delete_group else split(p))]


# One OffsetDeletion is one object: its spec, the status' copy of it (status.target.spec) and its bounded
# results (step_outcomes.RESULTS_BUDGET, twice, and as much for the backup's copy) stay under etcd's 1.5 MiB.
SPEC_BUDGET = 200 * 1024


def split(proposal: Proposal, max_partitions: int = MAX_PARTITIONS, max_topics: int = MAX_TOPICS,
          budget: int = SPEC_BUDGET) -> list[Proposal]:
    """A group's candidates as OffsetDeletions the API server accepts: each within the CRD's bounds (at most
    MAX_PARTITIONS partitions and MAX_TOPICS topics) and `budget` bytes of spec. Split in topic-partition
    order, so a re-run with the same candidates makes the same parts (and the same names: child_name)."""
    parts: list[dict[TP, int]] = []
    current: dict[TP, int] = {}
    topics: set[str] = set()
    size = 0
    for tp in sorted(proposal.offsets):
        offset = proposal.offsets[tp]
        entry = {"topic": tp[0], "partition": tp[1], "offset": offset, "reason": proposal.reasons.get(tp, ""),
                 "commitTimestamp": proposal.commit_times.get(tp, 0)}  # as child_manifest writes it
        cost = len(json.dumps(entry)) + len(str(tp[1])) + 2
        new_topic = tp[0] not in topics
        cost += len(json.dumps({"name": tp[0], "partitions": []})) if new_topic else 0
        if current and (len(current) >= max_partitions or (new_topic and len(topics) >= max_topics)
                        or size + cost > budget):
            parts.append(current)
            current, topics, size = {}, set(), 0
            cost += 0 if new_topic else len(json.dumps({"name": tp[0], "partitions": []}))
        current[tp] = offset
        topics.add(tp[0])
        size += cost
    if current:
        parts.append(current)
    if len(parts) <= 1:
        return [proposal]
    return [replace(proposal, offsets=part, reasons={tp: proposal.reasons[tp] for tp in part}) for part in parts]


def approve_existing(mode: Mode, child: Mapping[str, Any] | None, policy_body: Mapping[str, Any]) -> bool:
    """In Auto mode, a proposal this policy made earlier (in Approve mode) and that still waits is approved:
    Auto means the policy's proposals are approved. Rejecting a proposal is deleting it, so nothing a person
    decided is overridden. Only children of this very policy (label and uid annotation) are touched."""
    if mode is not Mode.AUTO or child is None or (child.get("spec") or {}).get("approved"):
        return False
    return belongs_to(child, policy_body) and not started(child)


# -- a policy's children over their life: provenance, deletion of the policy, history


def belongs_to(child: Mapping[str, Any], policy_body: Mapping[str, Any]) -> bool:
    """Made by this policy: its label names the policy, and its uid annotation (or, for a child made before
    children lost their ownerReference, an ownerReference) names this incarnation of it, not an earlier
    policy of the same name."""
    meta = child.get("metadata") or {}
    policy = policy_body.get("metadata") or {}
    uid = policy.get("uid")
    if not uid or (meta.get("labels") or {}).get(POLICY_LABEL) != policy.get("name"):
        return False
    if (meta.get("annotations") or {}).get(POLICY_UID) == uid:
        return True
    return any(o.get("uid") == uid for o in meta.get("ownerReferences") or ())


def started(child: Mapping[str, Any]) -> bool:
    """Whether the deletion has begun to act on Kafka (or may have): a backup was taken (status.backup, or a
    backupRef to the backup store), or its phase is past the wait (Running or a final phase), or it marked
    its OffsetDelete as sent. The phases are decisions/deletion_steps.py's; the approval alone does not
    start anything: an approved deletion still Pending or AwaitingApproval has taken no backup yet."""
    status = child.get("status") or {}
    if status.get("phase") not in _WAITING:
        return True
    return any(status.get(key) for key in ("backup", "backupRef", "deleteStartTime"))


def finished(child: Mapping[str, Any]) -> bool:
    """Done for good: a final phase (Succeeded, PartiallyFailed, Failed, Restored) with no restore asked and
    still to run. Only these count against the history limit."""
    status = child.get("status") or {}
    phase = status.get("phase")
    if phase not in _FINAL:
        return False
    restoring = phase in (SUCCEEDED, PARTIALLY_FAILED) and (child.get("spec") or {}).get("restore") \
        and not status.get("restoreTime")
    return not restoring


@dataclass(frozen=True)
class Cleanup:
    """What to do with a policy's children: delete some (with the resourceVersion they were seen at, so a
    child that changed meanwhile, e.g. was approved and started, is not deleted), and release others from
    an ownerReference to the policy that older versions of the operator set."""

    delete: tuple[tuple[str, str], ...] = ()  # (name, resourceVersion)
    release: tuple[tuple[str, dict[str, Any]], ...] = ()  # (name, JSON merge patch of the object)


def on_policy_deleted(items: Iterable[Mapping[str, Any]], policy_body: Mapping[str, Any]) -> Cleanup:
    """A deleted policy takes its unstarted proposals with it (nobody will approve them, and they would run
    with a connection of a policy that is gone); every child that started stays, with its results."""
    mine = [c for c in items if belongs_to(c, policy_body)]
    return Cleanup(
        delete=tuple(_key(c) for c in mine if not started(c)),
        release=_releases([c for c in mine if started(c)], policy_body),
    )


def history_overflow(items: Iterable[Mapping[str, Any]], policy_body: Mapping[str, Any], limit: int) -> Cleanup:
    """The policy's finished children beyond the newest `limit` (spec.history.finishedDeletionsLimit), oldest
    first, by completion time; and ownerReferences to release on the rest."""
    mine = [c for c in items if belongs_to(c, policy_body)]
    done = sorted((c for c in mine if finished(c)), key=_finished_at, reverse=True)
    drop = done[limit:]
    dropped = {_key(c)[0] for c in drop}
    return Cleanup(
        delete=tuple(_key(c) for c in reversed(drop)),
        release=_releases([c for c in mine if c["metadata"]["name"] not in dropped], policy_body),
    )


def _releases(items: Iterable[Mapping[str, Any]], policy_body: Mapping[str, Any]) -> tuple[tuple[str, dict[str, Any]], ...]:
    uid = (policy_body.get("metadata") or {}).get("uid")
    out = []
    for child in items:
        meta = child.get("metadata") or {}
        owners = list(meta.get("ownerReferences") or ())
        others = [o for o in owners if o.get("uid") != uid]
        if len(others) == len(owners):
            continue
        out.append((meta["name"], {"metadata": {"ownerReferences": others or None,
                                                 "annotations": {POLICY_UID: uid}}}))
    return tuple(out)


def _key(child: Mapping[str, Any]) -> tuple[str, str]:
    meta = child.get("metadata") or {}
    return meta["name"], str(meta.get("resourceVersion") or "")


def _finished_at(child: Mapping[str, Any]) -> tuple[str, str, str]:
    status = child.get("status") or {}
    meta = child.get("metadata") or {}
    when = status.get("restoreTime") or status.get("completionTime") or meta.get("creationTimestamp") or ""
    return str(when), str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")
