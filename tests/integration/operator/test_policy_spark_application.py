"""The SparkApplication engine, with a stand-in for spark-operator (spark_operator_standin.py) that runs
job.py locally and writes status.applicationState like spark-operator: the first application fails (a
driver killed for memory), the policy is Degraded and retries; the second runs the real job, which reads
its policy from a ConfigMap and writes its results into ConfigMaps; an offset committed after the job's
scan is skipped; the applications and ConfigMaps are cleaned up, and the policy recovers. One Spark run,
played once per module: each step is a module fixture one step further than the one before (Degraded,
recovered, deleted, cleaned up), and each test proves one thing a step did.

Without spark-operator nothing moves an application, so the second group of tests reads its spec as the
operator created it, and follows it across an operator restart and the policy's deletion.

Kafka is Apache Kafka (the session's real broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox). Both groups
run on the real kube-apiserver (the install, spark-operator's SparkApplication CRD, the operator on the
installed ServiceAccount's token: the real schema validates every application it creates, the real RBAC
authorizer every call); the saga's last test reads the API server's audit log of every request the operator
made and checks each against the install's ClusterRole."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_log import AuditLog
from brokers import make_topics
from install_renders import cluster_wide_rules
from installed_api import OPERATOR_USER
from kafka_clients import admin_commit, committed, empty_group
from kafka_under_test import Kafka, clean_after
from kube_cluster import ControlPlane
from operator_harness import (
    GROUP_VERSION,
    RUN_TIMEOUT,
    Kube,
    Operators,
    OperatorThread,
    condition,
    policy_status,
)
from spark_operator_standin import SparkOperatorStandIn
from test_shared_spark_applications import DRIVER_SA, SparkApi, spark_api
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions

SPARK_CRD = Path(__file__).parent / "crds" / "sparkapplications.yaml"  # the emulator fault suites serve it
APPS = "sparkoperator.k8s.io/v1beta2"
IMAGE = "ghcr.io/example/kafka-offset-operator:test"


def spark_crds() -> list[dict[str, Any]]:
    """spark-operator's SparkApplication, served beside our CRDs."""
    return [yaml.safe_load(SPARK_CRD.read_text())]


def app_names(kube: Kube) -> list[str]:
    return [a["metadata"]["name"] for a in kube.list(APPS, "sparkapplications")]


# -- a policy's run through spark-operator, step by step


@dataclass
class ClusterRun:
    broker: Kafka
    kube: Kube
    standin: SparkOperatorStandIn
    audit: AuditLog  # the operator's calls since the saga began

    def status(self) -> dict[str, Any]:
        return policy_status(self.kube, "cluster-run")


@pytest.fixture(scope="module")
def cluster_run(real_kafka: Kafka, real_cluster: ControlPlane, real_crds: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterRun]:
    """Group old-report (orders/0 at 4, orders/1 at 5), the stand-in (whose first application fails, and
    which commits orders/1 at 6 after the job's scan) and an Auto policy using the SparkApplication engine
    (of that group alone: Auto deletes what it finds)."""
    with clean_after(real_kafka) as broker, spark_api(real_cluster, tmp_path_factory.mktemp("kube")) as spark:
        kube = spark.api.kube
        make_topics(broker, {"orders": 2})
        empty_group(broker.bootstrap_servers, "old-report", {("orders", 0): 4, ("orders", 1): 5})
        standin = SparkOperatorStandIn(kube, spark.driver_kubeconfig, kube.namespace).start()
        audit = AuditLog.of(real_cluster, OPERATOR_USER)
        operators = Operators(spark.api.options(spark_image=IMAGE))
        try:
            standin.fail_next(1)
            standin.before_complete = lambda app: admin_commit(broker.bootstrap_servers, "old-report", {("orders", 1): 6})
            operators.start()
            kube.create("consumergroupoffsetpolicies", {
                "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                "metadata": {"name": "cluster-run", "namespace": kube.namespace},
                "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "mode": "Auto",
                         "groups": {"include": ["old-report"]}, "rules": {"emptyGroupRetention": "1s"},
                         "analysis": {"engine": "SparkApplication",
                                      "sparkApplication": {"serviceAccount": DRIVER_SA, "executor": {"instances": 2}}}}})
            yield ClusterRun(broker, kube, standin, audit)
        finally:
            operators.close()
            standin.stop()


@pytest.fixture(scope="module")
def degraded(cluster_run: ClusterRun) -> dict[str, Any]:
    """The policy's status once the first application failed."""
    return wait_until(lambda: condition(s := cluster_run.status(), "Degraded").get("status") == "True" and s, 60,
                      "Degraded")


@dataclass
class Recovered:
    status: dict[str, Any]
    states: list[list[str]]  # the states the stand-in wrote for the first two applications


@pytest.fixture(scope="module")
def recovered(cluster_run: ClusterRun, degraded: dict[str, Any]) -> Recovered:
    status = wait_until(lambda: condition(s := cluster_run.status(), "Ready").get("status") == "True" and s,
                        RUN_TIMEOUT, "the retried run")
    return Recovered(status, [list(cluster_run.standin.states[name]) for name in cluster_run.standin.seen[:2]])


@dataclass
class Deleted:
    deletions: list[dict[str, Any]]  # the OffsetDeletions the run created, as created
    committed: dict[tuple[str, int], int]  # old-report's offsets once they Succeeded


@pytest.fixture(scope="module")
def deleted(cluster_run: ClusterRun, recovered: Recovered) -> Deleted:
    found = cluster_run.kube.list(GROUP_VERSION, "offsetdeletions")
    for d in found:
        cluster_run.kube.wait_for_phase(d["metadata"]["name"], "Succeeded")
    return Deleted(found, committed(cluster_run.broker.bootstrap_servers, "old-report"))


@dataclass
class CleanedUp:
    leftover_configmaps: list[str]
    operator_calls: set[tuple[str, str, str]]  # every (API group, resource, verb) the operator called


@pytest.fixture(scope="module")
def cleaned_up(cluster_run: ClusterRun, deleted: Deleted) -> CleanedUp:
    kube = cluster_run.kube
    wait_until(lambda: app_names(kube) == [], 30, "apps removed")
    leftovers = [cm["metadata"]["name"] for cm in kube.list("v1", "configmaps")
                 if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/run")]
    return CleanedUp(leftovers, {(c.group, c.resource_path, c.verb) for c in cluster_run.audit.calls()})


@pytest.mark.slow
def test_a_failed_application_degrades_the_policy(degraded: dict[str, Any]) -> None:
    assert condition(degraded, "Degraded")["reason"] == "SparkApplicationFailed"
    assert "OOMKilled" in condition(degraded, "Degraded")["message"]


@pytest.mark.slow
def test_the_retried_application_runs_the_job_and_the_policy_recovers(recovered: Recovered) -> None:
    status = recovered.status
    assert condition(status, "Degraded")["status"] == "False"
    assert status["lastRun"]["engine"] == "SparkApplication" and status["lastRun"]["candidates"] == 2
    assert "1 CommittedSinceScan" in condition(status, "Ready")["message"]


@pytest.mark.slow
def test_spark_operator_saw_a_failed_then_a_completed_application(recovered: Recovered) -> None:
    first, second = recovered.states
    assert first == ["SUBMITTED", "FAILED"]
    assert second == ["SUBMITTED", "RUNNING", "COMPLETED"]


@pytest.mark.slow
def test_a_partition_committed_after_the_scan_is_never_proposed(deleted: Deleted) -> None:
    [deletion] = deleted.deletions
    assert deletion["spec"]["topics"] == [{"name": "orders", "partitions": [0]}] and deletion["spec"]["approved"]
    assert deleted.committed == {("orders", 1): 6}


@pytest.mark.slow
def test_applications_and_result_configmaps_are_cleaned_up(cleaned_up: CleanedUp) -> None:
    assert cleaned_up.leftover_configmaps == []


@pytest.mark.slow
def test_the_installs_clusterrole_allows_every_call_the_operator_made(cleaned_up: CleanedUp) -> None:
    assert ("sparkoperator.k8s.io", "sparkapplications", "create") in cleaned_up.operator_calls  # the log is read
    assert cleaned_up.operator_calls - allowed_by_clusterrole() == set()  # the install's RBAC suffices


def allowed_by_clusterrole() -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in cluster_wide_rules() for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


# -- an application nobody runs


@pytest.fixture
def spark(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[SparkApi]:
    """The install, spark-operator's SparkApplication CRD and a fresh namespace on the real API server."""
    with spark_api(real_cluster, tmp_path) as s:
        yield s


@pytest.fixture
def kube(spark: SparkApi) -> Kube:
    return spark.api.kube


@pytest.fixture
def operator_options(spark: SparkApi) -> OperatorOptions:
    return spark.api.options(spark_image=IMAGE)


@dataclass
class Submitted:
    operator: OperatorThread
    apps: list[dict[str, Any]]  # the SparkApplications once there was one


@pytest.fixture
def submitted(kafka: Kafka, kube: Kube, start_operator: Any) -> Submitted:
    """Policy "spec-check" with the SparkApplication engine, and the application its operator created."""
    op: OperatorThread = start_operator()
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": "spec-check", "namespace": kube.namespace},
        "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers},
                 "analysis": {"engine": "SparkApplication", "brokerRetention": "7d",
                              "sparkApplication": {"image": "example/koo:1", "driver": {"memory": "2g"}}}}})
    return Submitted(op, wait_until(lambda: kube.list(APPS, "sparkapplications"), 30, "an app"))


@dataclass
class Adopted:
    name: str  # the application the first operator created
    while_down: list[str]  # the applications once that operator stopped
    after_restart: list[str]  # the applications once the next operator visited the policy


@pytest.fixture
def adopted(submitted: Submitted, kube: Kube, start_operator: Any) -> Adopted:
    """The first operator stops while its run goes on; the next one visits the policy."""
    name = submitted.apps[0]["metadata"]["name"]
    submitted.operator.stop()
    while_down = app_names(kube)
    before = policy_progress(kube)
    # The visit's message carries its start time in seconds: let the clock reach the next second first.
    second = int(time.time())
    wait_until(lambda: int(time.time()) > second, 5, "the next second")
    start_operator()
    wait_until(lambda: policy_progress(kube) != before, 30, "the new operator's visit")
    return Adopted(name, while_down, app_names(kube))


def test_the_application_spec_is_what_spark_operator_needs(submitted: Submitted, kafka: Kafka, kube: Kube) -> None:
    [app] = submitted.apps
    name = app["metadata"]["name"]
    spec = app["spec"]
    assert (spec["type"], spec["mode"], spec["image"]) == ("Python", "cluster", "example/koo:1")
    assert spec["mainApplicationFile"].endswith("/spark/offset_expiry/job.py")
    assert spec["driver"]["memory"] == "2g" and spec["executor"]["instances"] == 1
    args = spec["arguments"]
    assert args[args.index("--bootstrap-server") + 1] == kafka.bootstrap_servers
    assert args[args.index("--policy") + 1] == f"configmap://{kube.namespace}/{name}-policy"
    assert args[args.index("--results") + 1].startswith(f"configmap://{kube.namespace}/{name}-results?")
    assert args[args.index("--broker-retention") + 1] == "10080m"
    [owner] = app["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("ConsumerGroupOffsetPolicy", "spec-check")
    assert "policy.yaml" in kube.get("v1", "configmaps", f"{name}-policy")["binaryData"]


@pytest.mark.slow  # an operator restart (Kopf's 2 s grace) and the clock's next second
def test_a_run_outlives_its_operator_and_the_next_operator_adopts_it(adopted: Adopted) -> None:
    assert adopted.while_down == [adopted.name]  # the run keeps going without the operator ...
    assert adopted.after_restart == [adopted.name]  # ... and the next operator adopts it instead of starting another


@pytest.mark.slow  # an operator restart (Kopf's 2 s grace) and the clock's next second
def test_deleting_the_policy_deletes_its_adopted_run(adopted: Adopted, kube: Kube) -> None:
    kube.delete(GROUP_VERSION, "consumergroupoffsetpolicies", "spec-check")
    wait_until(lambda: app_names(kube) == [], 30, "the run deleted with its policy")


def policy_progress(kube: Kube) -> str:
    return str(condition(policy_status(kube, "spec-check"), "Progressing").get("message"))
