"""The `spec` of an OffsetDeletion, validated into frozen values. Errors name the field to fix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offset_expiry.errors import SpecError

from ..model.offsets import TP

# Kafka's topic name rule (Topic.validate): [a-zA-Z0-9._-], at most 249 characters, not "." or "..".
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# A group id is a Kafka STRING: at most 32767 bytes on the wire; empty ids are INVALID_GROUP_ID.
_MAX_GROUP_BYTES = 32767




@dataclass(frozen=True)
class TopicRequest:
    name: str
    partitions: tuple[int, ...] | None  # None: every committed partition of the topic


@dataclass(frozen=True)
class DeletionSpec:
    group: str
    topics: tuple[TopicRequest, ...]
    approved: bool = False
    restore: bool = False
    kafka: Mapping[str, Any] | None = None
    policy_ref: str | None = None
    # Offsets as a policy's scan saw them: a partition committed since is skipped, not deleted.
    expected: Mapping[TP, int] = field(default_factory=dict)


def parse_spec(spec: Mapping[str, Any] | None) -> DeletionSpec:
    if not isinstance(spec, Mapping):
        raise SpecError("spec", "is required")
    group = spec.get("group")
    if not isinstance(group, str) or not group.strip():
        raise SpecError("spec.group", "must be a non-empty consumer group id")
    if group != group.strip() or any(ord(c) < 32 for c in group):
        raise SpecError("spec.group", "must not have leading/trailing spaces or control characters")
    if len(group.encode()) > _MAX_GROUP_BYTES:
        raise SpecError("spec.group", f"is longer than Kafka's {_MAX_GROUP_BYTES} bytes")
    kafka = spec.get("kafka")
    policy = spec.get("policyRef")
    if kafka and policy:
        raise SpecError("spec.policyRef", "give either spec.kafka or spec.policyRef, not both")
    if not kafka and not policy:
        raise SpecError("spec.kafka", "give spec.kafka or spec.policyRef (a ConsumerGroupOffsetPolicy)")
    policy_name = None
    if policy:
        policy_name = policy.get("name") if isinstance(policy, Mapping) else None
        if not isinstance(policy_name, str) or not policy_name:
            raise SpecError("spec.policyRef.name", "must name a ConsumerGroupOffsetPolicy")
    return DeletionSpec(
        group=group,
        topics=_topics(spec.get("topics")),
        approved=_bool(spec, "approved"),
        restore=_bool(spec, "restore"),
        kafka=kafka if isinstance(kafka, Mapping) else None,
        policy_ref=policy_name,
        expected=_expected(spec.get("expectedOffsets")),
    )


def _bool(spec: Mapping[str, Any], name: str) -> bool:
    value = spec.get(name, False)
    if not isinstance(value, bool):
        raise SpecError(f"spec.{name}", "must be true or false")
    return value


def _topic_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _TOPIC.match(value) or value in (".", ".."):
        raise SpecError(where, f"{value!r} is not a Kafka topic name ([a-zA-Z0-9._-], at most 249)")
    return value


def _partition(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(where, f"{value!r} is not a partition number (an integer >= 0)")
    return value


def _topics(raw: Any) -> tuple[TopicRequest, ...]:
    if not isinstance(raw, list) or not raw:
        raise SpecError("spec.topics", "must list at least one topic")
    out: list[TopicRequest] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"spec.topics[{i}]"
        if not isinstance(item, Mapping):
            raise SpecError(where, "must be an object with a name")
        name = _topic_name(item.get("name"), f"{where}.name")
        if name in seen:
            raise SpecError(f"{where}.name", f"topic {name!r} is listed twice")
        seen.add(name)
        parts = item.get("partitions")
        if parts is None:
            out.append(TopicRequest(name, None))
            continue
        if not isinstance(parts, list) or not parts:
            raise SpecError(f"{where}.partitions", "must be a non-empty list, or left out for all")
        numbers = tuple(sorted({_partition(p, f"{where}.partitions[{j}]") for j, p in enumerate(parts)}))
        out.append(TopicRequest(name, numbers))
    return tuple(out)


def _expected(raw: Any) -> dict[TP, int]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise SpecError("spec.expectedOffsets", "must be a list of {topic, partition, offset}")
    out: dict[TP, int] = {}
    for i, item in enumerate(raw):
        where = f"spec.expectedOffsets[{i}]"
        if not isinstance(item, Mapping):
            raise SpecError(where, "must be an object {topic, partition, offset}")
        tp = (_topic_name(item.get("topic"), f"{where}.topic"), _partition(item.get("partition"), f"{where}.partition"))
        offset = item.get("offset")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise SpecError(f"{where}.offset", f"{offset!r} is not an offset (an integer >= 0)")
        out[tp] = offset
    return out
