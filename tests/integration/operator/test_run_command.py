"""`kafka-offset-operator run` as a real process: health and metrics endpoints, a deletion reconciled, and a
SIGKILL mid-run (a restore blocked by an active member) with a fresh process finishing the job. The two
processes are module fixtures, one step after the other; each test proves one thing a step did.

On the real kube-apiserver (the `real_api` marker: the install applied, each process with the installed
ServiceAccount's token) and Apache Kafka (the session's real broker; the sandbox with
KOO_KAFKA_VERSIONS=sandbox): nothing here needs a fault of either stand-in."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from brokers import make_topics
from installed_api import ADMIN, InstalledApi
from kafka_clients import committed, empty_group, member
from kafka_under_test import Kafka, clean_after
from operator_harness import GROUP_VERSION, NAMESPACE, Kube
from operator_process import free_port, get
from waiting import wait_until

from kafka_offset_demo.control_plane import terminate

pytestmark = pytest.mark.real_api  # the processes on the installed ServiceAccount's token


@contextmanager
def operator_process(kubeconfig: Path, tmp_path: Path, *extra: str, namespace: str = NAMESPACE
                     ) -> Iterator[tuple[subprocess.Popen[bytes], int, int, Path]]:
    health, metrics = free_port(), free_port()
    path = tmp_path / f"operator-{health}.log"
    log = open(path, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_offset_operator", "run", "--namespace", namespace, "--kubeconfig", str(kubeconfig),
         "--health-port", str(health), "--metrics-port", str(metrics), "--retry-interval", "0.3",
         # A SIGKILLed process's keep-alive holds its successor back this long (peering, docs/operator.md).
         "--peering-lifetime", "5", *extra],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KUBECONFIG": "/nonexistent"},
    )
    try:
        try:  # a deadline, not a wait: a process start took over 30 s at a load of 20-25
            wait_until(lambda: get(f"http://127.0.0.1:{health}/healthz")[0] == 200, 60, "the liveness endpoint")
        except AssertionError as exc:
            tail = path.read_text(errors="replace").splitlines()[-15:]
            raise AssertionError(f"{exc} (exit code {proc.poll()}); the process's log ends:\n" + "\n".join(tail)) from None
        yield proc, health, metrics, path
    finally:
        terminate(proc, 30)
        log.close()


# -- a deletion and a restore through two operator processes, step by step


@dataclass
class World:
    broker: Kafka
    kube: Kube
    kubeconfig: Path
    logs: Path


@pytest.fixture(scope="module")
def world(real_kafka: Kafka, api: InstalledApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Group "proc" (orders/0 at 3, orders/1 at 4) and the installed API, shared by the module's steps."""
    with clean_after(real_kafka) as broker:
        make_topics(broker, {"orders": 2, "other": 1})
        empty_group(broker.bootstrap_servers, "proc", {("orders", 0): 3, ("orders", 1): 4})
        yield World(broker, api.kube, api.token_kubeconfig, tmp_path_factory.mktemp("run"))


@dataclass
class FirstProcess:
    proc: subprocess.Popen[bytes]
    metrics: str  # the metrics page once the deletion Succeeded


@pytest.fixture(scope="module")
def first_process(world: World) -> Iterator[FirstProcess]:
    """`run` in a process (serving /healthz once this returns), and deletion "by-process" of group "proc",
    approved, once Succeeded."""
    namespace = world.kube.namespace
    body = {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "by-process", "namespace": namespace},
            "spec": {"kafka": {"bootstrapServers": world.broker.bootstrap_servers}, "group": "proc",
                     "topics": [{"name": "orders"}], "approved": True, "approvedBy": ADMIN}}
    with operator_process(world.kubeconfig, world.logs, namespace=namespace) as (proc, _health, metrics_port, _log):
        world.kube.create("offsetdeletions", body)
        world.kube.wait_for_status("by-process", lambda s: s.get("phase") == "Succeeded", 30, "Succeeded")
        _, text = get(f"http://127.0.0.1:{metrics_port}/metrics")
        yield FirstProcess(proc, text)


@pytest.fixture(scope="module")
def killed_mid_restore(world: World, first_process: FirstProcess) -> int:
    """The first process SIGKILLed (no cleanup, no goodbye) while a restore is blocked by an active member,
    who then leaves: the process's return code."""
    with member(world.broker.bootstrap_servers, "proc", ["other"]):
        world.kube.patch(GROUP_VERSION, "offsetdeletions", "by-process", {"spec": {"restore": True}})
        world.kube.wait_for_status("by-process", lambda s: any(c["reason"] == "RestoreBlocked" for c in s.get("conditions", [])),
                                   30, "RestoreBlocked")
        first_process.proc.kill()
        return first_process.proc.wait(10)


@dataclass
class SecondProcess:
    committed: dict[tuple[str, int], int]  # group "proc" once the deletion is Restored
    sigterm_exit: int  # the process's exit code on SIGTERM afterwards


@pytest.fixture(scope="module")
def second_process(world: World, killed_mid_restore: int) -> SecondProcess:
    with operator_process(world.kubeconfig, world.logs, namespace=world.kube.namespace) as (proc, _h, _m, _log):
        world.kube.wait_for_status("by-process", lambda s: s.get("phase") == "Restored", 30, "Restored")
        offsets = committed(world.broker.bootstrap_servers, "proc")
        proc.send_signal(signal.SIGTERM)
        return SecondProcess(offsets, proc.wait(30))


@pytest.mark.slow
def test_run_serves_health_and_counts_deletions_in_its_metrics(first_process: FirstProcess) -> None:
    assert 'kafka_offset_operator_offset_deletions_total{phase="Succeeded"} 1.0' in first_process.metrics
    assert "kafka_offset_operator_offsets_deleted_total 2.0" in first_process.metrics


@pytest.mark.slow
def test_sigkill_ends_the_process_mid_restore(killed_mid_restore: int) -> None:
    assert killed_mid_restore == -signal.SIGKILL


@pytest.mark.slow
def test_a_fresh_process_finishes_the_restore_a_killed_one_left(second_process: SecondProcess) -> None:
    assert second_process.committed == {("orders", 0): 3, ("orders", 1): 4}


@pytest.mark.slow
def test_sigterm_is_a_clean_shutdown(second_process: SecondProcess) -> None:
    assert second_process.sigterm_exit == 0  # as a Deployment's rollout sends it


def test_run_without_any_kubernetes_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    out = subprocess.run([sys.executable, "-m", "kafka_offset_operator", "run", "-A", "--metrics-port", "0",
                          "--health-port", "0"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("kafka-offset-operator: error: no Kubernetes configuration")
    assert "Traceback" not in out.stderr
