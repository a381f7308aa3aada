"""The unit tier's promise (docs/testing.md, tiers), checked from inside the tier: a test under tests/unit/ that
opens a network socket, starts a process or sleeps fails at once, saying what it did; and the tier is chosen by
where a test lives and its `slow` mark, nothing listed by hand."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from pytest_socket import SocketBlockedError
from tiers import UNIT_DIR, UnitTierViolation, in_unit_tier


def test_this_test_is_in_the_unit_tier(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit") is not None


@pytest.mark.filterwarnings("ignore:A test tried to use socket:UserWarning")  # pytest-socket's own, expected here
def test_a_network_socket_is_refused() -> None:
    with pytest.raises(SocketBlockedError):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(SocketBlockedError):
        socket.create_connection(("127.0.0.1", 9))


def test_a_process_is_refused() -> None:
    with pytest.raises(UnitTierViolation, match="may not start a process"):
        subprocess.run(["true"], check=False)
    with pytest.raises(UnitTierViolation, match="may not start a process"):
        os.system("true")


def test_a_sleep_is_refused() -> None:
    with pytest.raises(UnitTierViolation, match=r"may not sleep \(time.sleep\)"):
        time.sleep(0.01)


def test_an_asyncio_sleep_is_refused_but_a_yield_is_not() -> None:
    async def both() -> str:
        await asyncio.sleep(0)  # yields to the loop: no wait
        with pytest.raises(UnitTierViolation, match=r"may not sleep \(0.5 s in asyncio.sleep\)"):
            await asyncio.sleep(0.5)
        return "done"

    assert asyncio.run(both()) == "done"  # the loop's own self-pipe (a Unix socketpair) is allowed


def test_the_tier_is_where_a_test_lives_and_its_slow_mark() -> None:
    inside = UNIT_DIR / "codec" / "test_x.py"
    assert in_unit_tier(inside, slow=False)
    assert not in_unit_tier(inside, slow=True)
    assert not in_unit_tier(UNIT_DIR.parent / "integration" / "cli" / "test_x.py", slow=False)
    assert not in_unit_tier(Path("/elsewhere/unit/test_x.py"), slow=False)
