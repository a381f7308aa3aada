"""What Argo CD (our health.lua, run by a real Lua interpreter) and Flux (our healthCheckExprs, run by a CEL
implementation) make of the statuses the operator really writes: deletions awaiting approval, done, retrying,
and stuck; policies that cannot run. The conditions are in kstatus form: Ready, Reconciling, Stalled.

The deletions' statuses are written through the real kube-apiserver's status subresource (the install
applied, the operator on its ServiceAccount's token) against Apache Kafka. The policies stay on the
emulator: one has a spec the real API server refuses (its CRD's pattern), which only an older CRD would
store (`cluster.unvalidated()`; replacing the session's CRD would meet every other test)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from argocd_health import health, health_script
from brokers import make_topics
from flux_health import flux_status
from kafka_clients import empty_group
from kafka_under_test import Kafka
from operator_harness import (
    GROUP_VERSION,
    EmulatedCluster,
    Kube,
    Operators,
    OperatorThread,
    condition,
    fast_options,
)
from test_offset_deletion import deletion
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf

Start = Callable[..., OperatorThread]
DELETION = health_script("kafkaoffsets.dev", "OffsetDeletion")
POLICY = health_script("kafkaoffsets.dev", "ConsumerGroupOffsetPolicy")
CAPTURE = os.environ.get("CAPTURE_HEALTH_TESTDATA")  # a directory: write what the operator wrote, for testdata/


def capture(obj: dict[str, Any], name: str) -> None:
    if CAPTURE:
        kept = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "spec", "status") if k in obj}
        kept["metadata"] = {k: obj["metadata"][k] for k in ("name", "namespace", "generation") if k in obj["metadata"]}
        Path(CAPTURE, f"{name}.yaml").write_text(yaml.safe_dump(kept, sort_keys=False))


def settled(kube: Kube, plural: str, name: str, ready_reason: str, kstatus: str | None) -> dict[str, Any]:
    """The object once Ready carries `ready_reason` and the kstatus condition (if any) is there."""
    def check() -> dict[str, Any] | None:
        obj = kube.get(GROUP_VERSION, plural, name)
        status = obj.get("status") or {}
        if condition(status, "Ready").get("reason") != ready_reason:
            return None
        present = {c["type"] for c in status.get("conditions", ()) if c["type"] in ("Reconciling", "Stalled")}
        return obj if present == ({kstatus} if kstatus else set()) else None
    return wait_until(check, 30, f"{name}: Ready reason {ready_reason}, {kstatus or 'no kstatus condition'}")


def test_deletions_as_argo_cd_and_flux_see_them(kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "done", {("orders", 0): 3})
    plain = {"bootstrapServers": kafka.bootstrap_servers}
    no_secret = {**plain, "securityProtocol": "SASL_PLAINTEXT",
                 "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "absent"}}}
    start_operator()
    kube.create("offsetdeletions", deletion("waiting", "done", [{"name": "orders"}], kafka=plain, approved=False))
    kube.create("offsetdeletions", deletion("done", "done", [{"name": "orders"}], kafka=plain))
    kube.create("offsetdeletions", deletion("unknown-group", "never-existed", [{"name": "orders"}], kafka=plain))
    kube.create("offsetdeletions", deletion("no-secret", "done", [{"name": "orders"}], kafka=no_secret))

    cases = [  # name, Ready's reason, kstatus condition, Argo CD health, Flux status
        ("waiting", "AwaitingApproval", None, "Suspended", "Current"),
        ("done", "Succeeded", None, "Healthy", "Current"),
        ("unknown-group", "Failed", "Stalled", "Degraded", "Failed"),
        ("no-secret", "SecretNotFound", "Reconciling", "Progressing", "InProgress"),
    ]
    for name, reason, kstatus, argo, flux in cases:
        obj = settled(kube, "offsetdeletions", name, reason, kstatus)
        capture(obj, f"deletion-{name}")
        status = obj["status"]
        assert status["observedGeneration"] == obj["metadata"]["generation"]
        assert all(c["observedGeneration"] == obj["metadata"]["generation"] for c in status["conditions"])
        assert (name, health(DELETION, obj)["status"], flux_status(obj)) == (name, argo, flux)
    assert health(DELETION, kube.get(GROUP_VERSION, "offsetdeletions", "unknown-group"))["message"].startswith(
        condition(kube.get(GROUP_VERSION, "offsetdeletions", "unknown-group")["status"], "Stalled")["message"][:20])


def test_policies_that_cannot_run_as_argo_cd_and_flux_see_them(cluster: EmulatedCluster, tmp_path: Path) -> None:
    """On the emulator (see the module docstring)."""
    kube = Kube(cluster.url)
    operators = Operators(fast_options(cluster.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        operators.start()
        policies_that_cannot_run(cluster, kube)
    finally:
        operators.close()


def policies_that_cannot_run(cluster: EmulatedCluster, kube: Kube) -> None:
    down = {"bootstrapServers": "127.0.0.1:1"}
    for name, spec in (("bad-interval", {"kafka": down, "mode": "DryRun", "schedule": {"interval": "soon"}}),
                       ("kafka-down", {"kafka": down, "mode": "DryRun", "schedule": {"interval": "1h"}})):
        with cluster.unvalidated():  # the API server refuses the bad interval; an older CRD would not
            kube.create("consumergroupoffsetpolicies", {
                "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                "metadata": {"name": name}, "spec": spec})
    for name, reason, kstatus, argo, flux in (
            ("bad-interval", "InvalidSpec", "Stalled", "Degraded", "Failed"),
            ("kafka-down", "KafkaUnavailable", "Reconciling", "Degraded", "InProgress")):
        obj = settled(kube, "consumergroupoffsetpolicies", name, reason, kstatus)
        capture(obj, f"policy-{name}")
        assert (name, health(POLICY, obj)["status"], flux_status(obj)) == (name, argo, flux)
