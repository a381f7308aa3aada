"""bench/peers.py gives up on an incomplete peer before the deadline only when peer_views.Settling says it has
stopped: every expected group listed and the same answer for a while (Burrow, which drops OffsetCommitValue v2,
on the history shapes). If it gave up on a peer still reading, the table would call a slow peer incomplete; if it
never did, a 5M run would wait 6x the plain reader per shape for nothing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from peer_views import Gap, Settling

STUCK = Gap(3, 0, 1, ("billing-5",))
MISSING = Gap(3, 1, 0, ("app-2",))


def test_a_peer_showing_every_group_with_the_same_answer_has_settled_since_it_first_showed_it() -> None:
    settling = Settling(60)
    assert not settling.settled(MISSING, 1.0)
    assert not settling.settled(STUCK, 5.0)
    assert not settling.settled(STUCK, 64.0)
    assert settling.settled(STUCK, 65.0)
    assert settling.changed_at == 5.0  # its final view: when it was first seen


def test_a_changing_answer_or_a_missing_group_is_not_settled() -> None:
    settling = Settling(60)
    assert not settling.settled(STUCK, 1.0)
    assert not settling.settled(STUCK._replace(wrong=2, examples=("a", "b")), 50.0)  # still moving
    assert not settling.settled(STUCK._replace(wrong=2, examples=("a", "b")), 100.0)
    assert settling.settled(STUCK._replace(wrong=2, examples=("a", "b")), 110.0)

    missing = Settling(60)
    assert not missing.settled(MISSING, 1.0)
    assert not missing.settled(MISSING, 500.0)  # may be reading yet: the deadline decides

