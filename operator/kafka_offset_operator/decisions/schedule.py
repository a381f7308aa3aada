"""When a policy's analysis runs: on every spec change (a new metadata.generation), then every
spec.schedule.interval; after a failure, again after an exponential backoff that never exceeds the
interval (nor 10 minutes), so a Kafka outage is noticed soon after it ends without hammering Kafka."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.reasons import Reason
from ..model.times import parse_iso
from .conditions import find

MAX_BACKOFF_MS = 600_000


def due(generation: int | None, status: Mapping[str, Any], now_ms: int) -> bool:
    """A run is due for a spec not yet analysed (generation), or when nextRunTime has come.

    An object without a status (just created), or whose last run never finished, is due at once."""
    if generation is None or status.get("observedGeneration") != generation:
        return True
    next_run = parse_iso(status.get("nextRunTime"))
    if next_run is None:
        # An invalid spec clears nextRunTime: it waits for a new generation, never loops.
        return "lastRun" not in status and not _invalid(status)
    return now_ms >= next_run


def _invalid(status: Mapping[str, Any]) -> bool:
    ready = find(status.get("conditions"), "Ready")
    return ready is not None and ready.get("status") == "False" and ready.get("reason") == Reason.INVALID_SPEC


def retry_delay_ms(failures: int, base_ms: int, interval_ms: int) -> int:
    """1, 2, 4, 8 ... times `base_ms` for consecutive failures, capped at min(interval, 10 min), and never
    below `base_ms`."""
    cap = max(base_ms, min(interval_ms, MAX_BACKOFF_MS))
    return int(min(cap, base_ms * 2 ** max(0, min(failures - 1, 30))))


def wait_ms(next_run_ms: int | None, now_ms: int, tick_ms: int) -> int:
    """How long a policy's worker sleeps before it looks again (a spec change wakes it earlier)."""
    if next_run_ms is None:
        return tick_ms
    return max(0, min(tick_ms, next_run_ms - now_ms))
