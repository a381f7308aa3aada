"""The records a Kafka 4.x group coordinator writes, built the way it builds them.

Mirrors apache/kafka GroupCoordinatorRecordHelpers (newOffsetCommitRecord, offsetCommitValueVersion,
newOffsetCommitTombstoneRecord, newGroupMetadataRecord, newGroupMetadataTombstoneRecord): offset
commits use value v1 only when they carry an expireTimestamp and v3 otherwise (Kafka 4.0; Kafka 4.1+
writes v4 instead of v3, with the topic id as a tagged field, KAFKA-19141: pass value_version=4);
group metadata uses v3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .records import encode_key, encode_value
from .wire import CodecError

GROUP_METADATA_VALUE_VERSION = 3


def offset_commit_value_version(expire_timestamp: int | None) -> int:
    return 1 if expire_timestamp is not None and expire_timestamp >= 0 else 3


def offset_commit(
    group: str,
    topic: str,
    partition: int,
    *,
    offset: int,
    commit_timestamp: int,
    leader_epoch: int = -1,
    metadata: str = "",
    expire_timestamp: int | None = None,
    value_version: int | None = None,
    topic_id: str | None = None,
) -> tuple[bytes, bytes]:
    """`value_version` overrides Kafka 4.0's choice (v1 with an expireTimestamp, else v3); `topic_id`
    (Kafka's base64 uuid form) exists from v4 on."""
    version = offset_commit_value_version(expire_timestamp) if value_version is None else value_version
    if topic_id is not None and version < 4:
        raise CodecError(f"topicId exists in OffsetCommitValue v4+, not v{version}", part="value")
    value: dict[str, Any] = {"offset": offset, "metadata": metadata, "commitTimestamp": commit_timestamp}
    if version == 1:
        value["expireTimestamp"] = -1 if expire_timestamp is None else expire_timestamp
    if version >= 3:
        value["leaderEpoch"] = leader_epoch
    if topic_id is not None:
        value["topicId"] = topic_id
    return (
        encode_key("OffsetCommit", {"group": group, "topic": topic, "partition": partition}),
        encode_value("OffsetCommit", value, version),
    )


def offset_commit_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    return encode_key("OffsetCommit", {"group": group, "topic": topic, "partition": partition}), None


def group_metadata(
    group: str,
    *,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    current_state_timestamp: int,
    members: Sequence[dict[str, Any]] = (),
) -> tuple[bytes, bytes]:
    """`members` use GroupMetadataValue's names; subscription/assignment may be bytes or decoded dicts."""
    value = {
        "protocolType": protocol_type,
        "generation": generation,
        "protocol": protocol,
        "leader": leader,
        "currentStateTimestamp": current_state_timestamp,
        "members": list(members),
    }
    return (
        encode_key("GroupMetadata", {"group": group}),
        encode_value("GroupMetadata", value, GROUP_METADATA_VALUE_VERSION),
    )


def group_metadata_tombstone(group: str) -> tuple[bytes, None]:
    return encode_key("GroupMetadata", {"group": group}), None
