"""The operator's Kubernetes side as a platform team installs it, on the real kube-apiserver
(tests/support/kube_cluster.py): `kubectl apply -k manifests/operator` (CRDs, the ServiceAccount, its
ClusterRoles and the approvals admission policy), a fresh namespace for the test, and a kubeconfig with the
token of the ServiceAccount that install created (TokenRequest API). The operator runs with that token, so
every call it makes is authorized by a real RBAC authorizer against the rules we ship, and every approval is
checked by the real admission policy.

Used by the flows that need no fault injection (test_policy_modes*.py, test_peering.py, test_real_install.py,
test_least_privilege.py, test_shared_spark_applications.py); the emulator (operator_harness.py) keeps what only
it can do: injected 409s, held writes, cut watches.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube_cluster import ApiError, ControlPlane
from kube_fixtures import kubectl, remove_approvals_policy
from operator_harness import GROUP_VERSION, ROOT, Kube, fast_options
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions

INSTALL_NS = "kafka-offset-operator"  # manifests/base's namespace and ServiceAccount
SERVICE_ACCOUNT = "kafka-offset-operator"
OPERATOR_USER = f"system:serviceaccount:{INSTALL_NS}:{SERVICE_ACCOUNT}"  # as the Deployment's env names it
ADMIN = "admin"  # the harness's admin client certificate: the user the admission policy sees approving
CLUSTER_ROLE = "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator"
OUR_PLURALS = ("consumergroupoffsetpolicies", "offsetdeletions", "offsetresets")


@dataclass
class InstalledApi:
    plane: ControlPlane
    kube: Kube  # admin, in `namespace`
    namespace: str
    token_kubeconfig: Path  # the installed ServiceAccount's

    def options(self, **overrides: Any) -> OperatorOptions:
        """The operator's options as the Deployment sets them (its user name), fast for tests, watching the
        test's namespace, authenticated with the ServiceAccount's token."""
        return fast_options(self.token_kubeconfig, **{"namespaces": (self.namespace,), "user": OPERATOR_USER,
                                                       **overrides})


def install(plane: ControlPlane) -> None:
    """`kubectl apply -k manifests/operator`; it must apply cleanly (idempotent: a second apply changes nothing)."""
    out = kubectl(plane.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "operator"))
    assert out.returncode == 0, out.stderr
    out = kubectl(plane.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    assert out.returncode == 0, out.stderr
    for plural in OUR_PLURALS:
        wait_served(plane, GROUP_VERSION, plural)


def wait_served(plane: ControlPlane, group_version: str, plural: str, timeout: float = 60.0) -> None:
    """Until the API server serves the resource: a CRD that the apply changed has its storage re-initialised,
    and until then every request for it is answered 429 ("storage is (re)initializing")."""
    def served() -> bool:
        try:
            plane.api.request("GET", f"/apis/{group_version}/{plural}?limit=1")
        except ApiError as exc:
            if exc.status in (404, 429, 503):
                return False
            raise
        return True

    wait_until(served, timeout, f"the API server to serve {plural}")


@contextmanager
def installed_api(plane: ControlPlane, workdir: Path) -> Iterator[InstalledApi]:
    """The install applied, a fresh namespace and the ServiceAccount's kubeconfig. Afterwards the namespace
    goes (our objects' finalizers removed first: the operator that would remove them is stopped by then) and
    the admission policy too, so the session's other tests meet the API server without it."""
    install(plane)
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    plane.create_namespace(namespace)
    token = plane.service_account_kubeconfig(workdir / f"sa-{namespace}.kubeconfig", INSTALL_NS, SERVICE_ACCOUNT)
    kube = Kube(plane.url, namespace, plane.api.context)
    try:
        yield InstalledApi(plane, kube, namespace, token)
    finally:
        delete_namespace(plane, namespace)
        remove_approvals_policy(plane)


def delete_namespace(plane: ControlPlane, namespace: str) -> None:
    """A test's namespace gone, our objects' finalizers removed first (the operator that would remove them is
    stopped by then)."""
    release(Kube(plane.url, namespace, plane.api.context))
    try:
        plane.api.request("DELETE", f"/api/v1/namespaces/{namespace}")
    except ApiError as exc:
        if exc.status != 404:
            raise


def release(kube: Kube) -> None:
    """Remove Kopf's finalizers from our objects in the client's namespace (the operator is gone)."""
    for plural in OUR_PLURALS:
        for obj in kube.list(GROUP_VERSION, plural):
            if obj["metadata"].get("finalizers"):
                kube.patch(GROUP_VERSION, plural, obj["metadata"]["name"], {"metadata": {"finalizers": None}})


# -- the installed ClusterRole, changed for one test and restored


def cluster_role(plane: ControlPlane) -> dict[str, Any]:
    return plane.api.request("GET", CLUSTER_ROLE)  # type: ignore[no-any-return]


def can_i(plane: ControlPlane, namespace: str, verb: str, resource: str, group: str = "",
          subresource: str = "") -> bool:
    """The real authorizer's answer for the installed ServiceAccount (a SubjectAccessReview)."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": OPERATOR_USER,
                       "groups": ["system:serviceaccounts", f"system:serviceaccounts:{INSTALL_NS}", "system:authenticated"],
                       "resourceAttributes": {"namespace": namespace, "verb": verb, "group": group,
                                              "resource": resource, "subresource": subresource}}}
    answer = plane.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


@contextmanager
def rules_changed(plane: ControlPlane, rules: list[Mapping[str, Any]],
                  in_force: tuple[str, str, str, str, str] | None = None) -> Iterator[None]:
    """The installed ClusterRole with `rules` instead of its own while the block runs; its own rules back
    afterwards. `in_force` (namespace, verb, resource, group, subresource): a permission whose answer changes,
    polled until the authorizer (which reads RBAC through an informer) gives the new answer, both ways."""
    original = cluster_role(plane)
    changed = json.loads(json.dumps(original))
    changed["rules"] = [dict(r) for r in rules]
    before = can_i(plane, *in_force) if in_force else None
    plane.api.request("PUT", CLUSTER_ROLE, changed)
    try:
        if in_force:
            wait_until(lambda: can_i(plane, *in_force) != before, 30, "the changed ClusterRole in force")
        yield
    finally:
        current = cluster_role(plane)
        current["rules"] = original["rules"]
        plane.api.request("PUT", CLUSTER_ROLE, current)
        if in_force:
            wait_until(lambda: can_i(plane, *in_force) == before, 30, "the installed ClusterRole back in force")


def apply_file(plane: ControlPlane, path: Path) -> None:
    """`kubectl apply -f` as admin (server-side: a CRD's size is no matter); CRDs in it Established and
    served."""
    out = kubectl(plane.kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(path))
    assert out.returncode == 0, out.stderr
    out = kubectl(plane.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    assert out.returncode == 0, out.stderr
    import yaml

    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "CustomResourceDefinition":
            spec = doc["spec"]
            served = [v["name"] for v in spec["versions"] if v.get("served")]
            wait_served(plane, f"{spec['group']}/{served[0]}", spec["names"]["plural"])
