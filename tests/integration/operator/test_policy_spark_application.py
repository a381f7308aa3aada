"""The SparkApplication engine, with a stand-in for spark-operator (spark_operator_standin.py) that runs
job.py locally and writes status.applicationState like spark-operator: the first application fails (a
driver killed for memory), the policy is Degraded and retries; the second runs the real job, which reads
its policy from a ConfigMap and writes its results into ConfigMaps; an offset committed after the job's
scan is skipped; the applications and ConfigMaps are cleaned up, and the policy recovers. One Spark run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from operator_harness import GROUP_VERSION, NAMESPACE, ROOT, EmulatedCluster, Kube, OperatorThread
from operator_kafka import empty_group, make_topics
from policy_scenario import admin_commit, committed
from spark_operator_standin import SparkOperatorStandIn

from kafka_offset_operator.context import OperatorOptions
from kafka_sandbox import SandboxBroker

SPARK_CRD = Path(__file__).parent / "crds" / "sparkapplications.yaml"
APPS = "sparkoperator.k8s.io/v1beta2"
RUN_TIMEOUT = 240.0


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    """The emulated API with our CRDs and spark-operator's SparkApplication."""
    c = EmulatedCluster(extra_crds=[yaml.safe_load(SPARK_CRD.read_text())]).start()
    try:
        yield c
        assert c.server_errors() == [], "the emulated API server failed requests"
    finally:
        c.stop()


@pytest.fixture
def operator_options(kubeconfig: Path) -> OperatorOptions:
    return OperatorOptions(namespaces=(NAMESPACE,), kubeconfig=kubeconfig, retry_interval=0.3, kafka_timeout_ms=5000,
                           spark_image="ghcr.io/example/kafka-offset-operator:test")


@pytest.fixture
def standin(kube: Kube, kubeconfig: Path) -> Iterator[SparkOperatorStandIn]:
    s = SparkOperatorStandIn(kube, kubeconfig).start()
    try:
        yield s
    finally:
        s.stop()


def cond(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_spark_application_engine_fails_recovers_and_skips_a_late_commit(
        broker: SandboxBroker, cluster: EmulatedCluster, kube: Kube, standin: SparkOperatorStandIn,
        start_operator: Any) -> None:
    make_topics(broker, {"orders": 2})
    empty_group(broker, "old-report", {("orders", 0): 4, ("orders", 1): 5})
    standin.fail_next(1)
    standin.before_complete = lambda app: admin_commit(broker, "old-report", {("orders", 1): 6})
    start_operator()
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": "cluster-run", "namespace": NAMESPACE},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "mode": "Auto",
                 "rules": {"emptyGroupRetention": "1s"},
                 "analysis": {"engine": "SparkApplication",
                              "sparkApplication": {"serviceAccount": "offset-analysis", "executor": {"instances": 2}}}}})

    def policy() -> dict[str, Any]:
        return kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", "cluster-run").get("status") or {}

    degraded = kube.wait_for(lambda: cond(policy(), "Degraded").get("status") == "True" and policy(), 60, "Degraded")
    assert cond(degraded, "Degraded")["reason"] == "SparkApplicationFailed"
    assert "OOMKilled" in cond(degraded, "Degraded")["message"]

    status = kube.wait_for(lambda: cond(policy(), "Ready").get("status") == "True" and policy(), RUN_TIMEOUT,
                           "the retried run")
    assert cond(status, "Degraded")["status"] == "False"
    assert status["lastRun"]["engine"] == "SparkApplication" and status["lastRun"]["candidates"] == 2
    assert "1 CommittedSinceScan" in cond(status, "Ready")["message"]

    # What spark-operator was given.
    first, second = standin.seen[:2]
    assert standin.states[first] == ["SUBMITTED", "FAILED"]
    assert standin.states[second] == ["SUBMITTED", "RUNNING", "COMPLETED"]

    # The deletion skips the partition committed after the scan: it was never proposed.
    [deletion] = kube.list(GROUP_VERSION, "offsetdeletions")
    assert deletion["spec"]["topics"] == [{"name": "orders", "partitions": [0]}] and deletion["spec"]["approved"]
    kube.wait_for_status(deletion["metadata"]["name"], lambda s: s.get("phase") == "Succeeded", what="deleted")
    assert committed(broker, "old-report") == {("orders", 1): 6}

    # Nothing left behind: applications, policy and result ConfigMaps.
    kube.wait_for(lambda: kube.list(APPS, "sparkapplications") == [], 30, "apps removed")
    leftovers = [cm["metadata"]["name"] for cm in kube.list("v1", "configmaps")
                 if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/run")]
    assert leftovers == []
    assert operator_calls(cluster) - allowed_by_clusterrole() == set()  # the install's RBAC suffices


def operator_calls(cluster: EmulatedCluster) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of every request the operator made (Kopf, or the kubernetes client)."""
    assert cluster.emulator is not None
    verbs = {"fetch": "get", "list": "list", "watch": "watch", "create": "create", "delete": "delete"}
    calls = set()
    for request in cluster.emulator._requests:  # kmock keeps every request it served
        agent = request.headers.get("User-Agent", "")
        if request.resource is None or request.action is None or not request.resource.plural:
            continue
        if not agent.startswith(("kopf", "OpenAPI-Generator")):
            continue  # the test's own client and the stand-in (urllib)
        method = request.method.value
        verb = {"PATCH": "patch", "PUT": "update"}.get(method) or verbs[request.action.value.lower()]
        resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
        calls.add((request.resource.group, resource, verb))
    return calls


def allowed_by_clusterrole() -> set[tuple[str, str, str]]:
    docs = yaml.safe_load_all((ROOT / "manifests" / "operator" / "20-clusterrole.yaml").read_text())
    [role] = [d for d in docs if d and d["kind"] == "ClusterRole"]
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_the_application_spec_and_its_life_across_operator_restarts(
        broker: SandboxBroker, kube: Kube, start_operator: Any) -> None:
    """Without spark-operator nothing moves the application, so its spec is read as the operator created it.
    A restarted operator adopts the run still going; deleting the policy deletes it."""
    op: OperatorThread = start_operator()
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": "spec-check", "namespace": NAMESPACE},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers},
                 "analysis": {"engine": "SparkApplication", "brokerRetention": "7d",
                              "sparkApplication": {"image": "example/koo:1", "driver": {"memory": "2g"}}}}})
    [app] = kube.wait_for(lambda: kube.list(APPS, "sparkapplications"), 30, "an app")
    name = app["metadata"]["name"]
    spec = app["spec"]
    assert (spec["type"], spec["mode"], spec["image"]) == ("Python", "cluster", "example/koo:1")
    assert spec["mainApplicationFile"].endswith("/spark/offset_expiry/job.py")
    assert spec["driver"]["memory"] == "2g" and spec["executor"]["instances"] == 1
    args = spec["arguments"]
    assert args[args.index("--bootstrap-server") + 1] == broker.bootstrap_servers
    assert args[args.index("--policy") + 1] == f"configmap://{NAMESPACE}/{name}-policy"
    assert args[args.index("--results") + 1].startswith(f"configmap://{NAMESPACE}/{name}-results?")
    assert args[args.index("--broker-retention") + 1] == "10080m"
    [owner] = app["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("ConsumerGroupOffsetPolicy", "spec-check")
    assert "policy.yaml" in kube.get("v1", "configmaps", f"{name}-policy")["binaryData"]

    op.stop()  # the run keeps going without the operator ...
    assert [a["metadata"]["name"] for a in kube.list(APPS, "sparkapplications")] == [name]
    before = policy_progress(kube)
    # The visit's message carries its start time in seconds: let the clock reach the next second first.
    second = int(time.time())
    kube.wait_for(lambda: int(time.time()) > second, 5, "the next second")
    start_operator()  # ... and the next operator adopts it instead of starting another
    kube.wait_for(lambda: policy_progress(kube) != before, 30, "the new operator's visit")
    assert [a["metadata"]["name"] for a in kube.list(APPS, "sparkapplications")] == [name]

    kube.delete(GROUP_VERSION, "consumergroupoffsetpolicies", "spec-check")
    kube.wait_for(lambda: kube.list(APPS, "sparkapplications") == [], 30, "the run deleted with its policy")


def policy_progress(kube: Kube) -> str:
    status = kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", "spec-check").get("status") or {}
    return str(cond(status, "Progressing").get("message"))
