"""Real Kafka clients driving the sandbox broker's group coordinator, for the group tests.

KafkaConsumer is not thread-safe and its poll() drives the group protocol, so each consumer lives in
its own thread and is told what to do through a queue. Waiting is always "poll a condition until a
deadline", never a bare sleep.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

CLI = str(Path(sys.executable).with_name("kafka-offset-operator"))


def wait_until(condition: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)  # polling interval of the condition, not a synchronisation


class GroupConsumer:
    """A subscribed KafkaConsumer polling in a background thread."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], **config: Any) -> None:
        self._commands: queue.Queue[tuple[Callable[[KafkaConsumer], Any], queue.Queue[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self.assignment: set[TopicPartition] = set()
        self.error: BaseException | None = None
        settings = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "heartbeat_interval_ms": 100,
            "session_timeout_ms": 10_000,
            **config,
        }
        self._consumer = KafkaConsumer(**settings)
        # Know the topics before joining: kafka-python 3.0.12 can stall for good when its first
        # JoinGroup completes before the subscribed topics' metadata arrives and it rejoins (seen with
        # group.initial.rebalance.delay.ms=0; Kafka's default 3 s delay hides the race).
        for topic in topics:
            self._consumer.partitions_for_topic(topic)
        self._consumer.subscribe(topics)
        self._thread = threading.Thread(target=self._run, name=f"consumer-{group}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._consumer.poll(timeout_ms=50)
                self.assignment = set(self._consumer.assignment())
                while not self._commands.empty():
                    command, reply = self._commands.get_nowait()
                    try:
                        reply.put(command(self._consumer))
                    except BaseException as exc:  # handed to the caller
                        reply.put(exc)
        except BaseException as exc:
            self.error = exc

    def call(self, command: Callable[[KafkaConsumer], Any], timeout: float = 20) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self._commands.put((command, reply))
        result = reply.get(timeout=timeout)
        if isinstance(result, BaseException):
            raise result
        return result

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """A member commit (with this member's id and generation), for any partitions."""
        self.call(
            lambda c: c.commit(
                {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            )
        )

    def close(self) -> None:
        """Stops polling and closes the consumer, which leaves the group (LeaveGroup)."""
        self._stop.set()
        self._thread.join(timeout=20)
        self._consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error


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
