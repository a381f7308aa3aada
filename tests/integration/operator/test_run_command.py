"""`kafka-offset-operator run` as a real process: health and metrics endpoints, a deletion reconciled, and a
SIGKILL mid-run (a restore blocked by an active member) with a fresh process finishing the job."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from operator_harness import GROUP_VERSION, NAMESPACE, Kube
from operator_kafka import empty_group, live_group, make_topics

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_sandbox import SandboxBroker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as rsp:
            return rsp.status, rsp.read().decode()
    except OSError:
        return 0, ""


@contextmanager
def operator_process(kubeconfig: Path, tmp_path: Path, *extra: str
                     ) -> Iterator[tuple[subprocess.Popen[bytes], int, int, Path]]:
    health, metrics = free_port(), free_port()
    path = tmp_path / f"operator-{health}.log"
    log = open(path, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_offset_operator", "run", "--namespace", NAMESPACE, "--kubeconfig", str(kubeconfig),
         "--health-port", str(health), "--metrics-port", str(metrics), "--retry-interval", "0.3", *extra],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KUBECONFIG": "/nonexistent"},
    )
    try:
        Kube.wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz")[0] == 200, 30, "the liveness endpoint")
        yield proc, health, metrics, path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def test_run_serves_health_and_metrics_and_survives_a_kill(
        broker: SandboxBroker, kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    make_topics(broker, {"orders": 2, "other": 1})
    empty_group(broker, "proc", {("orders", 0): 3, ("orders", 1): 4})
    body = {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "by-process", "namespace": NAMESPACE},
            "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "proc",
                     "topics": [{"name": "orders"}], "approved": True}}
    with operator_process(kubeconfig, tmp_path) as (proc, _health, metrics_port, _log):
        kube.create("offsetdeletions", body)
        kube.wait_for_status("by-process", lambda s: s.get("phase") == "Succeeded", 30, "Succeeded")
        _, text = get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert 'kafka_offset_operator_offset_deletions_total{phase="Succeeded"} 1.0' in text
        assert "kafka_offset_operator_offsets_deleted_total 2.0" in text

        with live_group(broker, "proc", ["other"]):
            kube.patch(GROUP_VERSION, "offsetdeletions", "by-process", {"spec": {"restore": True}})
            kube.wait_for_status("by-process", lambda s: any(c["reason"] == "RestoreBlocked" for c in s.get("conditions", [])),
                                 30, "RestoreBlocked")
            proc.kill()  # SIGKILL: no cleanup, no goodbye
            assert proc.wait(10) == -signal.SIGKILL
    with operator_process(kubeconfig, tmp_path) as (proc, _h, _m, _log):
        kube.wait_for_status("by-process", lambda s: s.get("phase") == "Restored", 30, "Restored")
        with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
            assert {tp: c.offset for tp, c in admin.committed_offsets("proc").items()} == {("orders", 0): 3, ("orders", 1): 4}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # a clean shutdown on SIGTERM, as a Deployment's rollout sends it


def test_run_without_any_kubernetes_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    out = subprocess.run([sys.executable, "-m", "kafka_offset_operator", "run", "-A", "--metrics-port", "0",
                          "--health-port", "0"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("kafka-offset-operator: error: no Kubernetes configuration")
    assert "Traceback" not in out.stderr
