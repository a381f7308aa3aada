"""The coordinator inside the running broker: records go to the broker's `__consumer_offsets` topic,
time comes from the broker clock, and a timer task fires due timers (session, rebalance and sync
timeouts, the expiration task) every 100 ms of real time.

Everything here runs on the broker's event-loop thread (see context.py).

Clock jumps and live clients: `Clock.advance(days=8)` makes every pending deadline due at once, but a
client that is running and connected would have kept heartbeating through those days. So a member's
session timer that fires while its client is evidently alive (it sent a request within its session
timeout of real time, on a connection that is still open) is renewed instead of expiring the member.
A client that closed its connection, or went silent, expires as in Kafka.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol

from kafka_offsets_model.codec.wire import uuid_to_str
from kafka_offsets_model.raw import OFFSETS_TOPIC

from .coordinator import GroupCoordinator
from .loader import LoadReport
from .messages import CleanupReport
from .state import CoordinatorConfig, TimestampedRecord


class _Clock(Protocol):
    def now_ms(self) -> int: ...


class _Topics(Protocol):
    def exists(self, name: str) -> bool: ...

    def partition_count(self, name: str) -> int: ...

    def topic_id(self, name: str) -> uuid.UUID: ...

    def append_records(
        self, topic: str, partition: int, records: Iterable[tuple[bytes | None, bytes | None, int]]
    ) -> int: ...


class Broker(Protocol):
    """What the coordinator needs of the broker it runs in: its config, clock and topics. The broker's
    `context.BrokerContext` has them; a Protocol here, so that the coordinator does not import the context
    that holds it (the two would import each other)."""

    @property
    def config(self) -> object: ...

    @property
    def clock(self) -> _Clock: ...

    @property
    def topics(self) -> _Topics: ...


log = logging.getLogger(__name__)

TICK_SECONDS = 0.1


class _OffsetsTopicSink:
    def __init__(self, ctx: Broker) -> None:
        self._ctx = ctx

    def append(self, partition: int, records: Sequence[TimestampedRecord]) -> None:
        self._ctx.topics.append_records(OFFSETS_TOPIC, partition, records)


class _BrokerTopics:
    def __init__(self, ctx: Broker) -> None:
        self._ctx = ctx

    def partition_count(self, topic: str) -> int | None:
        topics = self._ctx.topics
        return topics.partition_count(topic) if topics.exists(topic) else None

    def topic_id(self, topic: str) -> str | None:
        topics = self._ctx.topics
        return uuid_to_str(topics.topic_id(topic).bytes) if topics.exists(topic) else None


class SandboxCoordinator:
    """What the broker installs as `ctx.coordinator` (the hooks context.py documents)."""

    def __init__(self, ctx: Broker) -> None:
        self.ctx = ctx
        self._heard: dict[tuple[str, str], tuple[int | None, float]] = {}
        self._closed_connections: set[int] = set()
        self.core = GroupCoordinator(
            CoordinatorConfig.from_broker(ctx.config),
            ctx.clock.now_ms,
            _OffsetsTopicSink(ctx),
            _BrokerTopics(ctx),
            self._is_live,
        )
        self._task: asyncio.Task[None] | None = None

    # ---- lifecycle ----

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run_timers(), name="group-coordinator-timers"
        )

    async def close(self) -> None:
        self.core.unload()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run_timers(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                self.core.tick()
            except Exception:  # a bug in one timer must not stop the others
                log.exception("group coordinator timer failed")

    # ---- broker hooks ----

    def expire_offsets(self) -> CleanupReport:
        return self.core.expire_offsets()

    def on_topics_deleted(self, names: Iterable[str]) -> int:
        return self.core.on_topics_deleted(names)

    def replay(self, partition: int, records: Sequence[TimestampedRecord]) -> LoadReport:
        report = self.core.load(records)
        if report.skipped:
            log.info(
                "skipped %d of the records seeded into partition %d: %s",
                report.skipped,
                partition,
                "; ".join(report.problems[:3]),
            )
        return report

    def on_connection_closed(self, connection_id: int) -> None:
        self._closed_connections.add(connection_id)

    # ---- liveness ----

    def heard_from(self, group_id: str, member_id: str, connection_id: int | None) -> None:
        """Notes that a member's client just sent a request (JoinGroup, SyncGroup, Heartbeat, commit)."""
        if member_id:
            self._heard[(group_id, member_id)] = (connection_id, time.monotonic())

    def _is_live(self, group_id: str, member_id: str) -> bool:
        heard = self._heard.get((group_id, member_id))
        group = self.core.state.classic_group(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            self._heard.pop((group_id, member_id), None)
            return False
        if heard is None:
            return False
        connection_id, at = heard
        if connection_id is not None and connection_id in self._closed_connections:
            return False
        return (time.monotonic() - at) * 1000 < member.session_timeout_ms

    def forget(self, group_id: str, member_id: str) -> None:
        self._heard.pop((group_id, member_id), None)


def create_coordinator(ctx: Broker) -> SandboxCoordinator:
    return SandboxCoordinator(ctx)
