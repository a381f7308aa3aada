"""The `__consumer_offsets` records the coordinator writes, built from its state with the codec, as
apache/kafka GroupCoordinatorRecordHelpers builds them (newGroupMetadataRecord,
newEmptyGroupMetadataRecord, newOffsetCommitRecord, the tombstones) and ConsumerGroup orders them
(createGroupTombstoneRecords)."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_offsets_model.codec import (
    encode_key,
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
)

from .classic import ClassicGroup
from .modern import ConsumerGroup, ShareGroup, StreamsGroup
from .offsets import OffsetAndMetadata

Record = tuple[bytes, bytes | None]


def group_metadata_record(group: ClassicGroup, assignment: Mapping[str, bytes]) -> Record:
    """newGroupMetadataRecord: each member with its metadata for the selected protocol and the given
    assignment (the leader's SyncGroup assignment, or the members' current one)."""
    members = []
    for member in group.members.values():
        if group.protocol_name is None:
            raise RuntimeError("non-empty group metadata needs a selected protocol")
        members.append(
            {
                "memberId": member.member_id,
                "groupInstanceId": member.group_instance_id,
                "clientId": member.client_id,
                "clientHost": member.client_host,
                "rebalanceTimeout": member.rebalance_timeout_ms,
                "sessionTimeout": member.session_timeout_ms,
                "subscription": member.metadata(group.protocol_name),
                "assignment": assignment[member.member_id],
            }
        )
    return group_metadata(
        group.group_id,
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.current_state_timestamp_or_default(),
        members=members,
    )


def empty_group_metadata_record(group: ClassicGroup) -> Record:
    """newEmptyGroupMetadataRecord: written when JoinGroup creates a group, before it has a generation."""
    return group_metadata(
        group.group_id,
        protocol_type="",
        generation=0,
        protocol=None,
        leader=None,
        current_state_timestamp=group.current_state_timestamp_or_default(),
        members=(),
    )


# GroupCoordinatorRecordHelpers.offsetCommitValueVersion, Kafka 4.1+: v1 for a commit with an expireTimestamp,
# else v4 (4.0 wrote v3). The sandbox writes what the newest Kafka under test (4.4) writes.
OFFSET_COMMIT_VALUE_VERSION = 4


def offset_commit_record(group_id: str, topic: str, partition: int, value: OffsetAndMetadata) -> Record:
    """newOffsetCommitRecord: value v4 with the topic id as tagged field 0 (left out when unknown, Kafka's
    ZERO_UUID default), or v1 when the commit carries an expireTimestamp (v1 has no topic id)."""
    expiring = value.expire_timestamp is not None and value.expire_timestamp >= 0
    return offset_commit(
        group_id,
        topic,
        partition,
        offset=value.offset,
        commit_timestamp=value.commit_timestamp,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        expire_timestamp=value.expire_timestamp,
        value_version=1 if expiring else OFFSET_COMMIT_VALUE_VERSION,
        topic_id=None if expiring else value.topic_id,
    )


def offset_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return offset_commit_tombstone(group_id, topic, partition)


def classic_group_tombstones(group_id: str) -> list[Record]:
    return [group_metadata_tombstone(group_id)]


def consumer_group_tombstones(group: ConsumerGroup) -> list[Record]:
    """ConsumerGroup.createGroupTombstoneRecords (4.x order): current assignments, target assignments,
    target assignment epoch, member subscriptions, resolved regexes, partition metadata, group epoch."""
    gid = group.group_id
    out: list[Record] = []

    def key(name: str, **fields: str) -> Record:
        return encode_key(name, {"GroupId": gid, **fields}), None

    out += [key("ConsumerGroupCurrentMemberAssignment", MemberId=m) for m in group.members]
    out += [key("ConsumerGroupTargetAssignmentMember", MemberId=m) for m in group.members]
    out.append(key("ConsumerGroupTargetAssignmentMetadata"))
    out += [key("ConsumerGroupMemberMetadata", MemberId=m) for m in group.members]
    out += [key("ConsumerGroupRegularExpression", RegularExpression=r) for r in group.resolved_regexes]
    out.append(key("ConsumerGroupPartitionMetadata"))
    out.append(key("ConsumerGroupMetadata"))
    return out


def streams_group_tombstones(group: StreamsGroup) -> list[Record]:
    """StreamsGroup.createGroupTombstoneRecords: current assignments, target assignments, target
    assignment epoch, members, group epoch, topology."""
    gid = group.group_id

    def key(name: str, **fields: str) -> Record:
        return encode_key(name, {"GroupId": gid, **fields}), None

    out: list[Record] = [key("StreamsGroupCurrentMemberAssignment", MemberId=m) for m in group.members]
    out += [key("StreamsGroupTargetAssignmentMember", MemberId=m) for m in group.members]
    out.append(key("StreamsGroupTargetAssignmentMetadata"))
    out += [key("StreamsGroupMemberMetadata", MemberId=m) for m in group.members]
    out.append(key("StreamsGroupMetadata"))
    out.append(key("StreamsGroupTopology"))
    return out


def share_group_tombstones(group: ShareGroup) -> list[Record]:
    """ShareGroup.createGroupTombstoneRecords: current and target assignments, target assignment epoch,
    member subscriptions, state partition metadata, group epoch."""
    gid = group.group_id

    def key(name: str, **fields: str) -> Record:
        return encode_key(name, {"GroupId": gid, **fields}), None

    out: list[Record] = [key("ShareGroupCurrentMemberAssignment", MemberId=m) for m in group.members]
    out += [key("ShareGroupTargetAssignmentMember", MemberId=m) for m in group.members]
    out.append(key("ShareGroupTargetAssignmentMetadata"))
    out += [key("ShareGroupMemberMetadata", MemberId=m) for m in group.members]
    out.append(key("ShareGroupStatePartitionMetadata"))
    out.append(key("ShareGroupMetadata"))
    return out
