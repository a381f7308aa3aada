"""The install as a platform team does it, on the real kube-apiserver (tests/support/kube_cluster.py):
`kubectl apply -k manifests/operator` (and manifests/namespaced: every `kubectl apply -k` of README.md and
docs/install.md, as written), `helm install` of charts/ with the real helm binary (a Role per watched namespace,
the metrics Service on), and then `kafka-offset-operator run` as a process with the token of the ServiceAccount that install
created (TokenRequest API), not as admin. So the RBAC we ship is checked by a real authorizer: what the
operator does here, the install allows; what it may not do (a workload's scale without the pause opt-in)
ends in a condition naming the permission, from a real 403.

No kubelet runs: the operator's own Deployment stays Pending, and the operator runs beside the cluster as a
process of this test, authenticated as that Deployment's ServiceAccount would be.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from brokers import make_topics
from install_renders import documented_installs
from installed_api import ADMIN, INSTALL_NS, SERVICE_ACCOUNT
from kafka_clients import admin_commit, committed, empty_group
from kube_cluster import ApiError, ControlPlane
from kube_fixtures import kubectl, remove_approvals_policy
from operator_harness import GROUP_VERSION, ROOT, Kube, condition
from operator_process import OperatorProcess
from waiting import wait_until

from kafka_offset_operator.model.api import BACKUP_LABEL, SOURCE_NAME_LABEL
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow  # operator processes

FINAL = ("Succeeded", "PartiallyFailed", "Failed")
CLUSTER_WIDE = "manifests/operator"  # the install commands' targets, from the repository's root


@dataclass
class Installed:
    plane: ControlPlane
    kube: Kube  # admin, in the test's namespace
    namespace: str
    token_kubeconfig: Path  # the installed ServiceAccount's


@pytest.fixture(scope="module")
def cluster_wide(real_cluster: ControlPlane, real_crds: Path) -> Iterator[ControlPlane]:
    """`kubectl apply -k manifests/operator` once for the module, the command README.md and docs/install.md
    give; it must apply cleanly."""
    assert CLUSTER_WIDE in documented_installs()
    out = kubectl(real_cluster.kubeconfig, "apply", "-k", str(ROOT / CLUSTER_WIDE))
    assert out.returncode == 0, out.stderr
    try:
        yield real_cluster
    finally:  # the session's other tests meet the API server without the install's admission policy
        remove_approvals_policy(real_cluster)


@pytest.fixture
def installed(cluster_wide: ControlPlane, real_namespace: str, tmp_path: Path) -> Installed:
    token = cluster_wide.service_account_kubeconfig(tmp_path / "sa.kubeconfig", INSTALL_NS, SERVICE_ACCOUNT)
    return Installed(cluster_wide, Kube(cluster_wide.url, real_namespace, cluster_wide.api.context), real_namespace,
                     token)


@pytest.fixture
def operator(installed: Installed, tmp_path: Path) -> Iterator[OperatorProcess]:
    with OperatorProcess(installed.token_kubeconfig, tmp_path, namespace=installed.namespace) as proc:
        yield proc


def test_the_token_is_the_service_accounts_not_the_admins(installed: Installed) -> None:
    out = kubectl(installed.token_kubeconfig, "auth", "whoami", "-o", "json")
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout)["status"]["userInfo"]["username"] == \
        f"system:serviceaccount:{INSTALL_NS}:{SERVICE_ACCOUNT}"
    refused = kubectl(installed.token_kubeconfig, "get", "secrets", "-n", "kube-system")
    assert refused.returncode != 0 and "forbidden" in refused.stderr  # it may read a Secret, never list them
    # The install's Deployment is stored as applied (no kubelet runs it here).
    assert installed.kube.get("apps/v1", "deployments", "kafka-offset-operator", INSTALL_NS)["spec"]["replicas"] == 1


def test_an_approved_deletion_is_backed_up_applied_and_restored_as_the_installed_service_account(
        broker: SandboxBroker, installed: Installed, operator: OperatorProcess) -> None:
    make_topics(broker, {"orders": 2})
    empty_group(broker.bootstrap_servers, "reporting", {("orders", 0): 3, ("orders", 1): 4})
    kube = installed.kube
    kube.create("offsetdeletions", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "old-orders"},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "reporting",
                 "topics": [{"name": "orders"}], "approved": True, "approvedBy": ADMIN}})
    status = kube.wait_status("offsetdeletions", "old-orders", lambda s: s.get("phase") in FINAL, "a final phase")
    assert status["phase"] == "Succeeded", (status, operator.log()[-3000:])
    assert committed(broker.bootstrap_servers, "reporting") == {}
    assert {(b["topic"], b["partition"], b["offset"]) for b in status["backup"]["offsets"]} == {
        ("orders", 0, 3), ("orders", 1, 4)}
    assert backups(kube, "old-orders"), "no backup ConfigMap"
    kube.patch(GROUP_VERSION, "offsetdeletions", "old-orders", {"spec": {"restore": True}})
    kube.wait_status("offsetdeletions", "old-orders", lambda s: s.get("phase") == "Restored", "Restored")
    assert committed(broker.bootstrap_servers, "reporting") == {("orders", 0): 3, ("orders", 1): 4}
    events = {e["reason"] for e in kube.events_for("old-orders")}
    assert events, "the operator posted no Event with its own token"
    assert "Traceback" not in operator.log()
    # The backups outlive the deletion: unowned, the real garbage collector leaves them.
    kube.delete(GROUP_VERSION, "offsetdeletions", "old-orders")
    wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "old-orders") is None, 30, "the deletion gone")
    assert len(backups(kube, "old-orders")) >= 2  # the deletion's and the restore's


def backups(kube: Kube, source: str) -> list[dict[str, Any]]:
    selector = f"{BACKUP_LABEL}=true,{SOURCE_NAME_LABEL}={source}"
    return kube.request("GET", f"/api/v1/namespaces/{kube.namespace}/configmaps?labelSelector={selector}")["items"]  # type: ignore[no-any-return]


def test_without_the_pause_opt_in_a_real_403_ends_in_a_condition_naming_the_permission(
        broker: SandboxBroker, installed: Installed, operator: OperatorProcess) -> None:
    make_topics(broker, {"locked": 1})
    admin_commit(broker.bootstrap_servers, "locked-app", {("locked", 0): 0})
    kube = installed.kube
    kube.create("deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "locked-api"},
                                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "locked-api"}},
                                         "template": {"metadata": {"labels": {"app": "locked-api"}},
                                                      "spec": {"containers": [{"name": "c", "image": "none"}]}}}})
    kube.create("offsetresets", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "locked"},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "locked-app", "allTopics": True,
                 "target": {"latest": True}, "approved": True, "approvedBy": ADMIN, "pauseWorkloads": [{"kind": "Deployment", "name": "locked-api"}]}})
    status = kube.wait_status("offsetresets", "locked",
                         lambda s: condition(s, "Degraded").get("reason") == "WorkloadAccessDenied", "WorkloadAccessDenied")
    message = condition(status, "Degraded")["message"]
    assert f"may not get deployments/scale (apps) in namespace {installed.namespace}" in message, message
    assert "forbidden" in message  # the API server's own answer, quoted
    assert kube.get("apps/v1", "deployments", "locked-api")["spec"]["replicas"] == 2
    assert operator.proc.poll() is None and "Traceback" not in operator.log()


def test_with_the_pause_opt_in_real_workloads_are_scaled_down_and_back(
        broker: SandboxBroker, installed: Installed, operator: OperatorProcess) -> None:
    """manifests/components/pause-workloads' rule, added to the installed ClusterRole as its kustomize patch
    does: the reset pauses a real Deployment and StatefulSet through their scale subresource."""
    rules = yaml.safe_load((ROOT / "manifests" / "components" / "pause-workloads" / "rules.yaml").read_text())
    api = installed.plane.api
    role = api.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator")
    if rules[0]["value"] not in role["rules"]:
        api.request("PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator", rules,
                    "application/json-patch+json")
    try:
        make_topics(broker, {"paused": 2}, records_per_partition=8)
        admin_commit(broker.bootstrap_servers, "paused-app", {("paused", 0): 6, ("paused", 1): 7})
        kube = installed.kube
        for kind, plural, replicas in (("Deployment", "deployments", 3), ("StatefulSet", "statefulsets", 2)):
            spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": kind.lower()}},
                                    "template": {"metadata": {"labels": {"app": kind.lower()}},
                                                 "spec": {"containers": [{"name": "c", "image": "none"}]}}}
            if kind == "StatefulSet":
                spec["serviceName"] = "worker"
            kube.create(plural, {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": f"paused-{plural}"},
                                 "spec": spec})
        kube.create("offsetresets", {
            "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "paused"},
            "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "paused-app", "allTopics": True,
                     "target": {"earliest": True}, "approved": True, "approvedBy": ADMIN,
                     "pauseWorkloads": [{"kind": "Deployment", "name": "paused-deployments"},
                                        {"kind": "StatefulSet", "name": "paused-statefulsets"}]}})
        status = kube.wait_status("offsetresets", "paused", lambda s: s.get("phase") in FINAL
                             and all(p["state"] == "Restored" for p in s.get("pausedWorkloads", [])), "restored")
        assert status["phase"] == "Succeeded", status
        assert [(p["kind"], p["replicas"], p["state"]) for p in status["pausedWorkloads"]] == [
            ("Deployment", 3, "Restored"), ("StatefulSet", 2, "Restored")]
        assert committed(broker.bootstrap_servers, "paused-app") == {("paused", 0): 0, ("paused", 1): 0}
        assert kube.get("apps/v1", "deployments", "paused-deployments")["spec"]["replicas"] == 3
        assert kube.get("apps/v1", "statefulsets", "paused-statefulsets")["spec"]["replicas"] == 2
    finally:
        role = api.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator")
        role["rules"] = [r for r in role["rules"] if r != rules[0]["value"]]
        api.request("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator", role)


def test_garbage_collection_is_the_real_one(installed: Installed) -> None:
    """A child owned by a deleted owner goes (the real garbage collector); an unowned backup stays."""
    kube = installed.kube
    owner = kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "child", "ownerReferences": [ref]}})
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unowned"}})
    kube.delete("v1", "configmaps", "owner")
    wait_until(lambda: kube.find("v1", "configmaps", "child") is None, 60, "the child collected")
    assert kube.find("v1", "configmaps", "unowned") is not None


def ensure_namespaces(plane: ControlPlane, *names: str) -> None:
    """The namespaces a namespaced install grants in: the real API server refuses a Role in a namespace that
    does not exist (the install does not create them)."""
    for name in names:
        try:
            plane.create_namespace(name)
        except ApiError as exc:
            if exc.status != 409:
                raise


def test_the_namespaced_install_applies_and_grants_secrets_only_where_it_watches(cluster_wide: ControlPlane) -> None:
    """Every other `kubectl apply -k` of README.md and docs/install.md, as written (manifests/namespaced), over
    the cluster-wide install (cluster_wide removes the admission policy it brings, at the module's end)."""
    real_cluster = cluster_wide
    ensure_namespaces(real_cluster, "team-a", "team-b")
    others = sorted(documented_installs() - {CLUSTER_WIDE})
    assert "manifests/namespaced" in others, others
    for target in others:
        out = kubectl(real_cluster.kubeconfig, "apply", "-k", str(ROOT / target))
        assert out.returncode == 0, f"kubectl apply -k {target}: {out.stderr}"
    who = f"--as=system:serviceaccount:{INSTALL_NS}:{SERVICE_ACCOUNT}"
    for team in ("team-a", "team-b"):
        out = kubectl(real_cluster.kubeconfig, "auth", "can-i", "get", "secrets", "-n", team, who)
        assert out.stdout.strip() == "yes", (team, out.stdout, out.stderr)
        out = kubectl(real_cluster.kubeconfig, "auth", "can-i", "patch", "offsetdeletions.kafkaoffsets.dev/status",
                      "-n", team, who)
        assert out.stdout.strip() == "yes", (team, out.stdout, out.stderr)


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain: helm is built from the Go module proxy")
def test_helm_install_of_the_chart_into_the_real_api_server(real_cluster: ControlPlane, real_crds: Path,
                                                             tmp_path: Path) -> None:
    from kube_build import build

    helm = build() / "helm"
    ensure_namespaces(real_cluster, "team-a")
    # One admission policy per cluster: the kustomize install's (cluster_wide) makes way for the chart's.
    for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
        kubectl(real_cluster.kubeconfig, "delete", kind, "kafka-offset-operator-approvals", "--ignore-not-found")
    try:
        out = subprocess_run([str(helm), "install", "koo", str(ROOT / "charts" / "kafka-offset-operator"),
                              "--namespace", "koo-helm", "--create-namespace", "--kubeconfig", str(real_cluster.kubeconfig),
                              "--set", "watchNamespaces={team-a}", "--set", "metrics.service.enabled=true",
                              "--wait=false"])
        assert out.returncode == 0, out.stderr
        api = real_cluster.api
        assert api.request("GET", "/apis/apps/v1/namespaces/koo-helm/deployments/koo-kafka-offset-operator")["spec"]["replicas"] == 1
        assert api.request("GET", "/api/v1/namespaces/koo-helm/services/koo-kafka-offset-operator-metrics")["spec"]["ports"]
        sa = api.request("GET", "/api/v1/namespaces/koo-helm/serviceaccounts")["items"]
        names = [s["metadata"]["name"] for s in sa if s["metadata"]["name"] != "default"]
        assert len(names) == 1, names
        kubeconfig = real_cluster.service_account_kubeconfig(tmp_path / "helm-sa.kubeconfig", "koo-helm", names[0])
        # The chart's Role in the watched namespace, and no grant elsewhere: the real authorizer's answers.
        for namespace, answer in (("team-a", "yes"), ("default", "no")):
            out = kubectl(kubeconfig, "auth", "can-i", "patch", "offsetdeletions.kafkaoffsets.dev/status", "-n", namespace)
            assert out.stdout.strip() == answer, (namespace, out.stdout, out.stderr)
    finally:  # the session's other tests meet the API server without the chart's admission policy
        remove_approvals_policy(real_cluster)


def subprocess_run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)
