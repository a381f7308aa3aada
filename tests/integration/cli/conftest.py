"""An emulated cluster per test, for the backup store the `reset` CLI writes to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_offset_demo.emulated_cluster import EmulatedCluster


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    c = EmulatedCluster().start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def kubeconfig(cluster: EmulatedCluster, tmp_path: Path) -> Path:
    return cluster.write_kubeconfig(tmp_path / "kubeconfig")
