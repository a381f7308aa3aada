"""The one way tests wait: poll a condition until a deadline, never a bare sleep.

Every test that waits for something another thread or process does (a consumer's assignment, an
operator's status patch, a broker's expiration task, a JVM to start) calls `wait_until`, so a timeout
always reads the same way: what was awaited, for how long, and the last value seen.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T | None], timeout: float = 90.0, what: str = "condition", interval: float = 0.05
) -> T:
    """Poll `condition` until it returns something truthy and return that, or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)  # the polling cadence, not a synchronisation: the deadline decides


def wait_past(timestamp: str, timeout: float = 5.0) -> None:
    """Wait until the clock is past the second of `timestamp` (RFC 3339, as status times are written: whole
    seconds), so that a time written from now on differs from it: a test that tells runs apart by their
    completionTime must not start the next one within the same second."""
    then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).replace(microsecond=0)
    wait_until(lambda: datetime.datetime.now(datetime.UTC) >= then + datetime.timedelta(seconds=1), timeout,
               f"the clock to pass {timestamp}")
