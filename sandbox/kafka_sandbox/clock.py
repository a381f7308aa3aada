"""The broker's clock: wall time plus an offset tests can advance."""

from __future__ import annotations

import threading
import time


class Clock:
    """Milliseconds since the epoch, as Kafka's `Time.milliseconds()`; `advance` jumps it forward.

    Timers (session timeouts, the expiration task) read this clock, so advancing it makes them due.
    """

    def __init__(self, start_ms: int | None = None) -> None:
        self._lock = threading.Lock()
        self._offset_ms = 0 if start_ms is None else start_ms - int(time.time() * 1000)

    def now_ms(self) -> int:
        with self._lock:
            return int(time.time() * 1000) + self._offset_ms

    def advance(
        self, *, days: float = 0, hours: float = 0, minutes: float = 0, seconds: float = 0, ms: float = 0
    ) -> int:
        delta = int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + ms)
        if delta < 0:
            raise ValueError("the clock only moves forward")
        with self._lock:
            self._offset_ms += delta
        return self.now_ms()
