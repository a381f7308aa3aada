"""Fixtures for the operator tests: an emulated cluster, a kubeconfig, operators under Kopf, and a sandbox
Kafka broker. The machinery is in operator_harness.py (a uniquely named module, importable by tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from operator_harness import NAMESPACE, EmulatedCluster, Kube, OperatorThread

from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.runtime import Registrar
from kafka_sandbox import SandboxBroker


@pytest.fixture
def broker() -> Iterator[SandboxBroker]:
    """A fresh sandbox broker per test (it starts in milliseconds), 4 __consumer_offsets partitions, and no
    initial rebalance delay so groups form at once."""
    with SandboxBroker(offsets_retention="7d", offsets_partitions=4, group_initial_rebalance_delay_ms=0) as b:
        yield b


# -- fixtures


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    c = EmulatedCluster().start()
    try:
        yield c
        assert c.server_errors() == [], "the emulated API server failed requests"
    finally:
        c.stop()


@pytest.fixture
def kube(cluster: EmulatedCluster) -> Kube:
    return Kube(cluster.url)


@pytest.fixture
def kubeconfig(cluster: EmulatedCluster, tmp_path: Path) -> Path:
    return cluster.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def operator_options(kubeconfig: Path) -> OperatorOptions:
    """Fast retries for tests; everything else as in production."""
    return OperatorOptions(namespaces=(NAMESPACE,), kubeconfig=kubeconfig, retry_interval=0.3, kafka_timeout_ms=5000)


@pytest.fixture
def start_operator(operator_options: OperatorOptions) -> Iterator[Callable[..., OperatorThread]]:
    """Start (and, at teardown, stop) operators; a test may stop one and start another (a restart)."""
    running: list[OperatorThread] = []

    def start(options: OperatorOptions | None = None, registrars: list[Registrar] | None = None) -> OperatorThread:
        op = OperatorThread(options or operator_options, registrars).start()
        running.append(op)
        return op

    yield start
    for op in running:
        if op.alive:
            op.stop()
