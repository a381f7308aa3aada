"""Real Kafka clients for tests that drive the sandbox broker (no doubles), shared by the sandbox, Spark
and other integration tests (pytest puts tests/support on sys.path).

KafkaConsumer is not thread-safe and its poll() drives the group protocol, so each consumer lives in
its own thread and is told what to do through a queue. Waiting is always "poll a condition until a
deadline", never a bare sleep.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
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

    def call(self, command: Callable[[KafkaConsumer], Any], timeout: float = 30) -> Any:
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
        self._thread.join(timeout=30)
        self._consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error
