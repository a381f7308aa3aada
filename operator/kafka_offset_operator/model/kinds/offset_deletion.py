"""OffsetDeletion's spec, written once: its CRD schema (model/crds.py, with the `kubectl explain` texts and
the CEL rules) and the value the operator acts on (decisions/deletion_spec.parse_spec) both come from these
dataclasses (kafka_offsets_model.typed_schema says how).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from kafka_offsets_model.typed_schema import (
    Check,
    Default,
    Doc,
    FrozenOnceApproved,
    Json,
    ListMap,
    OneOfRequired,
    Raw,
    Rule,
    rules,
    schema_of,
)

from ..api import BACKUPS_SELECTOR, DELETION_KIND
from ..offsets import TP
from .common import (
    APPROVAL_RULES,
    APPROVED_COLUMN,
    CONDITIONS,
    GROUP_ID_NOTE,
    KAFKA_CONNECTION,
    MAX_GROUP_LENGTH,
    MAX_PARTITIONS,
    MAX_TOPICS,
    WIDE_REQUEST_COLUMNS,
    Column,
    Count,
    Generation,
    GroupId,
    Int64,
    Partition,
    PolicyRef,
    Time,
    TopicName,
    approval_fields,
    backup_status,
    result_items,
    results_summary,
    target_status,
)

# What may change in an OffsetDeletion's spec once it is approved: only restore (everything else names what
# is acted on; `approved` itself only stays true). A field added to the spec later is frozen unless named here.
MUTABLE_ONCE_APPROVED = ("restore",)
FROZEN_MESSAGE = ("spec is frozen once approved: only spec.restore may change; create a new OffsetDeletion "
                  "to act on other offsets")

# -- whole-group deletion (DeleteGroups): spec.deleteGroup, spec.requireTopicsDeleted, status.groupResult
GROUP_DELETION_RULE = Rule("!has(self.requireTopicsDeleted) || !self.requireTopicsDeleted || "
                           "(has(self.deleteGroup) && self.deleteGroup)",
                           "applies only with deleteGroup: true", ".requireTopicsDeleted")
REBASE_RULE = Rule("!has(self.rebase) || !self.rebase || (has(self.deleteGroup) && self.deleteGroup && "
                   "has(self.restore) && self.restore && has(self.policyRef))",
                   "applies only with deleteGroup: true, restore: true and a policyRef", ".rebase")
_APPROVAL = approval_fields(DELETION_KIND)


# (No docstrings on the item types below: a docstring would be the description of each item.)
@dataclass(frozen=True, kw_only=True)
class TopicRequest:
    name: TopicName
    partitions: Annotated[tuple[Partition, ...] | None, Check(minItems=1, maxItems=MAX_PARTITIONS),
                          Doc("Partitions to delete; every committed partition when omitted.")] = None


@dataclass(frozen=True, kw_only=True)
class ExpectedOffset:
    topic: TopicName
    partition: Annotated[Partition, Doc("Partition.")]
    offset: Annotated[Int64, Doc("The offset the scan saw.")]
    commit_timestamp: Annotated[Int64 | None, Doc(
        "When the scan saw it committed (epoch ms): the commit the scan's verdict was drawn from.")] = None
    reason: Annotated[str | None, Check(maxLength=64), Doc(
        "The policy rule that made it a candidate (EmptyGroup, Standalone, UnsubscribedTopic, StaleGroup, "
        "DeletedTopic).")] = None


@dataclass(frozen=True, kw_only=True)
class ScanFacts:
    """Set by the policy that proposed this deletion: where its scan of __consumer_offsets ended for this
    group, and what it saw. Right before deleting, the operator reads the group's records written since
    (from offsetsEndOffset of partition offsetsPartition) and skips whatever changed: a re-commit, the
    same offset included, or the group's metadata rewritten (members, subscriptions)."""

    time: Annotated[str | None, Check(format="date-time", maxLength=64), Doc("When the scan ran.")] = None
    offsets_partition: Annotated[Partition, Doc("The group's __consumer_offsets partition.")]
    end_offset: Annotated[Int64, Json("offsetsEndOffset"),
                          Doc("The end offset of that partition the scan read up to (exclusive).")]
    group_type: Annotated[str | None, Check(maxLength=32), Doc(
        "The group's kind as the scan saw it: classic, consumer (KIP-848), streams.")] = None
    group_state: Annotated[str | None, Check(maxLength=32), Doc("The group's state as the scan saw it.")] = None


@rules(
    OneOfRequired("kafka", "policyRef"),
    FrozenOnceApproved(MUTABLE_ONCE_APPROVED, FROZEN_MESSAGE, DELETION_KIND),
    GROUP_DELETION_RULE,
    *APPROVAL_RULES,
    REBASE_RULE,
)
@dataclass(frozen=True, kw_only=True)
class DeletionSpec:
    """Offsets of one consumer group to delete now, with a backup that restore can re-commit."""

    kafka: Annotated[Mapping[str, Any] | None, Raw(KAFKA_CONNECTION)] = None
    policy: Annotated[PolicyRef | None, Json("policyRef"), Doc(
        "Use the Kafka connection of this ConsumerGroupOffsetPolicy (same namespace).")] = None
    group: Annotated[GroupId, Doc(
        f"The consumer group id (at most {MAX_GROUP_LENGTH} characters, Kafka's own limit).{GROUP_ID_NOTE}")]
    topics: Annotated[
        tuple[TopicRequest, ...],
        Check(minItems=1, maxItems=MAX_TOPICS),
        ListMap("name"),
        Rule(f"self.map(t, has(t.partitions) ? size(t.partitions) : 0).sum() <= {MAX_PARTITIONS}",
             f"lists more than {MAX_PARTITIONS} partitions in all: split the deletion into several OffsetDeletions"),
        Doc(f"Topics whose committed offsets to delete, each listed once: at most {MAX_TOPICS} topics and "
            f"{MAX_PARTITIONS} listed partitions in all, so the object and its per-partition results fit the API "
            "server's size limit."),
    ]
    # Offsets as a policy's scan saw them: a partition committed since is skipped, not deleted.
    expected_offsets: Annotated[
        tuple[ExpectedOffset, ...],
        Check(maxItems=MAX_PARTITIONS),
        ListMap("topic", "partition"),
        Doc("Committed offsets as a policy's scan saw them (set by the policy that created this deletion), one "
            f"per partition, at most {MAX_PARTITIONS}. A partition whose committed offset differs when the "
            "deletion runs was committed since the scan: it is Skipped, not deleted."),
    ] = ()
    scan: ScanFacts | None = None
    # spec.deleteGroup: DeleteGroups for the whole group, only while every offset it has is of a listed topic
    # (and, with require_topics_deleted, of a topic that no longer exists).
    delete_group: Annotated[bool, Default(False), Doc(
        "Delete the whole group (DeleteGroups: its offsets and the group itself) instead of the listed offsets, "
        "after a backup of every offset it has. Right before DeleteGroups the operator re-checks that the group "
        "has no members and that its committed offsets are exactly the backed-up ones, all of listed topics (and "
        "as in expectedOffsets, when given); otherwise nothing is deleted. Restore re-commits the backup, which "
        "recreates the group as a simple group (no protocol type) until its consumers join again.")] = False
    require_topics_deleted: Annotated[bool, Default(False), Doc(
        "With deleteGroup: delete the group only while every offset it has is of a topic that no longer exists "
        "(how a policy's deletedTopics: Delete removes offsets Kafka refuses to OffsetDelete).")] = False
    approved: Annotated[bool, Default(False), Doc(
        "Nothing is deleted until this is true. Once true it stays true, and the rest of the spec but restore is "
        "frozen: the API server refuses an edit (delete the OffsetDeletion to cancel it).")] = False
    restore: Annotated[bool, Default(False), Doc(
        "Re-commit the backed-up offsets (OffsetCommit). Kafka accepts this only while the group has no active "
        "members; until then the operator retries and says so in a condition.")] = False
    # keep-alive's rebase (deleteGroup + restore at once) of a group the policy protects
    rebase: Annotated[bool, Default(False), Doc(
        "Keep-alive's rebase of a protected group (docs/keep-alive.md), proposed by a policy in Approve mode: "
        "with deleteGroup and restore, the group is deleted and its backed-up offsets committed back at once, "
        "which makes it a simple group whose offsets expire by commit time. Allowed on a group the referenced "
        "policy protects (it keeps it alive). Right before DeleteGroups the operator also re-checks that the "
        "group still has a protocol type (a simple group needs no rebase).")] = False
    approved_by: Annotated[str | None, Raw(_APPROVAL["approvedBy"])] = None
    requested_by: Annotated[str | None, Raw(_APPROVAL["requestedBy"])] = None
    separate_approver: Annotated[bool | None, Raw(_APPROVAL["separateApprover"])] = None

    @property
    def policy_ref(self) -> str | None:
        return None if self.policy is None else self.policy.name

    @property
    def topic_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.topics)

    @functools.cached_property
    def expected(self) -> Mapping[TP, int]:
        return {(e.topic, e.partition): e.offset for e in self.expected_offsets}

    @functools.cached_property
    def commit_times(self) -> Mapping[TP, int]:
        """expectedOffsets[].commitTimestamp"""
        return {(e.topic, e.partition): e.commit_timestamp for e in self.expected_offsets
                if e.commit_timestamp is not None}

    @functools.cached_property
    def reasons(self) -> Mapping[TP, str]:
        """expectedOffsets[].reason"""
        return {(e.topic, e.partition): e.reason for e in self.expected_offsets if e.reason}


# -- status (written by the operator; typed for its schema)


@dataclass(frozen=True, kw_only=True)
class GroupResult:
    """With spec.deleteGroup: what became of the group (DeleteGroups)."""

    status: Annotated[str | None, Check(enum=["Deleted", "Failed", "Skipped"]), Doc(
        "Deleted; Failed (Kafka refused, see error); Skipped (the live re-check found the group changed since the "
        "backup, so DeleteGroups was not sent).")] = None
    error: Annotated[str | None, Doc("Kafka's error name, e.g. NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND.")] = None
    message: Annotated[str | None, Doc("What happened, for people.")] = None


# (No docstring: it would be the description of each item.)
@dataclass(frozen=True, kw_only=True)
class BackedUpOffset:
    topic: Annotated[str | None, Doc("Topic name.")] = None
    partition: Annotated[int | None, Doc("Partition.")] = None
    offset: Annotated[int | None, Doc("The committed offset.")] = None
    leader_epoch: Annotated[int | None, Doc("The committed leader epoch (-1 if none).")] = None
    metadata: Annotated[str | None, Doc("The commit's metadata string.")] = None


def _approved_spec() -> dict[str, Any]:
    """The deletion spec as approved: the same fields, without approved and restore, nothing required."""
    properties = {k: v for k, v in schema_of(DeletionSpec)["properties"].items() if k not in ("approved", "restore")}
    return {"type": "object", "properties": properties,
            "description": "The spec as approved (without approved and restore)."}


@dataclass(frozen=True, kw_only=True)
class OffsetDeletionStatus:
    """Written by the operator."""

    observed_generation: Generation | None = None
    phase: Annotated[str | None, Doc("Where the deletion is."), Check(enum=[
        "Pending", "AwaitingApproval", "Running", "Succeeded", "PartiallyFailed", "Failed", "Restored"])] = None
    conditions: Annotated[Any, Raw(CONDITIONS)] = None
    start_time: Annotated[Time | None, Doc("When the deletion started.")] = None
    completion_time: Annotated[Time | None, Doc("When the deletion ended.")] = None
    restore_time: Annotated[Time | None, Doc("When the backup was re-committed.")] = None
    delete_start_time: Annotated[Time | None, Doc(
        "Set just before the OffsetDelete request is sent, so an operator that restarts mid-way knows the request "
        "may have been applied (see docs/offset-deletion.md).")] = None
    deleted: Annotated[Count | None, Doc("Partitions whose offsets were deleted.")] = None
    failed: Annotated[Count | None, Doc("Partitions Kafka refused to delete.")] = None
    restored: Annotated[Count | None, Doc("Partitions whose backed-up offsets were committed back.")] = None
    results: Annotated[Any, Raw({
        "type": "array",
        "description": "One entry per requested partition.",
        "items": result_items(
            ["Deleted", "Failed", "Skipped", "NotCommitted"],
            "Deleted; Failed (see error); Skipped (committed since the scan); NotCommitted (there was nothing to "
            "delete).",
            "GROUP_SUBSCRIBED_TO_TOPIC", "What the error means here.",
            "For very large deletions (see resultsSummary), successful partitions of a topic are summed in one "
            "entry without a partition: how many."),
    })] = None
    results_summary: Annotated[Any, Raw(results_summary("results"))] = None
    group_result: GroupResult | None = None
    restore_results_summary: Annotated[Any, Raw(results_summary("restoreResults"))] = None
    restore_results: Annotated[Any, Raw({
        "type": "array",
        "description": "One entry per deleted partition, once a restore ran.",
        "items": result_items(
            ["Restored", "Skipped", "Failed"],
            "Restored; Skipped (the group committed this partition since the deletion, so it was left as is); "
            "Failed (see error).",
            "UNKNOWN_TOPIC_OR_PARTITION", "What happened here.",
            "For very large restores (see restoreResultsSummary), restored partitions of a topic are summed in one "
            "entry without a partition."),
    })] = None
    backup: Annotated[Any, Raw(backup_status(
        "What was committed before the deletion, kept for restore. The backup itself is a ConfigMap of the backup "
        "store (owned by nothing: it outlives this OffsetDeletion and its policy; kubectl get configmaps -l "
        f"{BACKUPS_SELECTOR}); the status names it and, up to 1000 partitions, copies its offsets.",
        {"type": "array", "items": schema_of(BackedUpOffset), "description": "The offsets."}))] = None
    target: Annotated[Any, Raw(target_status(
        "What this deletion acts on, recorded at approval and frozen: the cluster (id from Kafka's Metadata, and "
        "the connection, Secrets by reference only), the group and the approved spec. The delete and a restore "
        "use it, never a later spec.", _approved_spec()))] = None


# `kubectl get offsetdeletions` (model/crds.py adds Age)
COLUMNS = (
    Column("Group", ".spec.group"),
    APPROVED_COLUMN,
    Column("Phase", ".status.phase"),
    Column("Deleted", ".status.deleted"),
    Column("Failed", ".status.failed"),
    Column("Delete Group", ".spec.deleteGroup", "The whole group (DeleteGroups) rather than the listed offsets.", 1),
    Column("Restore", ".spec.restore", "The backup is to be (or was) re-committed.", 1),
    *WIDE_REQUEST_COLUMNS,
)
