"""The `spec` of an OffsetReset, validated into frozen values. Errors name the field to fix.

The CRD's own schema, written by the same dataclasses (model/kinds/offset_reset.py), is checked first and
parsed with them: types, required fields, kafka or policyRef, topic names, one target. What follows is what a
schema cannot say; the target is read by decisions/reset_plan.py, the reader the `reset` command uses too, so
the resource and the CLI accept the same targets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_offsets_model.durations import parse_duration_ms
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck, without_cel_rules
from kafka_offsets_model.typed_schema import parse, schema_of

from ..model.kinds.offset_reset import PAUSE_TIMEOUT, OffsetResetSpec
from .reset_plan import ResetScope, ResetTarget, TopicScope, check_group, parse_target
from .workload_pause import DEFAULT_TIMEOUT_MS, Workload

_SPEC = SchemaCheck(without_cel_rules(schema_of(OffsetResetSpec)))


@dataclass(frozen=True)
class ResetSpec:
    """The typed spec with what the plan reads derived from it: the scope and the target as
    decisions/reset_plan.py (and the `reset` command) take them."""

    group: str
    scope: ResetScope
    target: ResetTarget
    approved: bool = False
    kafka: Mapping[str, Any] | None = None
    policy_ref: str | None = None
    pause_workloads: tuple[Workload, ...] = ()  # scaled to zero around the commit (decisions/workload_pause.py)
    pause_timeout_ms: int = DEFAULT_TIMEOUT_MS
    pause_timeout: str = PAUSE_TIMEOUT


def parse_reset_spec(spec: Mapping[str, Any] | None) -> ResetSpec:
    if spec is None:
        raise SpecError("spec", "is required")
    typed = parse(OffsetResetSpec, _SPEC.check(spec, "spec"))
    target = parse_target(typed.target.given(), "spec.target")
    if target.backup_namespace is not None:  # the schema allows no "/": an older CRD might
        raise SpecError("spec.target.fromBackup", "names a backup of this namespace: give its name alone")
    workloads = tuple(Workload(w.kind, w.name) for w in typed.pause_workloads)
    if len(set(workloads)) != len(workloads):  # the CRD's rule says so too; the operator's check has no CEL
        raise SpecError("spec.pauseWorkloads", "lists a workload twice")
    try:
        timeout_ms = parse_duration_ms(typed.pause_timeout)
    except ValueError as exc:
        raise SpecError("spec.pauseTimeout", str(exc)) from None
    return ResetSpec(
        pause_workloads=workloads,
        pause_timeout_ms=timeout_ms,
        pause_timeout=typed.pause_timeout,
        group=check_group(typed.group, "spec.group"),
        scope=_scope(typed),
        target=target,
        approved=typed.approved,
        kafka=typed.kafka,
        policy_ref=typed.policy_ref,
    )


def _scope(typed: OffsetResetSpec) -> ResetScope:
    """allTopics, or the listed topics with their partitions in order, each once (the schema says one of
    them is given, topic names are Kafka's and each listed once; a list may repeat a partition)."""
    if typed.all_topics and typed.topics is not None:  # the CRD's rule too; the operator's check has no CEL
        raise SpecError("spec.topics", "and allTopics exclude each other: give one")
    if typed.all_topics:
        return ResetScope(all_topics=True)
    topics = []
    for i, topic in enumerate(typed.topics or ()):
        if topic.name in (".", ".."):  # Kafka refuses them; a pattern without lookahead cannot say it
            raise SpecError(f"spec.topics[{i}].name", f"{topic.name!r} is not a Kafka topic name")
        parts = None if topic.partitions is None else tuple(sorted(set(topic.partitions)))
        topics.append(TopicScope(topic.name, parts))
    if not topics:  # the CRD's rule (topics or allTopics) is the API server's
        raise SpecError("spec.topics", "is required (or allTopics: true for every topic the group has offsets for)")
    return ResetScope(all_topics=False, topics=tuple(topics))
