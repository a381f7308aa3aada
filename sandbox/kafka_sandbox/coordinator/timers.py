"""Keyed timers on the broker clock, as Kafka's CoordinatorTimer: scheduling a key replaces its timer.

Nothing here sleeps or reads a clock. The owner asks `pop_due(now)` for the next expired timer, so a
clock that jumps by days fires every due timer, earliest deadline first, each at its own deadline.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass

TimerCallback = Callable[[], None]


@dataclass(frozen=True)
class DueTimer:
    key: str
    deadline_ms: int
    callback: TimerCallback


class Timers:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[int, int, TimerCallback]] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()

    def schedule(self, key: str, deadline_ms: int, callback: TimerCallback) -> None:
        seq = next(self._seq)
        self._entries[key] = (deadline_ms, seq, callback)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: str) -> None:
        self._entries.pop(key, None)

    def pop_due(self, now_ms: int) -> DueTimer | None:
        """Removes and returns the earliest timer whose deadline is <= now_ms, or None."""
        while self._heap:
            deadline, seq, key = self._heap[0]
            entry = self._entries.get(key)
            if entry is None or entry[1] != seq:
                heapq.heappop(self._heap)  # cancelled or rescheduled
                continue
            if deadline > now_ms:
                return None
            heapq.heappop(self._heap)
            del self._entries[key]
            return DueTimer(key, deadline, entry[2])
        return None

    def __len__(self) -> int:
        return len(self._entries)
