"""Real Kafka clients (kafka-python) playing the group shapes of the demo's story, and of the tests that drive
the sandbox broker or Apache Kafka (tests/support/kafka_clients.py imports them from here).

KafkaConsumer is not thread-safe and its poll() drives the group protocol, so each consumer lives in
its own thread and is told what to do through a queue; it keeps polling (and heartbeating) while the test
waits for something else. Group shapes: a live member (`member`), a group that committed and left
(`empty_group`), a standalone commit (`admin_commit`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from kafka.errors import RebalanceInProgressError
from kafka.structs import OffsetAndMetadata

# Long enough for a JoinGroup and SyncGroup to finish inside one poll on a loaded machine. kafka-python 3.0.12
# leaves a member REBALANCING for good when a poll gives up while its join is in flight and the SyncGroup
# answer arrives before the next poll (seen on Apache Kafka: a second join follows every first one, because
# the consumer joins before its metadata snapshot has the topics; each of its commits then waits out the
# helper's timeout, 20 s). A command waits at most this long for the thread to take it.
POLL_MS = 300

# kafka-python 3.0.12 drops a finished JoinGroup/SyncGroup whose answer arrived between two polls and sends a
# new JoinGroup (`BaseCoordinator.join_group_async` replaces a done `_join_task` instead of reading it). When
# the coordinator answers slower than POLL_MS (a loaded machine, the in-process sandbox broker), a member can
# rebalance over and over and refuse every commit. A member refused this long, or unassigned this long, is
# restarted, as its operator would restart it.
STUCK_S = 15.0

T = TypeVar("T")


def _until(condition: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll `condition` until it returns something truthy, or raise TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)  # the polling cadence; the deadline decides


class GroupConsumer:
    """A subscribed KafkaConsumer polling in a background thread; `received` collects what it read."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], poll_ms: int = POLL_MS, **config: Any) -> None:
        self._commands: queue.Queue[tuple[Callable[[KafkaConsumer], Any], queue.Queue[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self.group = group
        self.assignment: set[TopicPartition] = set()
        self.received: list[ConsumerRecord] = []
        self.error: BaseException | None = None
        self._poll_ms = poll_ms
        self._topics = topics
        self._settings = {
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "heartbeat_interval_ms": 100,
            "session_timeout_ms": 10_000,
            **config,
        }
        self._consumer = self._subscribed()
        self._thread = threading.Thread(target=self._run, name=f"consumer-{group}", daemon=True)
        self._thread.start()

    def _subscribed(self) -> KafkaConsumer:
        consumer = KafkaConsumer(**self._settings)
        # Know the topics before joining: kafka-python 3.0.12 can stall for good when its first
        # JoinGroup completes before the subscribed topics' metadata arrives and it rejoins (seen with
        # group.initial.rebalance.delay.ms=0; Kafka's default 3 s delay hides the race).
        for topic in self._topics:
            consumer.partitions_for_topic(topic)
        consumer.subscribe(self._topics)
        return consumer

    def _restart(self, consumer: KafkaConsumer) -> None:
        """What an operator does with a consumer stuck rebalancing: close it (LeaveGroup) and start a new
        one in the same group. Runs in the polling thread, which owns the consumer."""
        consumer.close(autocommit=False)
        self.assignment = set()
        self._consumer = self._subscribed()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for records in self._consumer.poll(timeout_ms=self._poll_ms).values():
                    self.received.extend(records)
                self.assignment = set(self._consumer.assignment())
                while not self._commands.empty():
                    command, reply = self._commands.get_nowait()
                    try:
                        reply.put(command(self._consumer))
                    except BaseException as exc:  # handed to the caller
                        reply.put(exc)
        except BaseException as exc:
            self.error = exc

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def wait_assigned(self, partitions: int | None = None, timeout: float = 90.0) -> set[TopicPartition]:
        """Until the group gave this member `partitions` partitions (any, if None). A member still without
        them after STUCK_S is restarted (see `STUCK_S`), as often as the timeout allows."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return _until(
                    lambda: self.assignment if partitions is None or len(self.assignment) == partitions else None,
                    min(STUCK_S, max(0.0, deadline - time.monotonic())),
                    f"{self.group}'s assignment",
                )
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
                self.call(self._restart)

    def call(self, command: Callable[[KafkaConsumer], Any], timeout: float = 60) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self._commands.put((command, reply))
        result = reply.get(timeout=timeout)
        if isinstance(result, BaseException):
            raise result
        return result

    def commit(self, offsets: Mapping[tuple[str, int], int], timeout: float = 90.0) -> None:
        """A member commit (with this member's id and generation), for any partitions. Kafka refuses a
        commit while the group rebalances (a slow machine can miss a heartbeat); a real consumer polls and
        commits again, and so does this one, restarting a member stuck rebalancing after STUCK_S, until
        `timeout`."""
        request = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
        deadline = time.monotonic() + timeout
        refused_since: float | None = None

        def committed() -> bool | None:
            nonlocal refused_since
            try:
                self.call(lambda c: c.commit(request))
            except RebalanceInProgressError:
                now = time.monotonic()
                refused_since = refused_since or now
                if now - refused_since > STUCK_S:
                    self.call(self._restart)
                    self.wait_assigned(timeout=max(1.0, deadline - time.monotonic()))
                    refused_since = None
                return None  # the polling thread rejoins meanwhile
            return True

        _until(committed, timeout, f"{self.group}'s commit")

    def close(self) -> None:
        """Stops polling and closes the consumer, which leaves the group (LeaveGroup)."""
        self._stop.set()
        self._thread.join(timeout=30)
        self._consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error


@contextmanager
def member(bootstrap: str, group: str, topics: Iterable[str]) -> Iterator[GroupConsumer]:
    """A member of `group` (Stable, subscribed to `topics`, with an assignment) until the block ends, when
    it leaves the group (LeaveGroup on close). Its session outlives a loaded machine's stalls (a CI run once
    lost a 10 s one mid-test); it never needs to expire, as it leaves."""
    with GroupConsumer(bootstrap, group, list(topics), session_timeout_ms=30_000) as consumer:
        consumer.wait_assigned()
        yield consumer


def empty_group(bootstrap: str, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """A classic consumer group that joined, committed `offsets` and left: state Empty, protocol consumer.
    (`GroupConsumer.commit` restarts a member kafka-python left stuck rebalancing.)"""
    with member(bootstrap, group, sorted({t for t, _ in offsets})) as consumer:
        consumer.commit(offsets)


def admin_commit(bootstrap: str, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """What a standalone consumer (manual assignment, no group membership) does: an OffsetCommit with
    generation -1. On an unknown group it creates a simple group."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        answers = admin.alter_group_offsets(
            group, {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
        )
        failed = {tp: err for tp, err in answers.items() if err.__name__ != "NoError"}
        if failed:
            raise RuntimeError(f"admin commit to {group} failed: {failed}")
    finally:
        admin.close()

