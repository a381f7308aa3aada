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
)

from ..api import RESET_KIND
from .common import (
    APPROVAL_RULES,
    APPROVED_COLUMN,
    GROUP_ID_NOTE,
    KAFKA_CONNECTION,
    MAX_GROUP_LENGTH,
    MAX_PARTITIONS,
    MAX_TOPICS,
    WIDE_REQUEST_COLUMNS,
    Column,
    GroupId,
    Int64,
    ObjectName,
    Partition,
    PolicyRef,
    TopicName,
    approval_fields,
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
