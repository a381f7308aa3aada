"""Shared SparkApplications (issue 12), the operator under Kopf on the real kube-apiserver (the install
applied, the operator with the installed ServiceAccount's token, the SparkApplication CRD installed, the
driver with its own ServiceAccount's token and manifests/spark/driver-rbac.yaml: installed_api.py):

- three policies of one namespace, cluster and credentials due together cost ONE application (the
  spark-operator stand-in runs its job.py for real, one scan); one of them is deleted while it runs, and the
  other two still get each its own report, from its own rules, and the real garbage collector keeps the
  application (still owned by them) and drops the gone owner's reference; then the application and every
  ConfigMap go;
- an operator restart while a shared application runs: the next operator adopts it for each member (no
  second application), and delivers each member its own results once it completes (no Spark here: the test
  writes the results as the driver would, through offset_expiry.results_sink, and completes the run);
- an application several policies own survives until the last of them is gone, then the real garbage
  collector takes it and the ConfigMaps it owns.

Nothing here needs the emulator's fault injection, so it runs on the real API server: the module overrides
the folder's `kube`, `kubeconfig` and `operator_options` fixtures with the real ones.

That each member's report equals the report of a solo run on the same snapshot is proven where it is
computed (tests/integration/spark/test_shared_scan_pipeline.py: execute_many against each policy alone);
here each member's report is checked against the groups its own patterns select.

Kafka is Apache Kafka (the session's real broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox): the groups
are simple groups committed through the wire, and the rule is seconds long (standaloneRetention 2s), so
they are candidates a moment later without moving a clock."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubeflow_crd
import pytest
from brokers import make_topics
from installed_api import InstalledApi, apply_file, installed_api
from kafka_clients import admin_commit
from kafka_under_test import Kafka, clean_after
from kube_cluster import ControlPlane
from operator_harness import GROUP_VERSION, ROOT, RUN_TIMEOUT, Kube, Operators, OperatorThread, condition
from spark_operator_standin import SparkOperatorStandIn
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.engines.spark_application import shared_owner
from kafka_offset_operator.model.connection import ConnectionSettings
from offset_expiry import results_sink

SPARK_CRD = Path(__file__).parent / "crds" / "sparkapplications.yaml"
APPS = "sparkoperator.k8s.io/v1beta2"
POLICIES = "consumergroupoffsetpolicies"
IMAGE = "ghcr.io/example/kafka-offset-operator:test"
DAY_MS = 86_400_000
TEAMS = {"team-a": 3, "team-b": 2, "team-c": 1}  # standalone groups per team, each with 2 offsets
RULE = "2s"  # standaloneRetention: the groups, committed more than 2 s ago, are candidates
WINDOW_S = 2.0  # policies created together arrive well within it, even on a loaded machine


DRIVER_SA = "kafka-offset-spark"  # manifests/spark/driver-rbac.yaml


@dataclass
class SparkApi:
    api: InstalledApi
    driver_kubeconfig: Path  # the driver's ServiceAccount's token: what spark-operator's driver pod would have

    def options(self, **overrides: Any) -> OperatorOptions:
        return self.api.options(**{"spark_image": IMAGE, "scan_share_window_s": WINDOW_S, **overrides})


def install_spark_crd(plane: ControlPlane) -> None:
    """The SparkApplication CRD, rebuilt from kubeflow's published types (kubeflow_crd.py)."""
    try:
        kubeflow_crd.install(plane.api, kubeflow_crd.crd())
    except kubeflow_crd.Unavailable as exc:  # no PyPI: the structural stand-in, which keeps every field
        print(f"the SparkApplication CRD is the stand-in: {exc}")
        apply_file(plane, SPARK_CRD)


@contextmanager
def spark_api(plane: ControlPlane, workdir: Path) -> Iterator[SparkApi]:
    """The install, the SparkApplication CRD and the driver's RBAC in the test's namespace."""
    install_spark_crd(plane)
    with installed_api(plane, workdir) as api:
        rbac = (ROOT / "manifests" / "spark" / "driver-rbac.yaml").read_text().replace("namespace: team-a",
                                                                                    f"namespace: {api.namespace}")
        (workdir / "driver-rbac.yaml").write_text(rbac)
        apply_file(plane, workdir / "driver-rbac.yaml")
        driver = plane.service_account_kubeconfig(workdir / "driver.kubeconfig", api.namespace, DRIVER_SA)
        yield SparkApi(api, driver)


def new_policy(kube: Kube, name: str, bootstrap: str, team: str) -> None:
    kube.create(POLICIES, {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": name, "namespace": kube.namespace},
        "spec": {"kafka": {"bootstrapServers": bootstrap},
                 "groups": {"include": [f"{team}-*"]}, "rules": {"standaloneRetention": RULE},
                 "analysis": {"engine": "SparkApplication", "brokerRetention": "7d",
                              "sparkApplication": {"image": IMAGE, "serviceAccount": DRIVER_SA}}}})


def ready(kube: Kube, name: str) -> dict[str, Any] | None:
    s = kube.status(POLICIES, name)
    return s if condition(s, "Ready").get("status") == "True" and s.get("lastRun") else None


def app_names(kube: Kube) -> list[str]:
    return [a["metadata"]["name"] for a in kube.list(APPS, "sparkapplications")]


def run_configmaps(kube: Kube) -> list[str]:
    return [cm["metadata"]["name"] for cm in kube.list("v1", "configmaps")
            if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/run")]


def candidate_groups(s: dict[str, Any]) -> set[str]:
    return {c["group"] for c in s.get("topCandidates") or ()}


@pytest.fixture(scope="module")
def broker(real_kafka: Kafka) -> Iterator[Kafka]:
    """Standalone groups committed more than 2 s ago: candidates of the 2s rule."""
    with clean_after(real_kafka) as b:
        make_topics(b, {"orders": 2})
        for team, count in TEAMS.items():
            for i in range(count):
                admin_commit(b.bootstrap_servers, f"{team}-{i}", {("orders", 0): 1, ("orders", 1): 2})
        committed_at = time.time()
        wait_until(lambda: time.time() > committed_at + 2.5, 5, "the commits to be older than the rule's 2 s")
        yield b


# -- one application for three policies, one of them deleted while it runs


@dataclass
class SharedRun:
    kube: Kube
    seen: list[str]  # the applications spark-operator saw
    members: list[str]  # the shared application's members
    reports: dict[str, dict[str, Any]]  # each member's results, as the job wrote them
    c_gone_while_running: bool  # policy c was deleted (finalizer and all) before the application completed
    owners: list[list[str]]  # the application's owners (policy names) when it ran, and once c was gone
    a: dict[str, Any]
    b: dict[str, Any]
    apps_after: list[str]
    configmaps_after: list[str]


def read_results(kube: Kube, name: str) -> dict[str, Any]:
    """A results manifest and its parts, put together as the operator does (results_sink.assemble)."""
    manifest = json.loads(base64.b64decode(kube.get("v1", "configmaps", name)["binaryData"][results_sink.MANIFEST_KEY]))
    parts = [base64.b64decode(kube.get("v1", "configmaps", f"{name}-part-{i}")["binaryData"][results_sink.PART_KEY])
             for i in range(int(manifest["parts"]))]
    return results_sink.assemble(manifest, parts)


@pytest.fixture(scope="module")
def shared_run(broker: Kafka, real_cluster: ControlPlane, real_crds: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRun]:
    with spark_api(real_cluster, tmp_path_factory.mktemp("kube")) as spark:
        kube = spark.api.kube
        standin = SparkOperatorStandIn(kube, spark.driver_kubeconfig, kube.namespace).start()
        operators = Operators(spark.options())
        seen_members: list[str] = []
        reports: dict[str, dict[str, Any]] = {}
        owners: list[list[str]] = []
        c_gone = threading.Event()

        def delete_c(app: dict[str, Any]) -> None:
            """After the job, before COMPLETED: a member goes while the application runs."""
            name = app["metadata"]["name"]
            for member in sparkapp.members_of(app):
                seen_members.append(member.name)
                reports[member.name] = read_results(kube, member.results)
            owners.append(sorted(o["name"] for o in kube.get(APPS, "sparkapplications", name)["metadata"]["ownerReferences"]))
            kube.delete(GROUP_VERSION, POLICIES, "c")
            wait_until(lambda: kube.find(GROUP_VERSION, POLICIES, "c") is None, 30, "policy c deleted")
            # The real garbage collector drops the dangling reference and keeps what others still own.
            left = wait_until(lambda: (lambda o: o if "c" not in o else None)(
                sorted(r["name"] for r in kube.get(APPS, "sparkapplications", name)["metadata"]["ownerReferences"])),
                60, "the gone owner's reference dropped")
            owners.append(left)
            if app_names(kube) == [name]:  # ... and the others' run is still there
                c_gone.set()

        standin.before_complete = delete_c
        try:
            operators.start()
            for name, team in (("a", "team-a"), ("b", "team-b"), ("c", "team-c")):
                new_policy(kube, name, broker.bootstrap_servers, team)
            try:
                a = wait_until(lambda: ready(kube, "a"), RUN_TIMEOUT, "policy a's run")
                b = wait_until(lambda: ready(kube, "b"), RUN_TIMEOUT, "policy b's run")
            except AssertionError as exc:  # what spark-operator's stand-in saw, and where each policy is
                raise AssertionError(f"{exc}; applications: {dict(standin.states)}; policies: "
                                     f"{ {n: kube.status(POLICIES, n).get('conditions') for n in ('a', 'b')} }") from None
            wait_until(lambda: app_names(kube) == [] and run_configmaps(kube) == [], 30, "the run cleaned up")
            yield SharedRun(kube, list(standin.seen), seen_members, reports, c_gone.is_set(), owners, a, b,
                            app_names(kube), run_configmaps(kube))
        finally:
            operators.close()
            standin.stop()


@pytest.mark.slow  # one Spark run
def test_policies_due_together_share_one_application(shared_run: SharedRun) -> None:
    [app] = shared_run.seen
    assert app.startswith("shared-analysis-")
    assert sorted(shared_run.members) == ["a", "b", "c"]


@pytest.mark.slow
def test_each_member_gets_its_own_report_from_its_own_rules(shared_run: SharedRun) -> None:
    for s, team in ((shared_run.a, "team-a"), (shared_run.b, "team-b")):
        assert s["lastRun"]["engine"] == "SparkApplication"
        assert s["lastRun"]["candidates"] == 2 * TEAMS[team]  # two offsets per group
        assert candidate_groups(s) == {f"{team}-{i}" for i in range(TEAMS[team])}


@pytest.mark.slow
def test_each_members_results_are_a_solo_runs_of_its_own_policy_on_the_shared_snapshot(shared_run: SharedRun) -> None:
    """What a run of the policy alone reports: exactly its own groups' offsets (two per group, committed
    more than 2 s ago, Standalone under the 2s rule), and the same snapshot for every member."""
    scanned = set()
    for name, team in (("a", "team-a"), ("b", "team-b"), ("c", "team-c")):
        doc = shared_run.reports[name]
        rows = {(r["group"], r["topic"], r["partition"], r["offset"], r["reason"], r["candidate"]) for r in doc["offsets"]}
        assert rows == {(f"{team}-{i}", "orders", p, p + 1, "Standalone", True)
                        for i in range(TEAMS[team]) for p in (0, 1)}
        assert doc["summary"]["brokerRetentionMs"] == 7 * DAY_MS
        scanned.add(doc["summary"]["recordsScanned"])
    assert len(scanned) == 1


@pytest.mark.slow
def test_deleting_one_member_mid_run_does_not_cancel_the_others(shared_run: SharedRun) -> None:
    assert shared_run.c_gone_while_running  # c went while the application ran, which stayed for a and b
    assert shared_run.owners == [["a", "b", "c"], ["a", "b"]]
    assert condition(shared_run.a, "Degraded").get("status") != "True"
    assert condition(shared_run.b, "Degraded").get("status") != "True"


@pytest.mark.slow
def test_the_shared_application_and_every_configmap_go_once_read(shared_run: SharedRun) -> None:
    assert shared_run.apps_after == [] and shared_run.configmaps_after == []


# -- an operator restart while a shared application runs (nothing runs it: the test completes it)


@pytest.fixture
def spark(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[SparkApi]:
    with spark_api(real_cluster, tmp_path) as s:
        yield s


@pytest.fixture
def kube(spark: SparkApi) -> Kube:
    return spark.api.kube


@pytest.fixture
def kubeconfig(spark: SparkApi) -> Path:
    return spark.api.token_kubeconfig


@pytest.fixture
def operator_options(spark: SparkApi) -> OperatorOptions:
    return spark.options()


def write_results(kube: Kube, url: str, summary: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """What results_sink.write does in the driver (its layout, with its own functions), over the test's client."""
    target = results_sink.parse_target(url)
    parts = results_sink.split(results_sink.encode(results_sink.cut_down(summary, rows)))
    docs = [(target.part_name(i), results_sink.PART_KEY, p) for i, p in enumerate(parts)]
    docs.append((target.name, results_sink.MANIFEST_KEY, json.dumps(results_sink.manifest(target, parts)).encode()))
    for name, key, value in docs:  # the manifest last
        kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": name, "namespace": target.namespace, "labels": dict(target.labels),
                                                "ownerReferences": [dict(target.owner or {})]},
                                   "binaryData": {key: base64.b64encode(value).decode()}})


def progress(kube: Kube, name: str) -> str:
    return str(condition(kube.status(POLICIES, name), "Progressing").get("message"))


@pytest.mark.slow  # an operator restart (Kopf's 2 s grace), the share window and the clock's next second
def test_a_restart_mid_run_adopts_the_shared_application_and_delivers_each_members_results(
        broker: Kafka, kube: Kube, start_operator: Any) -> None:
    first: OperatorThread = start_operator()
    new_policy(kube, "a", broker.bootstrap_servers, "team-a")
    new_policy(kube, "b", broker.bootstrap_servers, "team-b")
    [app] = wait_until(lambda: kube.list(APPS, "sparkapplications"), 30, "the shared application")
    name = app["metadata"]["name"]
    assert sorted(m.name for m in sparkapp.members_of(app)) == ["a", "b"]
    assert len(app["metadata"]["ownerReferences"]) == 2
    first.stop()
    assert app_names(kube) == [name]  # the run outlives its operator
    before = {p: progress(kube, p) for p in ("a", "b")}
    second = int(time.time())
    wait_until(lambda: int(time.time()) > second, 5, "the next second")  # the visit's message has its start second
    start_operator()
    wait_until(lambda: all(progress(kube, p) != before[p] for p in ("a", "b")), 30, "both policies' new visits")
    assert app_names(kube) == [name]  # adopted for both: no second application

    # The driver's part: each member's results where its --results says, then COMPLETED.
    args = app["spec"]["arguments"]
    urls = [args[i + 1] for i, a in enumerate(args) if a == "--results"]
    groups = {"a": "team-a-0", "b": "team-b-1"}
    for url, member in zip(urls, sparkapp.members_of(app), strict=True):  # in the members' order
        group = groups[member.name]
        summary = {"recordsScanned": 12, "byReason": {"Standalone": 1}, "now": int(time.time() * 1000),
                   "brokerRetentionMs": 7 * DAY_MS}
        row = {"group": group, "groupType": "classic", "topic": "orders", "partition": 0, "offset": 1,
               "commitTimestamp": 1, "candidate": True, "reason": "Standalone"}
        write_results(kube, url, summary, [row])
    kube.patch(APPS, "sparkapplications", name, {"status": {"applicationState": {"state": "COMPLETED"}, "driverInfo": {}}},
               subresource="status")
    a = wait_until(lambda: ready(kube, "a"), 30, "policy a's results")
    b = wait_until(lambda: ready(kube, "b"), 30, "policy b's results")
    assert candidate_groups(a) == {"team-a-0"} and candidate_groups(b) == {"team-b-1"}  # each its own
    wait_until(lambda: app_names(kube) == [] and run_configmaps(kube) == [], 30, "the run cleaned up")


# -- shared applications nobody needs any more (no Spark: made by the test as an older operator left them)


def leftover(kube: Kube, name: str, members: list[tuple[str, str]], state: str) -> list[str]:
    """A shared application with its policies ConfigMap and each member's results manifest, in `state`;
    returns the ConfigMaps' names."""
    kube.create("sparkapplications", {
        "apiVersion": APPS, "kind": "SparkApplication",
        "metadata": {"name": name, "labels": sparkapp.batch_labels("k" * 64, name[-8:]),
                     "annotations": {sparkapp.MEMBERS_ANNOTATION: json.dumps([{"name": n, "uid": u} for n, u in members])}},
        # the least kubeflow's schema takes: its required fields
        "spec": {"type": "Python", "sparkVersion": "4.1.2", "mainApplicationFile": "local:///opt/job.py",
                 "driver": {}, "executor": {}}})
    kube.patch(APPS, "sparkapplications", name, {"status": {"applicationState": {"state": state}, "driverInfo": {}}},
               subresource="status")  # driverInfo: kubeflow's schema requires it in every status
    configmaps = [sparkapp.policy_configmap_name(name)] + [sparkapp.member_results_name(name, i) for i in range(len(members))]
    for cm in configmaps:
        kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": cm, "labels": {"kafkaoffsets.dev/run": name[-8:]}}, "data": {}})
    return configmaps


def configmap_names(kube: Kube) -> set[str]:
    return {cm["metadata"]["name"] for cm in kube.list("v1", "configmaps")}


@pytest.mark.slow  # the operator under Kopf
def test_the_next_shared_run_deletes_an_orphaned_shared_application_and_keeps_one_a_live_member_still_needs(
        broker: Kafka, kube: Kube, start_operator: Any) -> None:
    kube.create(POLICIES, {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                           "metadata": {"name": "idle", "namespace": kube.namespace},
                           "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
                                              "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "missing"}}}}})  # never runs
    idle = kube.get(GROUP_VERSION, POLICIES, "idle")["metadata"]["uid"]
    orphan = leftover(kube, "shared-analysis-00000001", [("gone-a", "u-a"), ("gone-b", "u-b")], "RUNNING")
    needed = leftover(kube, "shared-analysis-00000002", [("idle", idle), ("gone-a", "u-a")], "COMPLETED")
    start_operator()
    new_policy(kube, "a", broker.bootstrap_servers, "team-a")  # its run sweeps the namespace first
    wait_until(lambda: any(n.startswith("a-analysis-") for n in app_names(kube)), 30, "policy a's own application")
    assert "shared-analysis-00000001" not in app_names(kube) and not set(orphan) & configmap_names(kube)  # swept first
    assert "shared-analysis-00000002" in app_names(kube) and set(needed) <= configmap_names(kube)


@pytest.mark.slow  # the operator under Kopf
def test_a_member_that_no_longer_shares_lets_go_of_its_unread_shared_results(
        broker: Kafka, kube: Kube, spark: SparkApi, start_operator: Any) -> None:
    new_policy(kube, "a", broker.bootstrap_servers, "team-a")
    uid = kube.get(GROUP_VERSION, POLICIES, "a")["metadata"]["uid"]
    left = leftover(kube, "shared-analysis-00000003", [("a", uid)], "COMPLETED")
    start_operator(spark.options(scan_share_window_s=None))  # sharing off
    wait_until(lambda: "shared-analysis-00000003" not in app_names(kube) and not set(left) & configmap_names(kube),
               30, "the shared application deleted, with its ConfigMaps")


# -- the real garbage collector and an application several policies own (no operator, no Spark)


@pytest.mark.slow  # the real garbage collector's pace
def test_an_application_several_policies_own_outlives_all_but_the_last_and_goes_with_it(
        broker: Kafka, kube: Kube) -> None:
    """As the operator writes a shared application (batch_manifest: one ownerReference per member, none a
    controller that blocks deletion) and its policies ConfigMap (the same owners): the real garbage collector
    keeps both while any owner lives, and takes both once the last goes."""
    policies = []
    for name, team in (("a", "team-a"), ("b", "team-b"), ("c", "team-c")):
        new_policy(kube, name, broker.bootstrap_servers, team)  # no operator: nothing runs them
        policies.append(kube.get(GROUP_VERSION, POLICIES, name))
    runs = [sparkapp.BatchRun(p, shared_owner(p), 7 * DAY_MS) for p in policies]
    body = sparkapp.batch_manifest(runs, parse_policy_spec(policies[0]["spec"]), ConnectionSettings(broker.bootstrap_servers),
                                   "0000abcd", "k" * 64, image=IMAGE)
    app = body["metadata"]["name"]
    kube.create("sparkapplications", body)
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": sparkapp.policy_configmap_name(app), "labels": body["metadata"]["labels"],
                                            "ownerReferences": body["metadata"]["ownerReferences"]}, "data": {}})

    def owners() -> list[str]:
        return sorted(o["name"] for o in kube.get(APPS, "sparkapplications", app)["metadata"]["ownerReferences"])

    assert owners() == ["a", "b", "c"]
    for gone, left in (("a", ["b", "c"]), ("b", ["c"])):
        kube.delete(GROUP_VERSION, POLICIES, gone)
        wait_until(lambda left=left: owners() == left or None, 60, f"the real garbage collector to drop {gone}")
        assert kube.find("v1", "configmaps", sparkapp.policy_configmap_name(app)) is not None
    kube.delete(GROUP_VERSION, POLICIES, "c")
    wait_until(lambda: kube.find(APPS, "sparkapplications", app) is None
               and kube.find("v1", "configmaps", sparkapp.policy_configmap_name(app)) is None, 60,
               "the application and its ConfigMap collected with their last owner")
