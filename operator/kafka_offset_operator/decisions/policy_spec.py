"""The `spec` of a ConsumerGroupOffsetPolicy as the operator reads it: the analysis part (groups, rules,
protect) is parsed by offset_expiry.policy, the one parser the Spark job also uses; mode, schedule and
analysis engine are parsed here. CRD defaults are applied here too, so a spec that skipped API-server
defaulting (an emulated cluster, an old CRD) means the same thing.

Every mistake raises SpecError naming the field (`spec.schedule.interval`), for a status condition.
The Kafka connection is resolved separately (decisions/connection_spec.py), because it reads Secrets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from offset_expiry.durations import parse_duration_ms
from offset_expiry.errors import SpecError
from offset_expiry.policy import Policy, parse_policy

DEFAULT_INTERVAL_MS = 3_600_000  # the CRD's default schedule.interval, 1h
MIN_INTERVAL_MS = 1_000  # a run per second is already absurd; below that is a typo
_SPARK_MEMORY = re.compile(r"^[0-9]+[kmgtKMGT]?$")
# Kubernetes names (RFC 1123 subdomain): what a serviceAccountName must look like.
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")




class Mode(StrEnum):
    DRY_RUN = "DryRun"
    APPROVE = "Approve"
    AUTO = "Auto"


class Engine(StrEnum):
    LOCAL = "Local"
    SPARK_APPLICATION = "SparkApplication"


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
class PolicySpec:
    policy: Policy  # groups, rules, protect: what the analysis applies
    kafka: Mapping[str, Any]
    mode: Mode = Mode.DRY_RUN
    interval_ms: int = DEFAULT_INTERVAL_MS
    engine: Engine = Engine.LOCAL
    broker_retention_ms: int | None = None
    spark: SparkAppSettings = SparkAppSettings()
    analysis_spec: Mapping[str, Any] = field(default_factory=dict)  # the canonical groups/rules/protect

    @property
    def keep_alive(self) -> bool:
        return self.policy.protect.keep_alive and bool(self.policy.protect.groups)


def parse_policy_spec(spec: Any) -> PolicySpec:
    if not isinstance(spec, Mapping):
        raise SpecError("spec", "is required")
    policy = parse_policy(spec)
    kafka = spec.get("kafka")
    if not isinstance(kafka, Mapping) or not kafka:
        raise SpecError("spec.kafka", "is required (at least bootstrapServers)")
    analysis = _section(spec, "analysis")
    engine = _enum(analysis.get("engine"), Engine, Engine.LOCAL, "spec.analysis.engine")
    retention = analysis.get("brokerRetention")
    return PolicySpec(
        policy=policy,
        kafka=kafka,
        mode=_enum(spec.get("mode"), Mode, Mode.DRY_RUN, "spec.mode"),
        interval_ms=_interval(_section(spec, "schedule").get("interval")),
        engine=engine,
        broker_retention_ms=None if retention is None else _positive(retention, "spec.analysis.brokerRetention"),
        spark=_spark(analysis.get("sparkApplication"), "spec.analysis.sparkApplication"),
        analysis_spec=policy.to_spec(),
    )


def _section(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = spec.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(f"spec.{name}", "must be an object")
    return value


def _enum(value: Any, kind: type[Mode] | type[Engine], default: Any, where: str) -> Any:
    if value is None:
        return default
    names = [m.value for m in kind]
    if value not in names:
        raise SpecError(where, f"{value!r} is not one of {', '.join(names)}")
    return kind(value)


def _positive(value: Any, where: str) -> int:
    try:
        ms = parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(where, str(exc)) from None
    if ms <= 0:
        raise SpecError(where, "must be longer than 0")
    return ms


def _interval(value: Any) -> int:
    if value is None:
        return DEFAULT_INTERVAL_MS
    ms = _positive(value, "spec.schedule.interval")
    if ms < MIN_INTERVAL_MS:
        raise SpecError("spec.schedule.interval", "must be at least 1s")
    return ms


def _spark(value: Any, where: str) -> SparkAppSettings:
    if value is None:
        return SparkAppSettings()
    if not isinstance(value, Mapping):
        raise SpecError(where, "must be an object")
    image = value.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image)):
        raise SpecError(f"{where}.image", f"{image!r} is not an image reference")
    account = value.get("serviceAccount")
    if account is not None and (not isinstance(account, str) or not _K8S_NAME.match(account)):
        raise SpecError(f"{where}.serviceAccount", f"{account!r} is not a Kubernetes name")
    return SparkAppSettings(
        image=image,
        service_account=account,
        driver=_pod(value.get("driver"), f"{where}.driver", executor=False),
        executor=_pod(value.get("executor"), f"{where}.executor", executor=True),
    )


def _pod(value: Any, where: str, *, executor: bool) -> PodResources:
    if value is None:
        return PodResources()
    if not isinstance(value, Mapping):
        raise SpecError(where, "must be an object")
    out = PodResources(
        cores=_count(value.get("cores", 1), f"{where}.cores"),
        memory=str(value.get("memory", "1g")),
        instances=_count(value.get("instances", 1), f"{where}.instances") if executor else 1,
    )
    if not _SPARK_MEMORY.match(out.memory):
        raise SpecError(f"{where}.memory", f"{out.memory!r} is not a size like 512m or 2g")
    return out


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(where, f"{value!r} is not a whole number >= 1")
    return value
