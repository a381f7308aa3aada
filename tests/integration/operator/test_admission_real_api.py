"""The shipped ValidatingAdmissionPolicy on a real kube-apiserver (the real-Kubernetes harness,
tests/support/kube_fixtures.py, from issue 20): the API server accepts it, type-checks its expressions
against the CRD's schema without a warning, and refuses an approval or a request in someone else's name, and
the requester's own approval under four eyes, while it admits the proper ones. Users are client
certificates of the cluster's CA (`user_api`), in group system:masters so that RBAC allows the writes and
only the admission policy can refuse them.

Skipped while the harness is absent (before it is merged, or without Go); tests/unit/crds/test_admission_policy.py
evaluates the same expressions with a CEL interpreter meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

kube_fixtures = pytest.importorskip("kube_fixtures", reason="the real Kubernetes API server harness is not here")

from waiting import wait_until  # noqa: E402

from kafka_offset_operator.model.admission import NAME  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
POLICY_FILE = ROOT / "manifests" / "components" / "admission-policy" / "admission-policy.yaml"
DELETIONS = "/apis/kafkaoffsets.dev/v1alpha1/namespaces/{ns}/offsetdeletions"
MASTERS = ["system:masters"]


def deletion(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": {"kafka": {"bootstrapServers": "kafka:9092"}, "group": "g", "topics": [{"name": "orders"}],
                     **spec}}


def refusal(call: Any) -> str | None:
    """The API server's message when `call` is refused, None when it is admitted."""
    try:
        call()
    except kube_fixtures.ApiError as exc:
        return str(exc.body.get("message", ""))
    return None


@pytest.fixture
def admission(real_cluster: Any, real_crds: Path) -> Iterator[Any]:
    """The policy and its binding applied (as the install applies them), and in force; removed afterwards, so
    the session's other tests meet the API server without it (they approve without an approvedBy)."""
    out = kube_fixtures.kubectl(real_crds, "apply", "-f", str(POLICY_FILE))
    assert out.returncode == 0, out.stderr
    wait_until(lambda: kube_fixtures.approvals_policy_enforced(real_cluster), 30, "the admission policy in force")
    try:
        yield real_cluster
    finally:
        kube_fixtures.remove_approvals_policy(real_cluster)


def test_the_api_server_accepts_and_type_checks_the_policy(admission: Any) -> None:
    path = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{NAME}"

    def checked() -> dict[str, Any] | None:
        status = admission.api.request("GET", path).get("status") or {}
        return status if status.get("observedGeneration") else None

    status = wait_until(checked, 60, "the policy's type checking")
    assert (status.get("typeChecking") or {}).get("expressionWarnings") in (None, []), status


def test_names_are_verified_and_four_eyes_kept(admission: Any, real_namespace: str) -> None:
    alice, bob = admission.user_api("alice", MASTERS), admission.user_api("bob", MASTERS)
    base = DELETIONS.format(ns=real_namespace)
    # The binding takes effect a moment after it is created: wait for the first refusal.
    wait_until(lambda: refusal(lambda: alice.request("POST", base, deletion("probe", requestedBy="bob"))),
               60, "the admission policy in force")
    assert "spec.requestedBy must be your user name, alice" in (
        refusal(lambda: alice.request("POST", base, deletion("as-bob", requestedBy="bob"))) or "")
    alice.request("POST", base, deletion("four-eyes", requestedBy="alice", separateApprover=True))
    own = {"spec": {"approved": True, "approvedBy": "alice"}}
    patch = "application/merge-patch+json"
    assert "four eyes" in (refusal(lambda: alice.request("PATCH", f"{base}/four-eyes", own, patch)) or "")
    assert "spec.approvedBy must be your user name, bob" in (
        refusal(lambda: bob.request("PATCH", f"{base}/four-eyes", own, patch)) or "")
    bob.request("PATCH", f"{base}/four-eyes", {"spec": {"approved": True, "approvedBy": "bob"}}, patch)
    stored = admission.api.request("GET", f"{base}/four-eyes")["spec"]
    assert (stored["approved"], stored["approvedBy"], stored["requestedBy"]) == (True, "bob", "alice")
