"""Helpers for the group tests: the records `dump` reads back, and KIP-848 records to seed. The clients
themselves (GroupConsumer, wait_until) are in tests/support/kafka_clients.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI = str(Path(sys.executable).with_name("kafka-offset-operator"))


def dump(bootstrap: str) -> list[dict[str, Any]]:
    """`kafka-offset-operator dump --from-beginning --no-follow`: every record of __consumer_offsets."""
    done = subprocess.run(
        [CLI, "dump", "--bootstrap-server", bootstrap, "--from-beginning", "--no-follow"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def record_shape(record: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a record for comparisons: type, key fields and whether it is a tombstone."""
    return (record["type"], *record["key"].values(), "tombstone" if record["value"] is None else "value")


def group_records(records: list[dict[str, Any]], group: str) -> list[dict[str, Any]]:
    """One group's records in log order (a group's records all live in one partition)."""
    mine = [r for r in records if r["key"].get("group", r["key"].get("GroupId")) == group]
    return sorted(mine, key=lambda r: r["offset"])


def kip848_records(
    group: str,
    members: dict[str, tuple[list[str], str | None]],
    regexes: dict[str, list[str]],
    timestamp: int,
) -> list[tuple[bytes, bytes | None, int]]:
    """A stable KIP-848 group as a Kafka 4.x coordinator keeps it in __consumer_offsets (types 3, 5, 16,
    6, 8): the sandbox cannot create such groups itself, so tests seed them."""
    from offset_expiry.codec import encode_key, encode_value

    def rec(name: str, key: dict[str, Any], value: dict[str, Any]) -> tuple[bytes, bytes | None, int]:
        return encode_key(name, {"GroupId": group, **key}), encode_value(name, value, 0), timestamp

    epoch = 3
    out = [rec("ConsumerGroupMetadata", {}, {"Epoch": epoch})]
    for member_id, (topics, regex) in members.items():
        value = {
            "ClientId": "app",
            "ClientHost": "/10.0.0.1",
            "SubscribedTopicNames": topics,
            "SubscribedTopicRegex": regex,
        }
        out.append(rec("ConsumerGroupMemberMetadata", {"MemberId": member_id}, value))
    for regex, topics in regexes.items():
        out.append(
            rec(
                "ConsumerGroupRegularExpression",
                {"RegularExpression": regex},
                {"Topics": topics, "Version": 1, "Timestamp": timestamp},
            )
        )
    out.append(rec("ConsumerGroupTargetAssignmentMetadata", {}, {"AssignmentEpoch": epoch}))
    for member_id in members:
        out.append(
            rec(
                "ConsumerGroupCurrentMemberAssignment",
                {"MemberId": member_id},
                {"MemberEpoch": epoch, "PreviousMemberEpoch": epoch, "State": 0},
            )
        )
    return out
