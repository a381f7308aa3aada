"""A consumer group's life as the records Kafka writes for it: used by the demo and the docs."""

from __future__ import annotations

from typing import Any

from offset_expiry.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    encode_consumer_protocol,
    group_metadata,
    offset_commit,
    offset_commit_tombstone,
)

T0 = 1_763_700_000_000  # 2025-11-21T04:40:00Z


def sample_records() -> list[tuple[str, bytes, bytes | None]]:
    subscription = encode_consumer_protocol(
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        {"version": 3, "topics": ["orders"], "ownedPartitions": [], "generationId": 1, "rackId": None},
        "subscription",
    )
    assignment = encode_consumer_protocol(
        CONSUMER_PROTOCOL_ASSIGNMENT,
        {"version": 3, "partitions": [{"topic": "orders", "partitions": [0, 1]}]},
        "a",
    )
    member: dict[str, Any] = {
        "memberId": "billing-1-5f0c",
        "groupInstanceId": None,
        "clientId": "billing-1",
        "clientHost": "/10.0.0.7",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": subscription,
        "assignment": assignment,
    }
    return [
        (
            "billing joined: a Stable consumer group with one member",
            *group_metadata(
                "billing",
                protocol_type="consumer",
                generation=1,
                protocol="range",
                leader="billing-1-5f0c",
                current_state_timestamp=T0,
                members=[member],
            ),
        ),
        (
            "billing committed orders-0",
            *offset_commit("billing", "orders", 0, offset=1200, commit_timestamp=T0 + 5000, leader_epoch=0),
        ),
        (
            "billing's last member left: the group is Empty since this timestamp",
            *group_metadata(
                "billing",
                protocol_type="consumer",
                generation=2,
                protocol=None,
                leader=None,
                current_state_timestamp=T0 + 60_000,
            ),
        ),
        (
            "an admin commit with a retention time: value v1 with expireTimestamp",
            *offset_commit(
                "audit", "orders", 0, offset=7, commit_timestamp=T0, expire_timestamp=T0 + 86_400_000
            ),
        ),
        (
            "the broker expired billing's offset: a tombstone",
            *offset_commit_tombstone("billing", "orders", 0),
        ),
    ]
