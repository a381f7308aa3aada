"""Which operator process acts when several run: Kopf's peering priority (docs/operator.md).

Kopf lets only the live process with the highest priority act, and pauses every process when the highest
priority is shared. The priority we give by default makes the *oldest* process win: the one already acting
keeps acting, and a newcomer (a second replica, the new pod of a rollout, someone's laptop) waits until it
has gone (exited, or silent for the peering lifetime). A newest-wins rule would hand over while the old
process is mid-visit; oldest-wins hands over only when the old process stops. Milliseconds make equal
priorities (which would pause both processes) as unlikely as two starts in the same millisecond.
"""

from __future__ import annotations

# Later than any start time we will see (the year 2286), so priorities stay positive: above Kopf's default
# priority 0, so a plain `kopf run` of someone else does not silently pause us, and readable as an age.
_EPOCH_CEILING_MS = 10**13


def priority_for_start(started_ms: int) -> int:
    """The default peering priority of a process started at `started_ms` (epoch milliseconds): an earlier
    start gives a higher priority."""
    if not 0 <= started_ms < _EPOCH_CEILING_MS:
        raise ValueError(f"start time {started_ms} ms is not a plausible epoch time")
    return _EPOCH_CEILING_MS - started_ms
