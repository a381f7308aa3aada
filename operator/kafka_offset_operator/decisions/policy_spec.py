"""The `spec` of a ConsumerGroupOffsetPolicy as the operator reads it: checked against the CRD's own schema and
parsed with the same typed classes (model/kinds/consumer_group_offset_policy.py, whose analysis part is the
shared core's kafka_offsets_model.policy_schema), then the analysis part becomes kafka_offsets_model.policy's
Policy, the value the Spark job also uses; what a schema cannot say is checked here (an interval of at least
1m, durations Kafka could hold). The typed parse applies the CRD's defaults, so a spec that skipped
API-server defaulting (an emulated cluster, an old CRD) means the same thing.

Every mistake raises SpecError naming the field (`spec.schedule.interval`), for a status condition.
The Kafka connection is resolved separately (decisions/connection_spec.py), because it reads Secrets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafka_offsets_model.durations import parse_duration_ms
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck, without_cel_rules
from kafka_offsets_model.policy import Policy, policy_of
from kafka_offsets_model.typed_schema import parse, schema_of

from ..model.kinds.consumer_group_offset_policy import DEFAULT_FINISHED_DELETIONS_LIMIT, OffsetPolicySpec

_SPEC = SchemaCheck(without_cel_rules(schema_of(OffsetPolicySpec)))
DEFAULT_INTERVAL_MS = 3_600_000  # the CRD's default schedule.interval, 1h
MIN_INTERVAL_MS = 60_000  # each run reads all of __consumer_offsets; the CRD refuses less too (model/kinds/consumer_group_offset_policy.py)


class Mode(StrEnum):
    DRY_RUN = "DryRun"
    APPROVE = "Approve"
    AUTO = "Auto"


class Engine(StrEnum):
    LOCAL = "Local"
    JOB = "Job"
    SPARK_APPLICATION = "SparkApplication"


DEFAULT_JOB_DEADLINE_MS = 3_600_000  # the CRD's default analysis.job.deadline, 1h


@dataclass(frozen=True)
class PodResources:
    cores: int = 1
    memory: str = "1g"
    instances: int = 1  # executors only
    memory_overhead: str | None = None  # beyond the heap; None: spark_memory's rule (executors and the Job's pod)


@dataclass(frozen=True)
class SparkAppSettings:
    image: str | None = None  # None: the operator's default image (OperatorOptions.spark_image)
    service_account: str | None = None
    driver: PodResources = PodResources()
    executor: PodResources = PodResources()


@dataclass(frozen=True)
class JobSettings:
    """spec.analysis.job: the Job engine's pod (decisions/kube_job.py)."""

    image: str | None = None  # None: the operator's default image (OperatorOptions.spark_image)
    service_account: str | None = None
    resources: PodResources = PodResources()
    deadline_ms: int = DEFAULT_JOB_DEADLINE_MS
    backoff_limit: int = 1


@dataclass(frozen=True)
class PolicySpec:
    policy: Policy  # groups, rules, protect: what the analysis applies
    kafka: Mapping[str, Any]
    mode: Mode = Mode.DRY_RUN
    interval_ms: int = DEFAULT_INTERVAL_MS
    engine: Engine = Engine.LOCAL
    broker_retention_ms: int | None = None
    spark: SparkAppSettings = SparkAppSettings()
    job: JobSettings = JobSettings()
    analysis_spec: Mapping[str, Any] = field(default_factory=dict)  # the canonical groups/rules/protect
    finished_deletions_limit: int = DEFAULT_FINISHED_DELETIONS_LIMIT  # finished OffsetDeletions kept
    separate_approver: bool = False  # spec.approval.separateApprover: copied into the policy's proposals

    @property
    def keep_alive(self) -> bool:
        return self.policy.protect.keep_alive and bool(self.policy.protect.groups)

    @property
    def writes_to_kafka(self) -> bool:
        """Whether this policy may change anything in Kafka: not in DryRun, ever (keep-alive included)."""
        return self.mode is not Mode.DRY_RUN


def parse_policy_spec(spec: Any, default_engine: Engine = Engine.LOCAL) -> PolicySpec:
    """`default_engine`: the engine of a spec that names none (the operator's --default-engine: the choice is
    the operator's, per install, and the status' lastRun.engine says which one ran)."""
    if spec is None:
        raise SpecError("spec", "is required")
    typed = parse(OffsetPolicySpec, _SPEC.check(spec, "spec"))
    policy = policy_of(typed.groups, typed.rules, typed.protect)
    analysis = typed.analysis
    interval = _duration(typed.schedule.interval, "spec.schedule.interval")
    if interval < MIN_INTERVAL_MS:
        raise SpecError("spec.schedule.interval", f"must be at least 1m, not {typed.schedule.interval}")
    mode = Mode(typed.mode)
    separate = typed.approval.separate_approver
    if separate and mode is Mode.AUTO:
        raise SpecError("spec.approval.separateApprover", "four eyes cannot apply in mode Auto, where the operator "
                        "approves its own proposals")
    spark = analysis.spark_application
    return PolicySpec(
        policy=policy,
        kafka=typed.kafka,
        mode=mode,
        separate_approver=separate,
        interval_ms=interval,
        engine=Engine(analysis.engine or default_engine),
        broker_retention_ms=(None if analysis.broker_retention is None
                             else _positive(analysis.broker_retention, "spec.analysis.brokerRetention")),
        spark=SparkAppSettings(
            image=spark.image,
            service_account=spark.service_account,
            driver=PodResources(cores=spark.driver.cores, memory=spark.driver.memory),
            executor=PodResources(cores=spark.executor.cores, memory=spark.executor.memory,
                                  instances=spark.executor.instances, memory_overhead=spark.executor.memory_overhead),
        ),
        job=JobSettings(
            image=analysis.job.image,
            service_account=analysis.job.service_account,
            resources=PodResources(cores=analysis.job.cores, memory=analysis.job.memory,
                                   memory_overhead=analysis.job.memory_overhead),
            deadline_ms=_positive(analysis.job.deadline, "spec.analysis.job.deadline"),
            backoff_limit=analysis.job.backoff_limit,
        ),
        analysis_spec=policy.to_spec(),
        finished_deletions_limit=typed.history.finished_deletions_limit,
    )


def _duration(value: str, where: str) -> int:
    """A duration the schema let through, no longer than durations.MAX_DURATION_MS."""
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(where, str(exc)) from None


def _positive(value: str, where: str) -> int:
    """A duration the schema let through, longer than 0 and no longer than durations.MAX_DURATION_MS."""
    ms = _duration(value, where)
    if ms <= 0:
        raise SpecError(where, "must be longer than 0")
    return ms
