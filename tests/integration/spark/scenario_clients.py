"""A stopped clock for the analysis scenarios on the sandbox broker (the clients are in
tests/support/kafka_clients.py)."""

from __future__ import annotations

from kafka_sandbox.clock import Clock


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
