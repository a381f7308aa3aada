"""The `spec` of an OffsetReset, validated into frozen values. Errors name the field to fix.

The CRD's own schema (model/crds.py) is checked first: types, required fields, kafka or policyRef, topic
names, one target. The target and the scope are then read by decisions/reset_plan.py, the reader the
`reset` command uses too, so the resource and the CLI accept the same targets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_offsets_model.durations import parse_duration_ms
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck

from ..model.api import RESET_KIND
from ..model.crds import spec_schema
from .reset_plan import ResetScope, ResetTarget, check_group, parse_scope, parse_target
from .workload_pause import DEFAULT_TIMEOUT_MS, Workload

_SPEC = SchemaCheck(spec_schema(RESET_KIND))


@dataclass(frozen=True)
class ResetSpec:
    group: str
    scope: ResetScope
    target: ResetTarget
    approved: bool = False
    kafka: Mapping[str, Any] | None = None
    policy_ref: str | None = None
    pause_workloads: tuple[Workload, ...] = ()  # scaled to zero around the commit (decisions/workload_pause.py)
    pause_timeout_ms: int = DEFAULT_TIMEOUT_MS
    pause_timeout: str = "5m"


def parse_reset_spec(spec: Mapping[str, Any] | None) -> ResetSpec:
    if spec is None:
        raise SpecError("spec", "is required")
    spec = _SPEC.check(spec, "spec")
    target = parse_target(spec["target"], "spec.target")
    if target.backup_namespace is not None:  # the schema allows no "/": an older CRD might
        raise SpecError("spec.target.fromBackup", "names a backup of this namespace: give its name alone")
    workloads = tuple(Workload(str(w["kind"]), str(w["name"])) for w in spec.get("pauseWorkloads") or ())
    if len(set(workloads)) != len(workloads):  # the CRD's rule says so too; an older CRD might not
        raise SpecError("spec.pauseWorkloads", "lists a workload twice")
    timeout = str(spec.get("pauseTimeout") or "5m")
    try:
        timeout_ms = parse_duration_ms(timeout)
    except ValueError as exc:
        raise SpecError("spec.pauseTimeout", str(exc)) from None
    return ResetSpec(
        pause_workloads=workloads,
        pause_timeout_ms=timeout_ms,
        pause_timeout=timeout,
        group=check_group(spec["group"], "spec.group"),
        scope=parse_scope(spec, "spec"),
        target=target,
        approved=spec.get("approved", False),
        kafka=spec.get("kafka"),
        policy_ref=(spec.get("policyRef") or {}).get("name"),
    )
