"""Decoded records of every type and value version, in the dict shape decode_record returns.

Shared by the round-trip, fast-path and fuzz tests. Values are chosen so that every field differs from
its default (a field dropped by the encoder shows up as a changed byte).
"""

from __future__ import annotations

import copy
from typing import Any

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    encode_consumer_protocol,
)

T0 = 1_763_700_000_000
TOPIC_ID = "q5Ey2vjxS3u_1Ve8Xh0kzg"  # Kafka's URL-safe base64 of 16 bytes
OTHER_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

OFFSET_KEY = {"group": "billing", "topic": "orders", "partition": 7}

# OffsetCommitValue per version: v0/v2 share a layout, v1 adds expireTimestamp, v3 leaderEpoch, v4 is
# v3 made flexible (compact strings, tagged fields, topicId as tag 0).
OFFSET_VALUES: dict[int, dict[str, Any]] = {
    0: {"offset": 1200, "metadata": "m0", "commitTimestamp": T0},
    1: {"offset": 1201, "metadata": "m1", "commitTimestamp": T0 + 1, "expireTimestamp": T0 + 86_400_000},
    2: {"offset": 1202, "metadata": "", "commitTimestamp": T0 + 2},
    3: {"offset": 1203, "leaderEpoch": 5, "metadata": "m3", "commitTimestamp": T0 + 3},
    4: {"offset": 1204, "leaderEpoch": 6, "metadata": "m4", "commitTimestamp": T0 + 4, "topicId": TOPIC_ID},
}


def subscription(version: int) -> dict[str, Any]:
    """ConsumerProtocolSubscription with exactly the fields of `version`."""
    sub: dict[str, Any] = {"version": version, "topics": ["orders", "payments"], "userData": b"\x01\x02"}
    if version >= 1:
        sub["ownedPartitions"] = [{"topic": "orders", "partitions": [0, 3]}]
    if version >= 2:
        sub["generationId"] = 4
    if version >= 3:
        sub["rackId"] = "rack-a"
    return sub


def assignment(version: int) -> dict[str, Any]:
    return {
        "version": version,
        "partitions": [{"topic": "orders", "partitions": [0, 3]}, {"topic": "payments", "partitions": [1]}],
        "userData": None if version % 2 else b"\xff",
    }


def member(value_version: int, protocol_version: int, index: int = 0) -> dict[str, Any]:
    """A GroupMetadataValue member with the fields of `value_version`."""
    m: dict[str, Any] = {"memberId": f"consumer-{index}-5f0c"}
    if value_version >= 3:
        m["groupInstanceId"] = None if index % 2 else f"instance-{index}"
    m["clientId"] = f"consumer-{index}"
    m["clientHost"] = "/10.0.0.7"
    if value_version >= 1:
        m["rebalanceTimeout"] = 300_000
    m["sessionTimeout"] = 45_000
    m["subscription"] = subscription(protocol_version)
    m["assignment"] = assignment(protocol_version)
    return m


def group_value(version: int, *, members: int = 2, protocol_type: str = "consumer") -> dict[str, Any]:
    value: dict[str, Any] = {
        "protocolType": protocol_type,
        "generation": 9,
        "protocol": "range",
        "leader": "consumer-0-5f0c",
    }
    if version >= 2:
        value["currentStateTimestamp"] = T0 + 60_000
    value["members"] = [member(version, min(i + version, 3), i) for i in range(members)]
    return value


def record(
    type_name: str,
    key_version: int,
    key: dict[str, Any],
    value_version: int | None,
    value: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "type": type_name,
        "keyVersion": key_version,
        "key": key,
        "valueVersion": value_version,
        "value": value,
    }


def _tp(topic_id: str, *partitions: int) -> dict[str, Any]:
    return {"TopicId": topic_id, "Partitions": list(partitions)}


GROUP_KEY = {"GroupId": "payments-v2"}
MEMBER_KEY = {"GroupId": "payments-v2", "MemberId": "Ah2Xk5m0T0uMh3xIbLlZbA"}

KIP848_RECORDS: list[dict[str, Any]] = [
    record("ConsumerGroupMetadata", 3, GROUP_KEY, 0, {"Epoch": 42}),
    record("ConsumerGroupMetadata", 3, GROUP_KEY, 0, {"Epoch": 43, "MetadataHash": -7, "CreationTimeMs": T0}),
    record(
        "ConsumerGroupPartitionMetadata",
        4,
        GROUP_KEY,
        0,
        {
            "Topics": [
                {
                    "TopicId": TOPIC_ID,
                    "TopicName": "orders",
                    "NumPartitions": 3,
                    "PartitionMetadata": [{"Partition": 0, "Racks": ["rack-a", "rack-b"]}],
                },
                {
                    "TopicId": OTHER_TOPIC_ID,
                    "TopicName": "payments",
                    "NumPartitions": 1,
                    "PartitionMetadata": [],
                },
            ]
        },
    ),
    record(
        "ConsumerGroupMemberMetadata",
        5,
        MEMBER_KEY,
        0,
        {
            "InstanceId": "instance-1",
            "RackId": "rack-a",
            "ClientId": "consumer-1",
            "ClientHost": "/10.0.0.8",
            "SubscribedTopicNames": ["orders", "payments"],
            "SubscribedTopicRegex": None,
            "RebalanceTimeoutMs": 300_000,
            "ServerAssignor": "uniform",
        },
    ),
    record(
        "ConsumerGroupMemberMetadata",
        5,
        MEMBER_KEY,
        0,
        {
            "InstanceId": None,
            "RackId": None,
            "ClientId": "consumer-2",
            "ClientHost": "/10.0.0.9",
            "SubscribedTopicNames": [],
            "SubscribedTopicRegex": "orders-.*",
            "RebalanceTimeoutMs": -1,
            "ServerAssignor": None,
        },
    ),
    # A classic-protocol member inside a consumer group: ClassicMemberMetadata is tagged field 0.
    record(
        "ConsumerGroupMemberMetadata",
        5,
        MEMBER_KEY,
        0,
        {
            "InstanceId": None,
            "RackId": None,
            "ClientId": "legacy",
            "ClientHost": "/10.0.0.10",
            "SubscribedTopicNames": ["orders"],
            "SubscribedTopicRegex": None,
            "RebalanceTimeoutMs": 60_000,
            "ServerAssignor": None,
            "ClassicMemberMetadata": {
                "SessionTimeoutMs": 45_000,
                "SupportedProtocols": [
                    {"Name": "range", "Metadata": b"\x00\x00\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff"},
                ],
            },
        },
    ),
    record("ConsumerGroupTargetAssignmentMetadata", 6, GROUP_KEY, 0, {"AssignmentEpoch": 42}),
    record(
        "ConsumerGroupTargetAssignmentMember",
        7,
        MEMBER_KEY,
        0,
        {
            "TopicPartitions": [_tp(TOPIC_ID, 0, 1, 2), _tp(OTHER_TOPIC_ID)],
        },
    ),
    record(
        "ConsumerGroupCurrentMemberAssignment",
        8,
        MEMBER_KEY,
        0,
        {
            "MemberEpoch": 42,
            "PreviousMemberEpoch": 41,
            "State": 2,
            "AssignedPartitions": [_tp(TOPIC_ID, 0, 1)],
            "PartitionsPendingRevocation": [_tp(TOPIC_ID, 2)],
        },
    ),
    record(
        "ConsumerGroupRegularExpression",
        16,
        {"GroupId": "payments-v2", "RegularExpression": "orders-.*"},
        0,
        {"Topics": ["orders-eu", "orders-us"], "Version": 1234, "Timestamp": T0},
    ),
    record(
        "StreamsGroupTopology",
        23,
        GROUP_KEY,
        0,
        {
            "Epoch": 3,
            "Subtopologies": [
                {
                    "SubtopologyId": "0",
                    "SourceTopics": ["orders"],
                    "SourceTopicRegex": [],
                    "StateChangelogTopics": [
                        {
                            "Name": "app-store-changelog",
                            "Partitions": 0,
                            "ReplicationFactor": 0,
                            "TopicConfigs": [],
                        }
                    ],
                    "RepartitionSinkTopics": ["app-by-customer-repartition"],
                    "RepartitionSourceTopics": [],
                    "CopartitionGroups": [],
                },
                {
                    "SubtopologyId": "1",
                    "SourceTopics": ["customers"],
                    "SourceTopicRegex": ["audit-.*"],
                    "StateChangelogTopics": [],
                    "RepartitionSinkTopics": [],
                    "RepartitionSourceTopics": [
                        {
                            "Name": "app-by-customer-repartition",
                            "Partitions": 4,
                            "ReplicationFactor": -1,
                            "TopicConfigs": [{"key": "cleanup.policy", "value": "delete"}],
                        }
                    ],
                    "CopartitionGroups": [
                        {"SourceTopics": [0], "SourceTopicRegex": [], "RepartitionSourceTopics": [0]}
                    ],
                },
            ],
        },
    ),
]

# Share (9..15) and streams (17..24) group records: keys decoded, values kept raw.
UNSUPPORTED_KEYS: dict[int, tuple[str, dict[str, Any]]] = {
    9: ("ShareGroupPartitionMetadata", GROUP_KEY),
    10: ("ShareGroupMemberMetadata", MEMBER_KEY),
    11: ("ShareGroupMetadata", GROUP_KEY),
    12: ("ShareGroupTargetAssignmentMetadata", GROUP_KEY),
    13: ("ShareGroupTargetAssignmentMember", MEMBER_KEY),
    14: ("ShareGroupCurrentMemberAssignment", MEMBER_KEY),
    15: ("ShareGroupStatePartitionMetadata", GROUP_KEY),
    17: ("StreamsGroupMetadata", GROUP_KEY),
    18: ("StreamsGroupPartitionMetadata", GROUP_KEY),
    19: ("StreamsGroupMemberMetadata", MEMBER_KEY),
    20: ("StreamsGroupTargetAssignmentMetadata", GROUP_KEY),
    21: ("StreamsGroupTargetAssignmentMember", MEMBER_KEY),
    22: ("StreamsGroupCurrentMemberAssignment", MEMBER_KEY),
    24: ("StreamsGroupTargetAssignmentResolvedTopicIds", GROUP_KEY),
}


def all_records() -> list[tuple[str, dict[str, Any]]]:
    """(id, record) for every record type and value version, plus tombstones."""
    out: list[tuple[str, dict[str, Any]]] = []
    for key_version in (0, 1):
        for version, value in OFFSET_VALUES.items():
            out.append(
                (
                    f"OffsetCommit-k{key_version}-v{version}",
                    record("OffsetCommit", key_version, OFFSET_KEY, version, value),
                )
            )
        out.append(
            (
                f"OffsetCommit-k{key_version}-tombstone",
                record("OffsetCommit", key_version, OFFSET_KEY, None, None),
            )
        )
    for version in range(5):
        out.append(
            (
                f"GroupMetadata-v{version}",
                record("GroupMetadata", 2, {"group": "billing"}, version, group_value(version)),
            )
        )
        out.append(
            (
                f"GroupMetadata-v{version}-empty",
                record("GroupMetadata", 2, {"group": "billing"}, version, group_value(version, members=0)),
            )
        )
    out.append(("GroupMetadata-tombstone", record("GroupMetadata", 2, {"group": "billing"}, None, None)))
    for i, rec in enumerate(KIP848_RECORDS):
        out.append((f"{rec['type']}-{i}", rec))
        out.append((f"{rec['type']}-{i}-tombstone", {**rec, "valueVersion": None, "value": None}))
    for type_id, (name, key) in UNSUPPORTED_KEYS.items():
        out.append(
            (
                f"{name}-raw",
                {**record(name, type_id, key, 0, {"_raw": b"\x00\x00\x00\x2a\x00"}), "unsupported": True},
            )
        )
        out.append((f"{name}-tombstone", {**record(name, type_id, key, None, None), "unsupported": True}))
    return copy.deepcopy(out)


def consumer_protocol_bytes(kind: str, version: int) -> bytes:
    if kind == "subscription":
        return encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, subscription(version), kind)
    return encode_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, assignment(version), kind)
