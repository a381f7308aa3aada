"""Committed offsets per group, topic and partition (OffsetMetadataManager's `Offsets` store)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class OffsetAndMetadata:
    """OffsetAndMetadata.java: what one OffsetCommit record holds. `expire_timestamp` is set only by
    OffsetCommit v2-v4 with a retention time (value v1); None otherwise. `topic_id` (Kafka's base64 form) is
    the committed topic's id as the broker resolved it at commit time (Kafka 4.1+ keeps it, value v4); None
    stands for Kafka's ZERO_UUID: unknown, or a record written before v4."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
    topic_id: str | None = None


class OffsetStore:
    def __init__(self) -> None:
        self._by_group: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._by_group.get(group_id, {}).get(topic, {}).get(partition)

    def put(self, group_id: str, topic: str, partition: int, value: OffsetAndMetadata) -> None:
        self._by_group.setdefault(group_id, {}).setdefault(topic, {})[partition] = value

    def remove(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        topics = self._by_group.get(group_id)
        if topics is None:
            return None
        partitions = topics.get(topic)
        if partitions is None:
            return None
        removed = partitions.pop(partition, None)
        if not partitions:
            del topics[topic]
        if not topics:
            del self._by_group[group_id]
        return removed

    def group(self, group_id: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """The group's offsets by topic and partition (a live view; copy before mutating the store)."""
        return self._by_group.get(group_id, {})

    def entries(self, group_id: str) -> Iterator[tuple[str, int, OffsetAndMetadata]]:
        for topic, partitions in list(self.group(group_id).items()):
            for partition, value in list(partitions.items()):
                yield topic, partition, value
