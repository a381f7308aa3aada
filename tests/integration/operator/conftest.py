"""Fixtures for the operator tests: an emulated cluster, a kubeconfig and operators under Kopf, one of each
per test (the sandbox broker is tests/conftest.py's). The machinery is in operator_harness.py (a uniquely
named module, importable by tests, whose context managers also serve module-scoped sagas)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from operator_harness import EmulatedCluster, Kube, Operators, OperatorThread, emulated_cluster, fast_options

from kafka_offset_operator.context import OperatorOptions


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with emulated_cluster() as c:
        yield c


@pytest.fixture
def kube(cluster: EmulatedCluster) -> Kube:
    return Kube(cluster.url)


@pytest.fixture
def kubeconfig(cluster: EmulatedCluster, tmp_path: Path) -> Path:
    return cluster.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def operator_options(kubeconfig: Path) -> OperatorOptions:
    return fast_options(kubeconfig)


@pytest.fixture
def start_operator(operator_options: OperatorOptions) -> Iterator[Callable[..., OperatorThread]]:
    """Start (and, at teardown, stop) operators; a test may stop one and start another (a restart)."""
    operators = Operators(operator_options)
    yield operators.start
    operators.close()
