"""The records a Kafka 4.x group coordinator writes, built the way it builds them.

Mirrors apache/kafka GroupCoordinatorRecordHelpers (newOffsetCommitRecord, offsetCommitValueVersion,
newOffsetCommitTombstoneRecord, newGroupMetadataRecord, newGroupMetadataTombstoneRecord): offset
commits use value v1 only when they carry an expireTimestamp and v3 otherwise (Kafka 4.0; Kafka 4.1+
writes v4 instead of v3, with the topic id as a tagged field, KAFKA-19141: pass value_version=4);
group metadata uses v3.

KIP-848 ("consumer" protocol) groups are written as several records of types 3-8 and 16, all value v0
(newConsumerGroupEpochRecord, newConsumerGroupMemberSubscriptionRecord,
newConsumerGroupRegularExpressionRecord, newConsumerGroupTargetAssignmentEpochRecord,
newConsumerGroupCurrentAssignmentRecord); `consumer_group` puts them together for a whole stable group,
which is what tests and the synthetic topics seed (the sandbox's coordinator never creates such groups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


# ---- KIP-848 consumer groups ----

KIP848_VALUE_VERSION = 0
MEMBER_STATE_STABLE = 0  # MemberState.STABLE


def consumer_group_epoch(group: str, epoch: int) -> tuple[bytes, bytes]:
    return (
        encode_key("ConsumerGroupMetadata", {"GroupId": group}),
        encode_value("ConsumerGroupMetadata", {"Epoch": epoch}, KIP848_VALUE_VERSION),
    )


def consumer_group_member_subscription(
    group: str,
    member_id: str,
    *,
    topics: Sequence[str] = (),
    regex: str | None = None,
    client_id: str = "client",
    client_host: str = "/127.0.0.1",
    rebalance_timeout_ms: int = 300_000,
    server_assignor: str | None = None,
    instance_id: str | None = None,
    rack_id: str | None = None,
) -> tuple[bytes, bytes]:
    """A member's subscription: topic names and/or one regular expression (both may be given)."""
    value = {
        "InstanceId": instance_id,
        "RackId": rack_id,
        "ClientId": client_id,
        "ClientHost": client_host,
        "SubscribedTopicNames": list(topics),
        "SubscribedTopicRegex": regex,
        "RebalanceTimeoutMs": rebalance_timeout_ms,
        "ServerAssignor": server_assignor,
    }
    return (
        encode_key("ConsumerGroupMemberMetadata", {"GroupId": group, "MemberId": member_id}),
        encode_value("ConsumerGroupMemberMetadata", value, KIP848_VALUE_VERSION),
    )


def consumer_group_regular_expression(
    group: str, regex: str, *, topics: Sequence[str], version: int, timestamp: int
) -> tuple[bytes, bytes]:
    """The topics a regular expression resolved to, at `timestamp`, in the group's metadata `version`."""
    value = {"Topics": sorted(topics), "Version": version, "Timestamp": timestamp}
    return (
        encode_key("ConsumerGroupRegularExpression", {"GroupId": group, "RegularExpression": regex}),
        encode_value("ConsumerGroupRegularExpression", value, KIP848_VALUE_VERSION),
    )


def consumer_group_target_assignment_epoch(group: str, assignment_epoch: int) -> tuple[bytes, bytes]:
    return (
        encode_key("ConsumerGroupTargetAssignmentMetadata", {"GroupId": group}),
        encode_value(
            "ConsumerGroupTargetAssignmentMetadata", {"AssignmentEpoch": assignment_epoch}, KIP848_VALUE_VERSION
        ),
    )


def consumer_group_current_assignment(
    group: str, member_id: str, *, member_epoch: int, previous_member_epoch: int, state: int = MEMBER_STATE_STABLE
) -> tuple[bytes, bytes]:
    """A member's current assignment; the partitions themselves (by topic id) are left empty."""
    value = {
        "MemberEpoch": member_epoch,
        "PreviousMemberEpoch": previous_member_epoch,
        "State": state,
        "AssignedPartitions": [],
        "PartitionsPendingRevocation": [],
    }
    return (
        encode_key("ConsumerGroupCurrentMemberAssignment", {"GroupId": group, "MemberId": member_id}),
        encode_value("ConsumerGroupCurrentMemberAssignment", value, KIP848_VALUE_VERSION),
    )


def consumer_group(
    group: str,
    members: Mapping[str, tuple[Sequence[str], str | None]],
    regexes: Mapping[str, Sequence[str]] | None = None,
    *,
    epoch: int,
    resolved_at: int,
    client_id: str = "client",
) -> list[tuple[bytes, bytes]]:
    """A KIP-848 group as a Kafka 4.x coordinator keeps it: the group epoch, each member's subscription
    (`members`: id -> (topic names, regex or None)), each regex's resolved topics (as of `resolved_at`),
    the target assignment epoch and each member's current assignment, every member at `epoch` (Stable).
    With no members the group is Empty. Offsets are separate `offset_commit` records."""
    records = [consumer_group_epoch(group, epoch)]
    records += [
        consumer_group_member_subscription(group, member, topics=topics, regex=regex, client_id=client_id)
        for member, (topics, regex) in members.items()
    ]
    records += [
        consumer_group_regular_expression(group, regex, topics=topics, version=1, timestamp=resolved_at)
        for regex, topics in (regexes or {}).items()
    ]
    records.append(consumer_group_target_assignment_epoch(group, epoch))
    records += [
        consumer_group_current_assignment(group, member, member_epoch=epoch, previous_member_epoch=epoch - 1)
        for member in members
    ]
    return records


# ---- KIP-1071 streams groups and KIP-932 share groups ----


def streams_group_topology(
    group: str,
    *,
    epoch: int = 0,
    source_topics: Sequence[str] = (),
    repartition_source_topics: Sequence[str] = (),
    source_topic_regexes: Sequence[str] = (),
    changelog_topics: Sequence[str] = (),
) -> tuple[bytes, bytes]:
    """A streams group's topology (StreamsCoordinatorRecordHelpers.newStreamsGroupTopologyRecord, v0) with
    one subtopology reading `source_topics`, `repartition_source_topics` and `source_topic_regexes`."""
    value = {
        "Epoch": epoch,
        "Subtopologies": [
            {
                "SubtopologyId": "0",
                "SourceTopics": list(source_topics),
                "SourceTopicRegex": list(source_topic_regexes),
                "StateChangelogTopics": [_topic_info(t) for t in changelog_topics],
                "RepartitionSinkTopics": [],
                "RepartitionSourceTopics": [_topic_info(t) for t in repartition_source_topics],
                "CopartitionGroups": [],
            }
        ],
    }
    return (
        encode_key("StreamsGroupTopology", {"GroupId": group}),
        encode_value("StreamsGroupTopology", value, KIP848_VALUE_VERSION),
    )


def _topic_info(name: str) -> dict[str, Any]:
    return {"Name": name, "Partitions": 0, "ReplicationFactor": 0, "TopicConfigs": []}


def streams_group(
    group: str, members: Sequence[str], topology: tuple[bytes, bytes] | None
) -> list[tuple[bytes, bytes]]:
    """A streams group as far as expiry needs it: its metadata record, one member-metadata record per
    member and its topology. The values of the metadata and member records are not decoded by this
    project; they are written as a few opaque bytes after the version (enough to mark them live)."""
    records = [
        (
            encode_key("StreamsGroupMetadata", {"GroupId": group}),
            encode_value("StreamsGroupMetadata", {"_raw": b"\x00" * 8}, KIP848_VALUE_VERSION),
        )
    ]
    records += [
        (
            encode_key("StreamsGroupMemberMetadata", {"GroupId": group, "MemberId": m}),
            encode_value("StreamsGroupMemberMetadata", {"_raw": b"\x00"}, KIP848_VALUE_VERSION),
        )
        for m in members
    ]
    if topology is not None:
        records.append(topology)
    return records


def share_group(group: str, members: Sequence[str]) -> list[tuple[bytes, bytes]]:
    """A share group's metadata and member records (values opaque, as for streams_group)."""
    records = [
        (
            encode_key("ShareGroupMetadata", {"GroupId": group}),
            encode_value("ShareGroupMetadata", {"_raw": b"\x00" * 8}, KIP848_VALUE_VERSION),
        )
    ]
    records += [
        (
            encode_key("ShareGroupMemberMetadata", {"GroupId": group, "MemberId": m}),
            encode_value("ShareGroupMemberMetadata", {"_raw": b"\x00"}, KIP848_VALUE_VERSION),
        )
        for m in members
    ]
    return records
