"""ConsumerGroupOffsetPolicy's spec, written once: its CRD schema (model/crds.py, with the `kubectl explain`
texts and the CEL rules) and the value the operator acts on (decisions/policy_spec.parse_policy_spec) both
come from these dataclasses (kafka_offsets_model.typed_schema says how). The analysis part (groups, rules,
protect) is the shared core's (kafka_offsets_model.policy_schema), which the Spark job and policy files use
too; this file adds the operator's sections (kafka, mode, schedule, analysis, history, approval).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from kafka_offsets_model.policy_schema import (
    GroupsField,
    GroupsSpec,
    ProtectSpec,
    RulesSpec,
    at_least_rule,
    duration,
)
from kafka_offsets_model.typed_schema import Check, Default, Doc, Raw, Rule, rules

from .common import CONDITIONS, INT32_MAX, KAFKA_CONNECTION, MAX_NAME, Column, Count, Generation, Time

DEFAULT_FINISHED_DELETIONS_LIMIT = 20  # a policy's finished OffsetDeletions kept (spec.history)
MAX_FINISHED_DELETIONS_LIMIT = 1000  # each is an object in etcd; a longer history belongs in the backups
MAX_IMAGE_LENGTH = 1024
MIN_INTERVAL = "1m"  # decisions/policy_spec.MIN_INTERVAL_MS says the same in code
DEFAULT_INTERVAL = "1h"
DEFAULT_JOB_DEADLINE = "1h"


def _interval() -> dict[str, Any]:
    """spec.schedule.interval: a duration of at least a minute (each run reads all of __consumer_offsets)."""
    schema = duration(f"How often the analysis runs, besides on every spec change; at least {MIN_INTERVAL} (each "
                      "run reads all of __consumer_offsets).", DEFAULT_INTERVAL)
    schema["x-kubernetes-validations"] = [*schema["x-kubernetes-validations"], at_least_rule(60_000, MIN_INTERVAL)]
    return schema


Image = Annotated[str, Check(title="image reference (no spaces)", pattern=r"^\S+$", maxLength=MAX_IMAGE_LENGTH)]
ServiceAccount = Annotated[str, Check(title="Kubernetes name (lower-case letters, digits, - and .)",
                                      pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", maxLength=MAX_NAME)]
Cores = Annotated[int, Check(minimum=1, maximum=INT32_MAX), Default(1), Doc("CPU cores.")]
MEMORY_SIZE = Check(title="Spark memory size like 512m or 2g", pattern=r"^[0-9]+[kmgtKMGT]?$", maxLength=32)
Memory = Annotated[str, MEMORY_SIZE, Default("1g"), Doc("JVM memory, in Spark's notation (512m, 2g).")]
EXECUTOR_OVERHEAD_DOC = (
    "The executor pod's memory beyond the JVM heap (its own non-heap memory and its Python workers), in Spark's "
    "notation: spark.executor.memoryOverhead. Unset: Spark's own overhead for a PySpark pod, max(384 MiB, 0.4 x "
    "memory), plus 768 MiB per core for the analysis' Python workers.")
JOB_OVERHEAD_DOC = (
    "The pod's memory beyond the JVM heap (its own non-heap memory, the Python workers and job.py's process), in "
    "Spark's notation. Unset: max(384 MiB, 0.4 x memory), plus 768 MiB per core and 256 MiB for job.py.")


@dataclass(frozen=True, kw_only=True)
class ScheduleSpec:
    """When the analysis runs."""

    interval: Annotated[str, Raw(_interval())] = DEFAULT_INTERVAL


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """Settings for the Job engine."""

    image: Annotated[Image | None, Doc("The Spark job image (images/spark-job); unset: the operator's default.")] = None
    service_account: Annotated[ServiceAccount | None, Doc(
        "Service account of the Job's pod (it writes the results ConfigMaps).")] = None
    cores: Cores = 1
    memory: Memory = "1g"
    memory_overhead: Annotated[str | None, MEMORY_SIZE, Doc(JOB_OVERHEAD_DOC)] = None
    deadline: Annotated[str, Raw(duration("The Job's activeDeadlineSeconds: a scan running longer fails.",
                                          DEFAULT_JOB_DEADLINE))] = DEFAULT_JOB_DEADLINE
    backoff_limit: Annotated[int, Check(minimum=0, maximum=10), Default(1), Doc(
        "Pods retried after a failure other than an input error (exit code 2, which fails the Job at once).")] = 1


@dataclass(frozen=True, kw_only=True)
class DriverSpec:
    """Resources of the Spark driver pod."""

    cores: Cores = 1
    memory: Memory = "1g"


@dataclass(frozen=True, kw_only=True)
class ExecutorSpec:
    """Resources and count of the Spark executor pods."""

    cores: Cores = 1
    memory: Memory = "1g"
    memory_overhead: Annotated[str | None, MEMORY_SIZE, Doc(EXECUTOR_OVERHEAD_DOC)] = None
    instances: Annotated[int, Check(minimum=1, maximum=INT32_MAX), Default(1), Doc("Number of executors.")] = 1


@dataclass(frozen=True, kw_only=True)
class SparkApplicationSpec:
    """Settings for the SparkApplication engine."""

    image: Annotated[Image | None, Doc("An image with this project installed.")] = None
    service_account: Annotated[ServiceAccount | None, Doc("Service account of the driver.")] = None
    driver: DriverSpec = field(default_factory=DriverSpec)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)


@dataclass(frozen=True, kw_only=True)
class AnalysisSpec:
    """Where the analysis of __consumer_offsets runs."""

    engine: Annotated[str | None, Check(enum=["Local", "Job", "SparkApplication"]), Doc(
        "Job runs the Spark job image in local mode in a Kubernetes Job of the policy's namespace. "
        "SparkApplication creates a sparkoperator.k8s.io/v1beta2 SparkApplication (kubeflow spark-operator) that "
        "runs the same job in the cluster. Local runs PySpark in local mode inside the operator (laptops and the "
        "demo; the operator image has no Spark). Unset: the operator's --default-engine (the install sets Job)."
    )] = None
    job: JobSpec = field(default_factory=JobSpec)
    broker_retention: Annotated[str | None, Raw(duration(
        "The broker's offsets.retention.minutes, when the operator may not read broker configs (DescribeConfigs). "
        "Read from the cluster when unset."))] = None
    spark_application: SparkApplicationSpec = field(default_factory=SparkApplicationSpec)


@dataclass(frozen=True, kw_only=True)
class HistorySpec:
    """How many of the policy's OffsetDeletions are kept once they are done. The policy's OffsetDeletions carry
    no ownerReference to it: deleting the policy deletes only those that never started (no backup taken);
    every other one stays, with its results."""

    finished_deletions_limit: Annotated[
        int, Check(minimum=0, maximum=MAX_FINISHED_DELETIONS_LIMIT), Default(DEFAULT_FINISHED_DELETIONS_LIMIT),
        Doc("Finished OffsetDeletions of this policy to keep (Succeeded, PartiallyFailed, Failed, Restored, with "
            "no restore pending), like a CronJob's successfulJobsHistoryLimit: after each run the oldest beyond it "
            "are deleted. Their offset backups are stored apart and stay.")] = DEFAULT_FINISHED_DELETIONS_LIMIT


@dataclass(frozen=True, kw_only=True)
class ApprovalSpec:
    """How this policy's changes are approved (besides spec.mode)."""

    separate_approver: Annotated[bool, Default(False), Doc(
        "Four eyes: whoever requested a change may not approve it. Copied into the policy's proposals "
        "(spec.separateApprover), where the install's ValidatingAdmissionPolicy refuses an approval by the "
        "requester; the operator also refuses to act on such an approval of any OffsetDeletion or OffsetReset "
        "whose policyRef names this policy. Not with mode Auto (the operator would approve its own "
        "proposals).")] = False


@rules(Rule("!has(self.approval) || !has(self.approval.separateApprover) || !self.approval.separateApprover "
            "|| !has(self.mode) || self.mode != 'Auto'",
            "four eyes cannot apply in mode Auto, where the operator approves its own proposals",
            ".approval.separateApprover"))
@dataclass(frozen=True, kw_only=True)
class OffsetPolicySpec:
    """What to analyse, by which rules, and what to do with the candidates."""

    kafka: Annotated[Mapping[str, Any], Raw(KAFKA_CONNECTION)]
    groups: GroupsField = field(default_factory=GroupsSpec)
    rules: RulesSpec = field(default_factory=RulesSpec)
    protect: ProtectSpec = field(default_factory=ProtectSpec)
    mode: Annotated[str, Check(enum=["DryRun", "Approve", "Auto"]), Default("DryRun"), Doc(
        "DryRun reports candidates (and what keep-alive would do) and writes nothing to Kafka, ever. Approve "
        "creates OffsetDeletions that wait for spec.approved. Auto creates approved OffsetDeletions. Every "
        "deletion backs up first. Keep-alive (protect.keepAlive) acts in Approve and Auto only.")] = "DryRun"
    schedule: Annotated[ScheduleSpec, Default({"interval": DEFAULT_INTERVAL})] = field(default_factory=ScheduleSpec)
    analysis: AnalysisSpec = field(default_factory=AnalysisSpec)
    history: Annotated[HistorySpec, Default({"finishedDeletionsLimit": DEFAULT_FINISHED_DELETIONS_LIMIT})] = field(default_factory=HistorySpec)
    approval: ApprovalSpec = field(default_factory=ApprovalSpec)


# -- status (written by the operator; typed for its schema)

@dataclass(frozen=True, kw_only=True)
class LastRun:
    """The last completed analysis."""

    start_time: Annotated[Time | None, Doc("When the run started.")] = None
    completion_time: Annotated[Time | None, Doc("When the run ended.")] = None
    engine: Annotated[str | None, Doc("Local, Job or SparkApplication.")] = None
    records_scanned: Annotated[Count | None, Doc("Records read from __consumer_offsets.")] = None
    skipped_records: Annotated[Count | None, Doc("Corrupt or unknown records, counted and skipped.")] = None
    groups_seen: Annotated[Count | None, Doc("Consumer groups found in the topic.")] = None
    offsets: Annotated[Count | None, Doc("Committed offsets found (after compaction).")] = None
    candidates: Annotated[Count | None, Doc("Offsets the policy's rules make candidates for deletion.")] = None
    candidates_by_reason: Annotated[Mapping[str, int] | None, Raw({
        "type": "object", "description": "Candidates per reason (EmptyGroup, UnsubscribedTopic, Standalone, ...).",
        "additionalProperties": {"type": "integer"}})] = None
    deletions_created: Annotated[Count | None, Doc("OffsetDeletions this run created (Approve and Auto modes).")] = None


@dataclass(frozen=True, kw_only=True)
class KafkaCluster:
    """The Kafka cluster spec.kafka reaches (its id, from Kafka's Metadata), read by each run for the generation
    it names. spec.protect.groups protects those groups on this cluster against every change the operator (or
    the reset and restore commands) would make, whoever asks."""

    id: Annotated[str | None, Check(maxLength=256), Doc("The cluster id.")] = None
    observed_generation: Annotated[int | None, Doc("The metadata.generation it was read for.")] = None


# (No docstring: it would be the description of each item.)
@dataclass(frozen=True, kw_only=True)
class TopCandidate:
    group: Annotated[str | None, Doc("Consumer group id.")] = None
    topics: Annotated[tuple[str, ...] | None, Doc("Candidate topics.")] = None
    partitions: Annotated[Count | None, Doc("Candidate partitions in the group.")] = None
    reason: Annotated[str | None, Doc("Why they are candidates.")] = None
    broker_expires_at: Annotated[Time | None, Doc("When the broker itself would expire the first of them.")] = None


@dataclass(frozen=True, kw_only=True)
class OffsetPolicyStatus:
    """Written by the operator."""

    observed_generation: Generation | None = None
    conditions: Annotated[Any, Raw(CONDITIONS)] = None
    last_run: LastRun | None = None
    next_run_time: Annotated[Time | None, Doc("When the next scheduled run is due.")] = None
    kafka_cluster: KafkaCluster | None = None
    top_candidates: Annotated[tuple[TopCandidate, ...] | None, Check(maxItems=20),
                              Doc("The groups with the most candidate offsets (at most 20).")] = None
    warnings: Annotated[tuple[Annotated[str, Check(maxLength=1000)], ...] | None, Check(maxItems=20), Doc(
        "Doubts about the spec found by the last run that do not stop it (at most 20): group patterns that look "
        "like regular expressions (patterns are globs: * ? [abc]) and patterns that matched none of the groups "
        "with committed offsets.")] = None


# `kubectl get consumergroupoffsetpolicies` (model/crds.py adds Age)
COLUMNS = (
    Column("Mode", ".spec.mode"),
    Column("Last Run", ".status.lastRun.completionTime"),
    Column("Candidates", ".status.lastRun.candidates"),
    Column("Ready", '.status.conditions[?(@.type=="Ready")].status'),
    Column("Engine", ".spec.analysis.engine", "The analysis engine of the runs.", 1),
    Column("Interval", ".spec.schedule.interval", "How often the analysis runs.", 1),
    Column("Deletions", ".status.lastRun.deletionsCreated", "OffsetDeletions the last run created (Approve, Auto).", 1),
    Column("Next Run", ".status.nextRunTime", "When the next scheduled run is due.", 1),
)
