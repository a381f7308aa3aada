"""The `spec` of an OffsetDeletion, validated into its typed value (model/kinds/offset_deletion.py). Errors
name the field to fix.

The CRD's own schema, written by the same dataclasses, is checked first: types, required fields, kafka or
policyRef, topic names, partition numbers, topics listed once. What follows is what a schema cannot say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck, without_cel_rules
from kafka_offsets_model.typed_schema import parse, schema_of

from ..model.kinds.offset_deletion import DeletionSpec

_SPEC = SchemaCheck(without_cel_rules(schema_of(DeletionSpec)))
# A group id is a Kafka STRING: at most 32767 bytes on the wire (the schema's maxLength counts characters).
_MAX_GROUP_BYTES = 32767


def parse_spec(spec: Mapping[str, Any] | None) -> DeletionSpec:
    if spec is None:
        raise SpecError("spec", "is required")
    parsed = parse(DeletionSpec, _SPEC.check(spec, "spec"))
    group = parsed.group
    if group != group.strip() or any(ord(c) < 32 or ord(c) == 127 for c in group):
        raise SpecError("spec.group", "must not have leading/trailing spaces or control characters")
    if len(group.encode()) > _MAX_GROUP_BYTES:
        raise SpecError("spec.group", f"is longer than Kafka's {_MAX_GROUP_BYTES} bytes")
    for i, topic in enumerate(parsed.topics):
        _not_dots(topic.name, f"spec.topics[{i}].name")
    for i, entry in enumerate(parsed.expected_offsets):
        _not_dots(entry.topic, f"spec.expectedOffsets[{i}].topic")
    if parsed.require_topics_deleted and not parsed.delete_group:
        raise SpecError("spec.requireTopicsDeleted", "applies only with spec.deleteGroup: true")
    # Partitions in order, each once (the schema lets a list repeat one).
    topics = tuple(t if t.partitions is None else replace(t, partitions=tuple(sorted(set(t.partitions))))
                   for t in parsed.topics)
    return replace(parsed, topics=topics)


def _not_dots(topic: str, where: str) -> str:
    """Kafka refuses the topic names "." and ".." (a pattern without lookahead cannot say it)."""
    if topic in (".", ".."):
        raise SpecError(where, f"{topic!r} is not a Kafka topic name (. and .. are reserved)")
    return topic
