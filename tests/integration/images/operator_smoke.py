"""The operator image's smoke test, shared by test_operator_image.py (the image built here) and
test_registry_push.py (the copy pulled back from a registry): against the sandbox broker and the emulated API
on loopback, the operator started by a given command line answers /healthz and reconciles an approved
OffsetDeletion."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers import make_topics, sandbox_broker
from kafka_clients import empty_group
from operator_harness import GROUP_VERSION, NAMESPACE, Kube, emulated_cluster
from waiting import wait_until

from kafka_offset_demo.ports import free_port
from kafka_sandbox import SandboxBroker


@dataclass
class World:
    broker: SandboxBroker
    kube: Kube
    kubeconfig: Path


@contextmanager
def smoke_world(home: Path) -> Iterator[World]:
    """A sandbox broker with a topic `orders` and the emulated API; the kubeconfig is written in `home`."""
    with sandbox_broker() as broker, emulated_cluster() as cluster:
        make_topics(broker, {"orders": 2})
        yield World(broker, Kube(cluster.url), cluster.write_kubeconfig(home / "kubeconfig"))




def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as rsp:
            return int(rsp.status)
    except OSError:
        return 0


def reconciles_a_deletion(world: World, command: list[str], group: str, log: Path) -> dict[str, Any]:
    """Start the operator with `command` + its arguments (health port last), see /healthz answer, create an
    approved OffsetDeletion of `group`, and return its status once Succeeded; the operator is stopped with
    SIGTERM (its process group: the runner and the operator)."""
    empty_group(world.broker.bootstrap_servers, group, {("orders", 0): 3, ("orders", 1): 4})
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen([*command, "--health-port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            def serving() -> bool:
                assert proc.poll() is None, f"the operator exited: {log.read_text()[-3000:]}"
                return healthz(port) == 200

            wait_until(serving, 120, f"/healthz (log: {log})")
            world.kube.create("offsetdeletions", {
                "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": group, "namespace": NAMESPACE},
                "spec": {"kafka": {"bootstrapServers": world.broker.bootstrap_servers}, "group": group,
                         "topics": [{"name": "orders"}], "approved": True}})
            return world.kube.wait_for_status(group, lambda s: s.get("phase") == "Succeeded", 60,
                                              f"Succeeded (log: {log})")["status"]
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group (the runner and the operator), SIGKILL if it outlives a minute."""
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue


def operator_args(kubeconfig: str) -> list[str]:
    return ["run", "--namespace", NAMESPACE, "--kubeconfig", kubeconfig, "--metrics-port", str(free_port()),
            "--retry-interval", "0.3"]
