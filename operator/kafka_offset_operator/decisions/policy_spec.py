"""The `spec` of a ConsumerGroupOffsetPolicy as the operator reads it: checked against the CRD's own schema
(model/crds.py), then the analysis part (groups, rules, protect) is read by kafka_offsets_model.policy, the one
parser the Spark job also uses; mode, schedule and analysis engine are read here, with what a schema cannot
say (an interval of at least 1m, durations Kafka could hold). CRD defaults are applied here too, so a spec
that skipped API-server defaulting (an emulated cluster, an old CRD) means the same thing.

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
from kafka_offsets_model.openapi import SchemaCheck
from kafka_offsets_model.policy import Policy, checked_policy

from ..model.api import POLICY_KIND
from ..model.crds import DEFAULT_FINISHED_DELETIONS_LIMIT, spec_schema

_SPEC = SchemaCheck(spec_schema(POLICY_KIND))
DEFAULT_INTERVAL_MS = 3_600_000  # the CRD's default schedule.interval, 1h
MIN_INTERVAL_MS = 60_000  # each run reads all of __consumer_offsets; the CRD refuses less too (model/crds.py)


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
    spec = _SPEC.check(spec, "spec")
    policy = checked_policy(spec)  # the CRD's schema carries policy_schema's
    analysis = spec.get("analysis", {})
    retention = analysis.get("brokerRetention")
    interval = _duration(spec.get("schedule", {}).get("interval"), "spec.schedule.interval")
    if interval is not None and interval < MIN_INTERVAL_MS:
        raise SpecError("spec.schedule.interval", f"must be at least 1m, not {spec['schedule']['interval']}")
    spark = analysis.get("sparkApplication", {})
    mode = Mode(spec.get("mode", Mode.DRY_RUN))
    separate = bool(spec.get("approval", {}).get("separateApprover", False))
    if separate and mode is Mode.AUTO:
        raise SpecError("spec.approval.separateApprover", "four eyes cannot apply in mode Auto, where the operator "
                        "approves its own proposals")
    return PolicySpec(
        policy=policy,
        kafka=spec["kafka"],
        mode=mode,
        separate_approver=separate,
        interval_ms=DEFAULT_INTERVAL_MS if interval is None else interval,
        engine=Engine(analysis.get("engine", default_engine)),
        broker_retention_ms=_positive(retention, "spec.analysis.brokerRetention"),
        spark=SparkAppSettings(
            image=spark.get("image"),
            service_account=spark.get("serviceAccount"),
            driver=_pod(spark.get("driver", {})),
            executor=_pod(spark.get("executor", {})),
        ),
        job=_job(analysis.get("job", {})),
        analysis_spec=policy.to_spec(),
        finished_deletions_limit=spec.get("history", {}).get("finishedDeletionsLimit", DEFAULT_FINISHED_DELETIONS_LIMIT),
    )


def _job(value: Mapping[str, Any]) -> JobSettings:
    deadline = _positive(value.get("deadline"), "spec.analysis.job.deadline")
    return JobSettings(
        image=value.get("image"),
        service_account=value.get("serviceAccount"),
        resources=_pod(value),
        deadline_ms=DEFAULT_JOB_DEADLINE_MS if deadline is None else deadline,
        backoff_limit=value.get("backoffLimit", 1),
    )


def _duration(value: str | None, where: str) -> int | None:
    """A duration the schema let through, no longer than durations.MAX_DURATION_MS."""
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(where, str(exc)) from None


def _positive(value: str | None, where: str) -> int | None:
    """A duration the schema let through, longer than 0 and no longer than durations.MAX_DURATION_MS."""
    ms = _duration(value, where)
    if ms is None:
        return None
    if ms <= 0:
        raise SpecError(where, "must be longer than 0")
    return ms


def _pod(value: Mapping[str, Any]) -> PodResources:
    return PodResources(cores=value.get("cores", 1), memory=value.get("memory", "1g"), instances=value.get("instances", 1))
