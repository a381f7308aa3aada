"""The test tiers (docs/testing.md), a pytest plugin registered by tests/conftest.py (`pytest_plugins`).

    unit         every test under tests/unit/ not marked `slow`: pure code, no socket, no subprocess, no sleep.
                 `scripts/dev.sh test` runs it first and stops at its first failure (`pytest -m unit -x`): a
                 minute or less on 2 cores. The guard below makes the promise hold: such a test that opens a
                 socket, starts a process or sleeps fails at once, naming what it did, so it moves to
                 tests/integration/ (or is marked `slow`) instead of slowing the everyday loop.
    integration  the rest (`-m "not unit"`): the sandbox broker, Apache Kafka, the real API server, Spark,
                 subprocesses. `scripts/dev.sh test` runs it after the unit tier, in parallel workers
                 (pytest-xdist, `--dist loadfile`): each worker is a pytest session of its own, so it starts
                 its own broker and control plane on free ports in its own temporary directories.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from pytest_socket import disable_socket, enable_socket

UNIT_DIR = Path(__file__).resolve().parents[1] / "unit"


def in_unit_tier(path: Path, slow: bool) -> bool:
    """Whether a test file at `path` belongs to the unit tier: under tests/unit/ and not marked `slow`."""
    return not slow and path.resolve().is_relative_to(UNIT_DIR)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks set here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if in_unit_tier(item.path, item.get_closest_marker("slow") is not None):
            item.add_marker(pytest.mark.unit)
        # One group per Kafka version (`real_kafka`'s parameter): under `--dist loadgroup` (the matrix run in
        # .ci/run) a worker takes all of one version's tests, so each version's broker starts once.
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "real_kafka" in callspec.params:
            item.add_marker(pytest.mark.xdist_group(f"kafka-{callspec.params['real_kafka']}"))


class UnitTierViolation(AssertionError):
    """A unit-tier test did what only an integration test may: open a socket, start a process or sleep."""


def _refusal(what: str) -> Callable[..., NoReturn]:
    def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise UnitTierViolation(f"a unit-tier test (tests/unit/) may not {what}: move it to tests/integration/ "
                                f"or mark it `slow` (docs/testing.md, test tiers)")
    return refuse


_real_asyncio_sleep = asyncio.sleep


async def _yield_only(delay: float, result: Any = None) -> Any:
    """asyncio.sleep(0) yields to the loop, which is no wait; a positive delay is a sleep."""
    if delay > 0:
        _refusal(f"sleep ({delay} s in asyncio.sleep)")()
    return await _real_asyncio_sleep(0, result)


@pytest.fixture(autouse=True)
def _unit_tier_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For unit-tier tests: network sockets (pytest-socket), processes and sleeps raise UnitTierViolation."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    for target, name in ((subprocess.Popen, "__init__"), (os, "system"), (os, "fork"), (os, "posix_spawn"),
                         (os, "posix_spawnp")):
        if hasattr(target, name):
            monkeypatch.setattr(target, name, _refusal("start a process"))
    monkeypatch.setattr(time, "sleep", _refusal("sleep (time.sleep)"))
    monkeypatch.setattr(asyncio, "sleep", _yield_only)
    disable_socket(allow_unix_socket=True)  # an asyncio loop's self-pipe is a Unix socketpair, not a network
    try:
        yield
    finally:
        enable_socket()
