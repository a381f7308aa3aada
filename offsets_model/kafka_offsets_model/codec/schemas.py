"""The record schemas of `__consumer_offsets`, written from Apache Kafka's message specs.

Source: apache/kafka group-coordinator/src/main/resources/common/message/*Key.json and *Value.json
(Kafka 4.x) and clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json.
Field names are Kafka's own: lower camel case for the classic records, upper camel case for KIP-848.
Defaults (used when encoding a dict that lacks a field) are Kafka's: a nullable string without an explicit
"default": "null" defaults to "" (generator FieldSpec.fieldDefault).
The embedded consumer protocol uses the names of this project's JSON output (`topics`, `partitions`),
which the README documents.
"""

from __future__ import annotations

from .schema import Array, Field, Message, Struct

F = Field

# ---- keys (never flexible; the int16 record type in front is written by the record layer) ----

_GROUP_ID = F("GroupId", "string")
_MEMBER_ID = F("MemberId", "string")

OFFSET_COMMIT_KEY = Struct(
    "OffsetCommitKey", (F("group", "string"), F("topic", "string"), F("partition", "int32"))
)
GROUP_METADATA_KEY = Struct("GroupMetadataKey", (F("group", "string"),))
GROUP_KEY = Struct("GroupKey", (_GROUP_ID,))
GROUP_MEMBER_KEY = Struct("GroupMemberKey", (_GROUP_ID, _MEMBER_ID))
REGULAR_EXPRESSION_KEY = Struct(
    "ConsumerGroupRegularExpressionKey", (_GROUP_ID, F("RegularExpression", "string"))
)

# ---- classic values ----

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    Struct(
        "OffsetCommitValue",
        (
            F("offset", "int64"),
            F("leaderEpoch", "int32", since=3, default=-1),
            F("metadata", "string"),
            F("commitTimestamp", "int64"),
            F("expireTimestamp", "int64", since=1, until=1, default=-1),
            # KAFKA-19141 (Kafka 4.1): the topic's id, a tagged field that writers leave out while it is
            # the zero uuid. Kafka 4.1+ writes v4 for commits without an expireTimestamp.
            F("topicId", "uuid", since=4, tag=0),
        ),
    ),
    0,
    4,
    flexible_since=4,
)

_MEMBER_METADATA = Struct(
    "MemberMetadata",
    (
        F("memberId", "string"),
        F("groupInstanceId", "string", since=3, nullable_since=3, default=None),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("rebalanceTimeout", "int32", since=1, default=-1),
        F("sessionTimeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ),
)

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    Struct(
        "GroupMetadataValue",
        (
            F("protocolType", "string"),
            F("generation", "int32"),
            F("protocol", "string", nullable_since=0, default=""),
            F("leader", "string", nullable_since=0, default=""),
            F("currentStateTimestamp", "int64", since=2, default=-1),
            F("members", Array(_MEMBER_METADATA), default=[]),
        ),
    ),
    0,
    4,
    flexible_since=4,
)

# ---- KIP-848 consumer-group values (all v0, flexible) ----


def _kip848(name: str, *fields: Field) -> Message:
    return Message(name, Struct(name, tuple(fields)), 0, 0, flexible_since=0)


_TOPIC_ID_PARTITIONS = Struct("TopicPartitions", (F("TopicId", "uuid"), F("Partitions", Array("int32"))))

CONSUMER_GROUP_METADATA_VALUE = _kip848(
    "ConsumerGroupMetadataValue",
    F("Epoch", "int32"),
    F("MetadataHash", "int64", tag=0, default=0),  # KIP-1101, Kafka 4.1
    F("CreationTimeMs", "int64", tag=1, default=-1),  # KIP-1282
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = _kip848(
    "ConsumerGroupPartitionMetadataValue",
    F(
        "Topics",
        Array(
            Struct(
                "TopicMetadata",
                (
                    F("TopicId", "uuid"),
                    F("TopicName", "string"),
                    F("NumPartitions", "int32"),
                    F(
                        "PartitionMetadata",
                        Array(
                            Struct(
                                "PartitionMetadata", (F("Partition", "int32"), F("Racks", Array("string")))
                            )
                        ),
                        default=[],
                    ),
                ),
            )
        ),
    ),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = _kip848(
    "ConsumerGroupMemberMetadataValue",
    F("InstanceId", "string", nullable_since=0, default=""),
    F("RackId", "string", nullable_since=0, default=""),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("SubscribedTopicNames", Array("string"), default=[]),
    F("SubscribedTopicRegex", "string", nullable_since=0, default=""),
    F("RebalanceTimeoutMs", "int32", default=-1),
    F("ServerAssignor", "string", nullable_since=0, default=""),
    F(
        "ClassicMemberMetadata",
        Struct(
            "ClassicMemberMetadata",
            (
                F("SessionTimeoutMs", "int32"),
                F(
                    "SupportedProtocols",
                    Array(Struct("ClassicProtocol", (F("Name", "string"), F("Metadata", "bytes")))),
                ),
            ),
        ),
        nullable_since=0,
        default=None,
        tag=0,
    ),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _kip848(
    "ConsumerGroupTargetAssignmentMetadataValue", F("AssignmentEpoch", "int32")
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _kip848(
    "ConsumerGroupTargetAssignmentMemberValue", F("TopicPartitions", Array(_TOPIC_ID_PARTITIONS))
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _kip848(
    "ConsumerGroupCurrentMemberAssignmentValue",
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("AssignedPartitions", Array(_TOPIC_ID_PARTITIONS), default=[]),
    F("PartitionsPendingRevocation", Array(_TOPIC_ID_PARTITIONS), default=[]),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _kip848(
    "ConsumerGroupRegularExpressionValue",
    F("Topics", Array("string")),
    F("Version", "int64"),
    F("Timestamp", "int64"),
)

# ---- KIP-1071 streams groups: only the topology (type 23) is decoded, for its source topics ----
# StreamsGroupTopologyValue.json as shipped in Kafka 4.1 and 4.2 (v0, flexible). The other streams record
# types stay raw: the analysis and the sandbox only need to know that they exist (a member record makes
# the group non-empty).

_STREAMS_TOPIC_INFO = Struct(
    "TopicInfo",
    (
        F("Name", "string"),
        F("Partitions", "int32"),
        F("ReplicationFactor", "int16"),
        F("TopicConfigs", Array(Struct("TopicConfig", (F("key", "string"), F("value", "string"))))),
    ),
)

STREAMS_GROUP_TOPOLOGY_VALUE = _kip848(
    "StreamsGroupTopologyValue",
    F("Epoch", "int32"),
    F(
        "Subtopologies",
        Array(
            Struct(
                "Subtopology",
                (
                    F("SubtopologyId", "string"),
                    F("SourceTopics", Array("string")),
                    F("SourceTopicRegex", Array("string")),
                    F("StateChangelogTopics", Array(_STREAMS_TOPIC_INFO)),
                    F("RepartitionSinkTopics", Array("string")),
                    F("RepartitionSourceTopics", Array(_STREAMS_TOPIC_INFO)),
                    F(
                        "CopartitionGroups",
                        Array(
                            Struct(
                                "CopartitionGroup",
                                (
                                    F("SourceTopics", Array("int16")),
                                    F("SourceTopicRegex", Array("int16")),
                                    F("RepartitionSourceTopics", Array("int16")),
                                ),
                            )
                        ),
                    ),
                ),
            )
        ),
    ),
)

# ---- the consumer protocol embedded in classic group members (clients' ConsumerProtocol*.json) ----

_TOPIC_PARTITIONS = Struct("TopicPartition", (F("topic", "string"), F("partitions", Array("int32"))))

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    Struct(
        "ConsumerProtocolSubscription",
        (
            F("topics", Array("string")),
            F("userData", "bytes", nullable_since=0, default=None),
            F("ownedPartitions", Array(_TOPIC_PARTITIONS), since=1, default=[]),
            F("generationId", "int32", since=2, default=-1),
            F("rackId", "string", since=3, nullable_since=3, default=None),
        ),
    ),
    0,
    3,
)

CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    Struct(
        "ConsumerProtocolAssignment",
        (F("partitions", Array(_TOPIC_PARTITIONS)), F("userData", "bytes", nullable_since=0, default=None)),
    ),
    0,
    3,
)
