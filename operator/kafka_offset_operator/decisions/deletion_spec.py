"""The `spec` of an OffsetDeletion, validated into frozen values. Errors name the field to fix.

The CRD's own schema (model/crds.py) is checked first: types, required fields, kafka or policyRef, topic
names, partition numbers, topics listed once. What follows is what a schema cannot say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck

from ..model.api import DELETION_KIND
from ..model.crds import spec_schema
from ..model.offsets import TP

_SPEC = SchemaCheck(spec_schema(DELETION_KIND))
# A group id is a Kafka STRING: at most 32767 bytes on the wire (the schema's maxLength counts characters).
_MAX_GROUP_BYTES = 32767


@dataclass(frozen=True)
class TopicRequest:
    name: str
    partitions: tuple[int, ...] | None  # None: every committed partition of the topic


@dataclass(frozen=True)
class ScanFacts:
    """spec.scan: where a policy's scan of __consumer_offsets ended for this group, and what it saw."""

    offsets_partition: int
    end_offset: int
    time: str | None = None
    group_type: str | None = None
    group_state: str | None = None


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
    # spec.deleteGroup: DeleteGroups for the whole group, only while every offset it has is of a listed topic
    # (and, with require_topics_deleted, of a topic that no longer exists).
    delete_group: bool = False
    require_topics_deleted: bool = False
    scan: ScanFacts | None = None  # spec.scan (set by a policy)
    commit_times: Mapping[TP, int] = field(default_factory=dict)  # expectedOffsets[].commitTimestamp
    reasons: Mapping[TP, str] = field(default_factory=dict)  # expectedOffsets[].reason
    # spec.rebase: keep-alive's rebase (deleteGroup + restore at once) of a group the policy protects
    rebase: bool = False

    @property
    def topic_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.topics)


def parse_spec(spec: Mapping[str, Any] | None) -> DeletionSpec:
    if spec is None:
        raise SpecError("spec", "is required")
    spec = _SPEC.check(spec, "spec")
    group: str = spec["group"]
    if group != group.strip() or any(ord(c) < 32 or ord(c) == 127 for c in group):
        raise SpecError("spec.group", "must not have leading/trailing spaces or control characters")
    if len(group.encode()) > _MAX_GROUP_BYTES:
        raise SpecError("spec.group", f"is longer than Kafka's {_MAX_GROUP_BYTES} bytes")
    topics = []
    for i, topic in enumerate(spec["topics"]):
        _not_dots(topic["name"], f"spec.topics[{i}].name")
        parts = topic.get("partitions")
        topics.append(TopicRequest(topic["name"], None if parts is None else tuple(sorted(set(parts)))))
    expected, commit_times, reasons = {}, {}, {}
    for i, entry in enumerate(spec.get("expectedOffsets", ())):
        tp = (_not_dots(entry["topic"], f"spec.expectedOffsets[{i}].topic"), entry["partition"])
        expected[tp] = entry["offset"]
        if entry.get("commitTimestamp") is not None:
            commit_times[tp] = entry["commitTimestamp"]
        if entry.get("reason"):
            reasons[tp] = entry["reason"]
    raw_scan = spec.get("scan")
    scan = None if raw_scan is None else ScanFacts(
        raw_scan["offsetsPartition"], raw_scan["offsetsEndOffset"], raw_scan.get("time"), raw_scan.get("groupType"),
        raw_scan.get("groupState"))
    delete_group = bool(spec.get("deleteGroup", False))
    require_deleted = bool(spec.get("requireTopicsDeleted", False))
    if require_deleted and not delete_group:
        raise SpecError("spec.requireTopicsDeleted", "applies only with spec.deleteGroup: true")
    return DeletionSpec(
        delete_group=delete_group,
        require_topics_deleted=require_deleted,
        group=group,
        topics=tuple(topics),
        approved=spec.get("approved", False),
        restore=spec.get("restore", False),
        kafka=spec.get("kafka"),
        policy_ref=(spec.get("policyRef") or {}).get("name"),
        expected=expected,
        scan=scan,
        commit_times=commit_times,
        reasons=reasons,
        rebase=bool(spec.get("rebase", False)),
    )


def _not_dots(topic: str, where: str) -> str:
    """Kafka refuses the topic names "." and ".." (a pattern without lookahead cannot say it)."""
    if topic in (".", ".."):
        raise SpecError(where, f"{topic!r} is not a Kafka topic name (. and .. are reserved)")
    return topic
