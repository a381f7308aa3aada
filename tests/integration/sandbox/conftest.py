"""Fixtures for talking to the sandbox broker over TCP with real Kafka clients (the broker fixture itself is
tests/conftest.py's)."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed (Debian package kcat; scripts/dev.sh test installs it as root)")
    return path
