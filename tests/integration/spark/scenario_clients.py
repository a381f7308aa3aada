"""Real Kafka clients and a stopped clock for the analysis scenarios on the sandbox broker.

A KafkaConsumer is not thread-safe and its poll() drives the group protocol, so each one lives in its own
thread and takes commands through a queue. Waiting is "poll a condition until a deadline", never a bare
sleep.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka_offset_operator.sandbox.clock import Clock


class StoppedClock(Clock):
    """The sandbox's clock without the wall clock: time moves only by advance(), so every commit and
    state timestamp the broker writes is known exactly."""

    def __init__(self, start_ms: int) -> None:
        super().__init__(start_ms)
        self._start_ms = start_ms
        self._offset_ms = 0

    def now_ms(self) -> int:
        with self._lock:
            return self._start_ms + self._offset_ms


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)  # how often the condition is polled, not a synchronisation


class LiveConsumer:
    """A subscribed group member polling in a background thread until closed."""

    def __init__(self, bootstrap: str, group: str, topics: list[str]) -> None:
        self._commands: queue.Queue[tuple[Callable[[KafkaConsumer], Any], queue.Queue[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self.assignment: set[TopicPartition] = set()
        self.error: BaseException | None = None
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            heartbeat_interval_ms=100,
            session_timeout_ms=10_000,
        )
        for (
            topic
        ) in topics:  # know the topics before joining (see tests/integration/sandbox/group_clients.py)
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
                    except BaseException as exc:
                        reply.put(exc)
        except BaseException as exc:
            self.error = exc

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        reply: queue.Queue[Any] = queue.Queue()
        tps = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
        self._commands.put((lambda c: c.commit(tps), reply))
        result = reply.get(timeout=30)
        if isinstance(result, BaseException):
            raise result

    def close(self) -> None:
        """Leaves the group (LeaveGroup): the group becomes Empty if this was its last member."""
        self._stop.set()
        self._thread.join(timeout=30)
        self._consumer.close(autocommit=False)
        if self.error is not None:
            raise self.error
