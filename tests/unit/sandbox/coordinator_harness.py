"""A group coordinator wired to in-memory stand-ins for the broker's parts it talks to.

The record sink and the topic table implement the coordinator's real interfaces (RecordSink,
TopicView) as plain data: nothing is mocked, the records are the bytes the broker would append.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors as Errors

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    consumer_group,
    decode_record,
    encode_consumer_protocol,
)
from kafka_offsets_model.codec.wire import uuid_to_str
from kafka_sandbox.coordinator import CoordinatorConfig, Error, GroupCoordinator
from kafka_sandbox.coordinator.messages import (
    CommitPartition,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    Protocol,
    RequestContext,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka_sandbox.coordinator.pending import Pending

T0 = 1_700_000_000_000
DAY = 24 * 60 * 60 * 1000
RETENTION = 7 * DAY


class StoppedClock:
    """The broker clock's interface (now_ms, advance) with time standing still between advances, so
    tests can put the clock exactly on a boundary such as `state timestamp + retention - 1 ms`."""

    def __init__(self, start_ms: int = T0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(
        self, *, days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0, ms: float = 0
    ) -> int:
        self._now += int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + ms)
        return self._now


class ListSink:
    """The `__consumer_offsets` log as a list of (partition, key, value, timestamp)."""

    def __init__(self) -> None:
        self.records: list[tuple[int, bytes, bytes | None, int]] = []

    def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None, int]]) -> None:
        self.records.extend((partition, k, v, ts) for k, v, ts in records)


class TopicTable(dict[str, int]):
    def partition_count(self, topic: str) -> int | None:
        return self.get(topic)

    def topic_id(self, topic: str) -> str | None:
        """A stable id per name (the broker's are random): `topic_id_of`."""
        return topic_id_of(topic) if topic in self else None


def topic_id_of(topic: str) -> str:
    return uuid_to_str(hashlib.md5(topic.encode()).digest())


def subscription(*topics: str, version: int = 1) -> bytes:
    return encode_consumer_protocol(
        CONSUMER_PROTOCOL_SUBSCRIPTION, {"version": version, "topics": list(topics)}, "subscription"
    )


def assignment(**partitions: list[int]) -> bytes:
    value = {"version": 1, "partitions": [{"topic": t, "partitions": p} for t, p in partitions.items()]}
    return encode_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, value, "assignment")


@dataclass
class Harness:
    clock: StoppedClock = field(default_factory=StoppedClock)
    sink: ListSink = field(default_factory=ListSink)
    topics: TopicTable = field(default_factory=lambda: TopicTable({"orders": 3, "payments": 2, "audit": 1}))
    config: CoordinatorConfig = field(default_factory=lambda: CoordinatorConfig(offsets_partitions=4))
    live: set[tuple[str, str]] = field(default_factory=set)
    coord: GroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.coord = GroupCoordinator(
            self.config, self.clock.now_ms, self.sink, self.topics, lambda g, m: (g, m) in self.live
        )

    # ---- records ----

    def decoded(self, since: int = 0) -> list[dict[str, Any]]:
        return [decode_record(k, v) for _, k, v, _ in self.sink.records[since:]]

    def mark(self) -> int:
        return len(self.sink.records)

    def summary(self, since: int = 0) -> list[tuple[Any, ...]]:
        """(type, key fields..., tombstone?) per record: enough to compare with what Kafka writes."""
        out: list[tuple[Any, ...]] = []
        for rec in self.decoded(since):
            key = rec["key"]
            out.append((rec["type"], *key.values(), rec["value"] is None))
        return out

    # ---- driving a consumer member ----

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        topics: tuple[str, ...] = ("orders",),
        version: int = 9,
        instance_id: str | None = None,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        protocol_type: str = "consumer",
        protocols: tuple[Protocol, ...] | None = None,
        client_id: str = "client",
    ) -> Pending[JoinGroupResponse]:
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            protocol_type=protocol_type,
            protocols=protocols or (Protocol("range", subscription(*topics)),),
            group_instance_id=instance_id,
        )
        return self.coord.join_group(RequestContext(version, client_id, "/127.0.0.1"), request)

    def join_new_member(self, group: str, **kwargs: Any) -> Pending[JoinGroupResponse]:
        """The v4+ two-step join: MEMBER_ID_REQUIRED, then the join with the given id."""
        first = self.join(group, **kwargs)
        assert first.result().error is Errors.MemberIdRequiredError
        return self.join(group, first.result().member_id, **kwargs)

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        version: int = 5,
    ) -> Pending[SyncGroupResponse]:
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            assignments=tuple((assignments or {}).items()),
            protocol_type="consumer",
            protocol_name="range",
        )
        return self.coord.sync_group(RequestContext(version, "client"), request)

    def heartbeat(self, group: str, member_id: str, generation: int) -> Error:
        return self.coord.heartbeat(
            RequestContext(4, "client"), HeartbeatRequest(group, generation, member_id)
        )

    def leave(self, group: str, *member_ids: str) -> Any:
        request = LeaveGroupRequest(group, tuple(MemberIdentity(m) for m in member_ids))
        return self.coord.leave_group(RequestContext(5, "client"), request)

    def stable_group(self, group: str, *topics: str) -> tuple[str, int]:
        """One consumer member through join and sync: returns (member id, generation)."""
        joined = self.join_new_member(group, topics=topics or ("orders",))
        self.coord.tick()  # the initial rebalance completes on its (zero-delay) timer
        response = joined.result()
        assert response.error is Errors.NoError, response
        synced = self.sync(
            group, response.member_id, response.generation_id, {response.member_id: assignment()}
        )
        assert synced.result().error is Errors.NoError
        return response.member_id, response.generation_id

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        generation: int = -1,
        member_id: str = "",
        version: int = 9,
        retention_ms: int = -1,
        metadata: str | None = "",
    ) -> dict[tuple[str, int], Error]:
        by_topic: dict[str, list[CommitPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(CommitPartition(partition, offset, -1, metadata))
        request = OffsetCommitRequest(
            group_id=group,
            topics=tuple((t, tuple(ps)) for t, ps in by_topic.items()),
            generation_id=generation,
            member_id=member_id,
            retention_time_ms=retention_ms,
        )
        results = self.coord.commit_offsets(RequestContext(version, "client"), request)
        return {(t.name, p.partition): p.error for t in results for p in t.partitions}


def kip848_group_records(
    group: str,
    members: dict[str, tuple[list[str], str | None]],
    regexes: dict[str, list[str]] | None = None,
    *,
    epoch: int = 5,
    timestamp: int = T0,
) -> list[tuple[bytes, bytes | None, int]]:
    """The records a Kafka 4.x coordinator keeps for a stable KIP-848 group (the codec's builder), at
    `timestamp`."""
    return [(k, v, timestamp) for k, v in consumer_group(group, members, regexes, epoch=epoch, resolved_at=timestamp)]
