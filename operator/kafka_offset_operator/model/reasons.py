"""Every reason the operator writes into a condition or an Event, in one place (docs/operator.md,
docs/offset-deletion.md and docs/offset-reset.md list them; a test keeps the lists and this enum the same).

kafka_offsets_model.errors.SpecError carries its reason as a plain string (the Spark job does not import the
operator); its default is INVALID_SPEC's value, and the operator only gives it members of this enum.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # -- both kinds
    AS_EXPECTED = "AsExpected"  # Degraded=False: nothing needs attention
    INVALID_SPEC = "InvalidSpec"  # a field cannot work; the message starts with its path; waits for a new spec
    SECRET_NOT_FOUND = "SecretNotFound"  # a Secret or key named in spec.kafka is missing; retried
    STRIMZI_NOT_READY = "StrimziNotReady"  # the Strimzi Kafka or KafkaUser is missing or not ready yet; retried
    KAFKA_UNAVAILABLE = "KafkaUnavailable"  # Kafka unreachable, or busy with the group (coordinator moving); retried
    KUBERNETES_API_ERROR = "KubernetesApiError"  # a Kubernetes API call failed; retried
    WRITE_REFUSED = "WriteRefused"  # the API server refused a write for its size or content (413, 422): not retried

    # -- ConsumerGroupOffsetPolicy
    ANALYSIS_SUCCEEDED = "AnalysisSucceeded"  # Ready=True: the last run succeeded; the message sums it up
    KAFKA_ERROR = "KafkaError"  # Kafka refused a request for good (with Kafka's error name)
    ANALYSIS_FAILED = "AnalysisFailed"  # the Local analysis failed (Spark's error in one line)
    ANALYSIS_INPUT_ERROR = "AnalysisInputError"  # the Local analysis refused its input
    SPARK_UNAVAILABLE = "SparkUnavailable"  # the Local analysis could not start Spark (no Java)
    SPARK_APPLICATION_FAILED = "SparkApplicationFailed"  # the SparkApplication failed or gave no usable results
    ANALYSIS_JOB_FAILED = "AnalysisJobFailed"  # the analysis Job failed (backoff, deadline) or gave no usable results
    INTERNAL_ERROR = "InternalError"  # an unexpected error (a bug; its traceback is logged); retried
    ANALYSIS_RUNNING = "AnalysisRunning"  # Progressing=True: a run is under way
    IDLE = "Idle"  # Progressing=False: no run under way
    OFFSET_DELETIONS_CREATED = "OffsetDeletionsCreated"  # Event: a run proposed OffsetDeletions
    KEEP_ALIVE_RECOMMITTED = "KeepAliveRecommitted"  # Event: a protected group's offsets were re-committed
    KEEP_ALIVE_REBASED = "KeepAliveRebased"  # Event: a protected group was rebased as a simple group
    KEEP_ALIVE_RESUMED = "KeepAliveResumed"  # Event: an interrupted rebase was finished
    KEEP_ALIVE_BLOCKED = "KeepAliveBlocked"  # Event: a protected group could not be kept alive (why in the message)
    KEEP_ALIVE_PROPOSED = "KeepAliveProposed"  # Event: Approve mode proposed a rebase (an OffsetDeletion to approve)

    # -- OffsetDeletion: its phases are also the Ready condition's reasons while it is in them
    AWAITING_APPROVAL = "AwaitingApproval"  # spec.approved is false; nothing read or changed in Kafka
    RUNNING = "Running"  # the backup is written; deleting
    SUCCEEDED = "Succeeded"  # every requested partition deleted, not committed, or skipped
    PARTIALLY_FAILED = "PartiallyFailed"  # some deleted, some refused by Kafka
    FAILED = "Failed"  # nothing deleted
    RESTORED = "Restored"  # the deleted offsets were committed back
    POLICY_NOT_FOUND = "PolicyNotFound"  # spec.policyRef names no policy in the namespace; retried
    GROUP_NOT_FOUND = "GroupNotFound"  # the group has neither members nor committed offsets
    GROUP_CHANGED = "GroupChanged"  # spec.deleteGroup: the live re-check found the group changed; not deleted
    RESTORE_BLOCKED = "RestoreBlocked"  # the group has members, so Kafka refuses the restore; retried
    RESTORE_INCOMPLETE = "RestoreIncomplete"  # some backed-up offsets could not be committed back
    BACKED_UP = "BackedUp"  # Event: the backup is written and the deletion starts
    PROTECTED = "Protected"  # a policy protects the group on its Kafka cluster: refused, nothing changed (final)
    PROTECTION_UNKNOWN = "ProtectionUnknown"  # a policy that may protect the group has no known cluster yet; retried
    SPEC_FROZEN = "SpecFrozen"  # the spec changed after approval: ignored, the approved target is acted on
    CLUSTER_MISMATCH = "ClusterMismatch"  # the connection reaches another cluster than the backup's: no restore
    BACKUP_NOT_STORED = "BackupNotStored"  # the backup store could not write or read back the backup; retried
    CANCELLED = "Cancelled"  # Event: the resource was deleted before its change was sent to Kafka
    DELETED_AFTER_CHANGE = "DeletedAfterChange"  # Event: deleted after its change; the backup stays
    APPROVAL_REFUSED = "ApprovalRefused"  # approved without a verified approvedBy, or by the requester (four eyes)

    # -- OffsetReset: its phases are OffsetDeletion's (AwaitingApproval ... Failed) and so are most reasons
    GROUP_HAS_MEMBERS = "GroupHasMembers"  # approved, but the group has members (named in the message); retried
    PLAN_REFUSED = "PlanRefused"  # the plan cannot be carried out (a partition that does not exist, ...)

    # -- OffsetReset with spec.pauseWorkloads (docs/offset-reset.md)
    PAUSING_WORKLOADS = "PausingWorkloads"  # workloads scaled to zero; waiting for the group to become Empty
    PAUSE_TIMED_OUT = "PauseTimedOut"  # the group kept members past pauseTimeout: Failed, workloads scaled back
    WORKLOAD_NOT_FOUND = "WorkloadNotFound"  # spec.pauseWorkloads names no such workload: nothing scaled; retried
    WORKLOAD_ACCESS_DENIED = "WorkloadAccessDenied"  # 403 on a workload's scale: the install's RBAC opt-in; retried
    WORKLOADS_PAUSED = "WorkloadsPaused"  # Event: replicas recorded, workloads scaled to zero
    WORKLOADS_RESTORED = "WorkloadsRestored"  # Event: workloads scaled back to their recorded replicas
    WORKLOAD_LEFT_AS_FOUND = "WorkloadLeftAsFound"  # Event: scaled by someone meanwhile (or gone): not touched
