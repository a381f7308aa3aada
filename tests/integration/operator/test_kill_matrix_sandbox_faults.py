"""The SIGKILL matrix's one cell whose fault is at the broker (docs/safety.md, "Kubernetes faults and
restarts"): the OffsetDelete (an OffsetReset's OffsetCommit) is held at the broker, the operator process is
SIGKILLed, then Kafka applies it. It stays on the sandbox broker because only the sandbox can hold a request
(`faults.hold`); every other cell runs on Apache Kafka in test_kill_matrix.py.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokers import make_topics, sandbox_broker
from kafka_clients import admin_commit, committed
from kube_faults import deletion
from operator_harness import GROUP_VERSION, NAMESPACE, Kube, emulated_cluster
from operator_process import OperatorProcess
from test_kill_matrix import BEFORE, audit_lines
from waiting import wait_until

from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broker() -> Iterator[SandboxBroker]:
    with sandbox_broker() as b:
        make_topics(b, {"orders": 2})
        yield b


@pytest.mark.parametrize("kind", ["OffsetDeletion", "OffsetReset"])
def test_sigkill_after_the_change_reached_kafka_and_before_its_audit_line(
        broker: SandboxBroker, tmp_path: Path, kind: str) -> None:
    """The one window a Kubernetes write cannot show: the OffsetDelete (an OffsetReset's OffsetCommit) is held
    at the broker, the process is SIGKILLed, then Kafka applies it. The dead process wrote no audit line; the
    next one confirms the change in Kafka and writes it, marked `confirmed=after-restart` (at-least-once)."""
    group = f"kill-audit-{kind.lower()}"
    admin_commit(broker.bootstrap_servers, group, BEFORE)
    call = "OffsetDelete" if kind == "OffsetDeletion" else "OffsetCommit"
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        held = broker.faults.hold(call, group=group)
        with OperatorProcess(kubeconfig, tmp_path) as first:
            if kind == "OffsetDeletion":
                kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
            else:
                kube.create("offsetresets", {
                    "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "d", "namespace": NAMESPACE},
                    "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": group,
                             "topics": [{"name": "orders"}], "target": {"offset": 1}, "approved": True}})
            held.wait(30)
            assert first.kill() == -signal.SIGKILL
            first_log = first.log()
        held.release()  # applied; its answer goes to a dead client
        after = {} if kind == "OffsetDeletion" else {tp: 1 for tp in BEFORE}
        wait_until(lambda: committed(broker.bootstrap_servers, group) == after, 10, "the held request applied")
        assert not audit_lines(first_log, call, group), first_log
        with OperatorProcess(kubeconfig, tmp_path) as second:
            plural = "offsetdeletions" if kind == "OffsetDeletion" else "offsetresets"
            status = wait_until(lambda: (s := (kube.find(GROUP_VERSION, plural, "d") or {}).get("status") or {})
                                .get("phase") in ("Succeeded", "PartiallyFailed", "Failed") and s, 30, "a final phase")
            assert status["phase"] == "Succeeded", status
            [line] = audit_lines(second.log(), call, group)
            second.kill()
        assert line.endswith("confirmed=after-restart"), line
        assert "partitions=2 ok=2" in line, line
        assert ("before=[orders:0=3,orders:1=4] after=[none]" if kind == "OffsetDeletion"
                else "before=[orders:0=3,orders:1=4] after=[orders:0=1,orders:1=1]") in line, line
        assert committed(broker.bootstrap_servers, group) == after
