"""Fixtures for talking to the sandbox broker over TCP with real Kafka clients."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from kafka_sandbox import SandboxBroker


@pytest.fixture
def broker() -> Iterator[SandboxBroker]:
    """A fresh broker per test (it starts in milliseconds) with 4 __consumer_offsets partitions."""
    with SandboxBroker(offsets_retention="7d", offsets_partitions=4) as b:
        yield b


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed (Debian package kcat; scripts/dev.sh test installs it as root)")
    return path
