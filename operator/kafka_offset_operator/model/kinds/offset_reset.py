"""OffsetReset's spec, written once: its CRD schema (model/crds.py, with the `kubectl explain` texts and the
CEL rules) and the value the operator acts on (decisions/reset_spec.parse_reset_spec) both come from these
dataclasses (kafka_offsets_model.typed_schema says how). docs/offset-reset.md describes the kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from kafka_offsets_model.policy_schema import duration
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

from ..api import BACKUPS_SELECTOR, RESET_KIND
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
    ObjectName,
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

# The one-of-targets a reset moves a group's offsets to, in the order of kafka-consumer-groups.sh
# --reset-offsets (--to-earliest, --to-latest, --to-datetime, --by-duration, --shift-by, --to-offset,
# --from-file) plus a group's offsets (fromGroup).
RESET_TARGETS = ("earliest", "latest", "datetime", "duration", "shiftBy", "offset", "fromBackup", "fromGroup")
RESET_FROZEN_MESSAGE = ("spec is frozen once approved; create a new OffsetReset to move other offsets "
                        "(delete this one to cancel it before it commits)")

# spec.pauseWorkloads (docs/offset-reset.md "Consumers stopped and restarted for you"): the workloads an
# approved reset scales to zero, and back, through their scale subresource (an opt-in of the install's RBAC).
PAUSE_KINDS = ("Deployment", "StatefulSet")
MAX_PAUSE_WORKLOADS = 10
PAUSE_TIMEOUT = "5m"
_APPROVAL = approval_fields(RESET_KIND)


@rules(OneOfRequired(*RESET_TARGETS))
@dataclass(frozen=True, kw_only=True)
class ResetTargetSpec:
    """Where to move the committed offsets: exactly one of these. Targets are clamped to each partition's log
    (between its earliest and latest offset) as kafka-consumer-groups.sh clamps them."""

    earliest: Annotated[bool | None, Check(enum=[True]),
                        Doc("The log start offset of each partition (ListOffsets, earliest).")] = None
    latest: Annotated[bool | None, Check(enum=[True]),
                      Doc("The log end offset of each partition (ListOffsets, latest).")] = None
    datetime: Annotated[str | None, Check(format="date-time", maxLength=64,
                                          title="RFC 3339 time like 2026-11-25T08:00:00Z"),
                        Doc("The first offset whose record timestamp is at or after this time (ListOffsets by "
                            "timestamp); the log end offset if there is none.")] = None
    duration: Annotated[str | None, Raw(duration("As datetime, that long before now (when the plan is "
                                                 "computed)."))] = None
    shift_by: Annotated[int | None, Check(format="int64"),
                        Doc("Move each committed offset by this many (negative: back), then clamp.")] = None
    offset: Annotated[Int64 | None, Doc("This offset in every partition of the scope, then clamp.")] = None
    from_backup: Annotated[ObjectName | None, Doc(
        "The offsets of a backup of the backup store, by its ConfigMap's name in this namespace (an "
        "OffsetDeletion's or another OffsetReset's status.backup.name): the undo of that change. The backup "
        "must be of this group and of the cluster reached. With allTopics, every partition the backup "
        "holds.")] = None
    from_group: Annotated[GroupId | None, Doc(
        f"Copy the committed offsets of this other consumer group of the same cluster.{GROUP_ID_NOTE}")] = None

    def given(self) -> dict[str, Any]:
        """The one target given, as spec.target wrote it (what decisions/reset_plan.parse_target reads, the
        reader the `reset` command uses too)."""
        values = {"earliest": self.earliest, "latest": self.latest, "datetime": self.datetime,
                  "duration": self.duration, "shiftBy": self.shift_by, "offset": self.offset,
                  "fromBackup": self.from_backup, "fromGroup": self.from_group}
        return {name: value for name, value in values.items() if value is not None}


# (No docstrings on the item types below: a docstring would be the description of each item.)
@dataclass(frozen=True, kw_only=True)
class ResetTopic:
    name: TopicName
    partitions: Annotated[tuple[Partition, ...] | None, Check(minItems=1, maxItems=MAX_PARTITIONS),
                          Doc("Partitions to reset; every partition of the topic when omitted.")] = None


@dataclass(frozen=True, kw_only=True)
class PauseWorkload:
    kind: Annotated[str, Check(enum=list(PAUSE_KINDS)), Doc("Deployment or StatefulSet.")]
    name: Annotated[ObjectName, Doc("The workload's name, in this namespace.")]


@rules(
    OneOfRequired("kafka", "policyRef"),
    Rule("has(self.topics) != has(self.allTopics)", "set either topics or allTopics"),
    FrozenOnceApproved((), RESET_FROZEN_MESSAGE, RESET_KIND),
    *APPROVAL_RULES,
)
@dataclass(frozen=True, kw_only=True)
class OffsetResetSpec:
    """Move one consumer group's committed offsets to a target (an admin OffsetCommit), after a dry run, an
    approval and a backup."""

    kafka: Annotated[Mapping[str, Any] | None, Raw(KAFKA_CONNECTION)] = None
    policy: Annotated[PolicyRef | None, Json("policyRef"), Doc(
        "Use the Kafka connection of this ConsumerGroupOffsetPolicy (same namespace); its spec.protect.groups "
        "refuse a reset of a protected group.")] = None
    group: Annotated[GroupId, Doc(
        f"The consumer group whose offsets to move (at most {MAX_GROUP_LENGTH} characters). Kafka accepts the "
        "commit only while the group has no members: stop its consumers first.")]
    all_topics: Annotated[bool | None, Check(enum=[True]), Doc(
        "Every partition the group has committed offsets for (with fromBackup or fromGroup: every partition "
        "the backup or the other group holds). Give this or topics.")] = None
    topics: Annotated[
        tuple[ResetTopic, ...] | None,
        Check(minItems=1, maxItems=MAX_TOPICS),
        ListMap("name"),
        Rule(f"self.map(t, has(t.partitions) ? size(t.partitions) : 0).sum() <= {MAX_PARTITIONS}",
             f"lists more than {MAX_PARTITIONS} partitions in all: split the reset into several OffsetResets"),
        Doc(f"Topics to reset, each listed once, at most {MAX_TOPICS} topics and {MAX_PARTITIONS} listed "
            "partitions in all; a topic without partitions means all of its partitions. Give this or allTopics."),
    ] = None
    target: ResetTargetSpec
    pause_workloads: Annotated[
        tuple[PauseWorkload, ...],
        Check(maxItems=MAX_PAUSE_WORKLOADS),
        Rule("self.all(w, self.exists_one(v, v.kind == w.kind && v.name == w.name))", "lists a workload twice"),
        Doc(f"Deployments or StatefulSets of this namespace running the group's consumers (at most "
            f"{MAX_PAUSE_WORKLOADS}, each listed once). Once approved, the operator records each one's "
            "spec.replicas in status.pausedWorkloads, scales it to zero, waits for the group to become Empty "
            "(pauseTimeout), resets, and scales each back to the replicas it recorded, also when the reset fails "
            "or the OffsetReset is deleted. One someone scaled meanwhile is left as found. Needs the install's "
            "pause-workloads RBAC (get and patch of deployments/scale and statefulsets/scale)."),
    ] = ()
    pause_timeout: Annotated[str, Raw(duration(
        "With pauseWorkloads: how long to wait, once they are scaled to zero, for the group to become Empty; "
        f"past it the reset ends Failed (PauseTimedOut) and the workloads are scaled back. {PAUSE_TIMEOUT} when "
        "omitted."))] = PAUSE_TIMEOUT
    approved: Annotated[bool, Default(False), Doc(
        "A dry run until this is true: the operator shows the plan (status.plan) and changes nothing. Once true "
        "it stays true and the spec is frozen: the API server refuses an edit (delete the OffsetReset to cancel "
        "it before it commits).")] = False
    approved_by: Annotated[str | None, Raw(_APPROVAL["approvedBy"])] = None
    requested_by: Annotated[str | None, Raw(_APPROVAL["requestedBy"])] = None
    separate_approver: Annotated[bool | None, Raw(_APPROVAL["separateApprover"])] = None

    @property
    def policy_ref(self) -> str | None:
        return None if self.policy is None else self.policy.name


# -- status (written by the operator; typed for its schema)

Offset = Annotated[int, Doc("An offset.")]


# (No docstrings on the item types below: a docstring would be the description of each item.)
@dataclass(frozen=True, kw_only=True)
class PlanEntry:
    topic: Annotated[str | None, Doc("Topic name.")] = None
    partition: Annotated[int | None, Doc("Partition.")] = None
    current: Annotated[Offset | None, Doc("The committed offset now (absent: none committed).")] = None
    new: Annotated[Offset | None, Doc("The offset the reset commits.")] = None
    message: Annotated[str | None, Doc(
        "Why the new offset is what it is (clamped to the log, no offset at that time, ...).")] = None


@dataclass(frozen=True, kw_only=True)
class PlanStatus:
    """What the reset commits, per partition: the dry run's (before approval, recomputed when the spec
    changes), then the one computed at approval right before the backup, which is committed."""

    computed_at: Annotated[Time | None, Doc("When the plan was computed (OffsetFetch and ListOffsets).")] = None
    observed_generation: Annotated[int | None, Doc("The spec generation it is for.")] = None
    approved: Annotated[bool | None, Doc("True for the plan computed at approval.")] = None
    partitions: Annotated[Count | None, Doc("Partitions in the plan.")] = None
    changes: Annotated[Count | None, Doc("Partitions whose new offset differs from the current one.")] = None
    entries: Annotated[tuple[PlanEntry, ...] | None,
                       Doc("One entry per partition (up to 1000; the counts cover all).")] = None


@dataclass(frozen=True, kw_only=True)
class PausedWorkload:
    kind: Annotated[str | None, Doc("Deployment or StatefulSet.")] = None
    name: Annotated[str | None, Doc("The workload's name.")] = None
    replicas: Annotated[int | None, Doc("Its spec.replicas before the reset.")] = None
    state: Annotated[str | None, Check(enum=["Recorded", "ScaledDown", "Restored", "LeftAsFound", "Gone"]), Doc(
        "Recorded (replicas recorded, being scaled to zero); ScaledDown; Restored (back at its recorded "
        "replicas); LeftAsFound (someone scaled it meanwhile: left as it was); Gone (deleted meanwhile).")] = None
    message: Annotated[str | None, Doc("What was done, for people.")] = None


@dataclass(frozen=True, kw_only=True)
class Undo:
    """How to undo this reset: a new OffsetReset with target fromBackup of its backup."""

    manifest: Annotated[str | None, Doc(
        "The OffsetReset to apply (kubectl apply -f -), a dry run until approved.")] = None
    command: Annotated[str | None, Doc("The same with the CLI, which prints the plan; add --execute to commit.")] = None
    offset_deletion: Annotated[str | None, Doc(
        "When the reset gave partitions an offset the group did not have (a fromGroup partition it never read, "
        "say): the OffsetDeletion (kubectl apply -f -, approve it to act) that deletes those offsets while they "
        "are still at the reset's value. Kafka has no \"uncommit\", so the undo from the backup leaves "
        "them.")] = None


def _approved_spec() -> dict[str, Any]:
    return {"type": "object", "description": "The spec as approved (without approved).",
            "properties": {k: v for k, v in schema_of(OffsetResetSpec)["properties"].items() if k != "approved"}}


_OFFSET = {"type": "integer", "description": "An offset."}


@dataclass(frozen=True, kw_only=True)
class OffsetResetStatus:
    """Written by the operator."""

    observed_generation: Generation | None = None
    phase: Annotated[str | None, Doc("Where the reset is."), Check(
        enum=["Pending", "AwaitingApproval", "Running", "Succeeded", "PartiallyFailed", "Failed"])] = None
    conditions: Annotated[Any, Raw(CONDITIONS)] = None
    plan: PlanStatus | None = None
    start_time: Annotated[Time | None, Doc("When the approved reset started (the backup).")] = None
    completion_time: Annotated[Time | None, Doc("When the reset ended.")] = None
    commit_start_time: Annotated[Time | None, Doc(
        "Set just before the OffsetCommit is sent, so an operator that restarts mid-way knows the request may "
        "have been applied.")] = None
    reset: Annotated[Count | None, Doc("Partitions committed at their new offset.")] = None
    failed: Annotated[Count | None, Doc("Partitions Kafka refused to commit.")] = None
    results: Annotated[Any, Raw({
        "type": "array",
        "description": "One entry per partition of the plan, once committed.",
        "items": result_items(
            ["Reset", "Unchanged", "Skipped", "Failed"],
            "Reset; Unchanged (already at the new offset); Skipped (committed since the backup: left as is); "
            "Failed (see error).",
            "UNKNOWN_TOPIC_OR_PARTITION", "What the error means here.",
            "For very large resets (see resultsSummary), reset partitions of a topic are summed in one entry "
            "without a partition: how many.",
            between={"before": {**_OFFSET, "description": "The committed offset before (absent: none)."},
                     "after": {**_OFFSET, "description": "The committed offset after, as OffsetFetch reads it."}}),
    })] = None
    results_summary: Annotated[Any, Raw(results_summary("results"))] = None
    backup: Annotated[Any, Raw(backup_status(
        "The offsets committed before the reset, in a ConfigMap of the backup store (owned by nothing: it "
        f"outlives this OffsetReset; kubectl get configmaps -l {BACKUPS_SELECTOR})."))] = None
    paused_workloads: Annotated[tuple[PausedWorkload, ...] | None, Doc(
        "spec.pauseWorkloads as the operator handles them: each one's replicas, recorded before it was scaled to "
        "zero (the record every scale back uses, also after an operator restart).")] = None
    pause_start_time: Annotated[Time | None, Doc(
        "When the workloads' replicas were recorded; pauseTimeout counts from it.")] = None
    undo: Undo | None = None
    target: Annotated[Any, Raw(target_status(
        "What this reset acts on, recorded at approval and frozen: the cluster (id from Kafka's Metadata, and the "
        "connection, Secrets by reference only), the group and the approved spec. The commit uses it, never a "
        "later spec.", _approved_spec()))] = None


# `kubectl get offsetresets` (model/crds.py adds Age)
COLUMNS = (
    Column("Group", ".spec.group"),
    APPROVED_COLUMN,
    Column("Phase", ".status.phase"),
    Column("Changes", ".status.plan.changes"),
    Column("Reset", ".status.reset"),
    Column("Failed", ".status.failed"),
    *WIDE_REQUEST_COLUMNS,
)
