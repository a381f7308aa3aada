"""The Job engine (issue 21) on the real kube-apiserver and kube-controller-manager: the install applied, the
operator with the installed ServiceAccount's token and `--default-engine Job`, the policies' namespace
enforcing Pod Security "restricted", the real Job controller making each Job's pod, and a kubelet stand-in
(job_standin.py) running the pod's command (spark-submit in local mode, job.py) as a local process with
the token of the pod's ServiceAccount (manifests/spark/driver-rbac.yaml).

One Spark run serves the first flow: two policies naming no engine, due together, share ONE Job; the
operator is restarted while its pod waits, the next operator adopts the Job for both (no second Job), and
each policy's own results reach its status; then the Job, its pod and every ConfigMap go. The failures run
nothing: an input error (exit code 2) fails the Job at once (its podFailurePolicy) and the policy waits for a
new spec (one Job, one pod, no retry loop); a pod that never finishes runs into the Job's deadline, and the
real Job controller's DeadlineExceeded becomes a condition naming spec.analysis.job.deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics, sandbox_broker
from installed_api import InstalledApi, apply_file, can_i, installed_api
from job_standin import JobStandIn
from kafka_clients import admin_commit
from kube_cluster import ControlPlane
from kube_fixtures import kubectl
from operator_harness import GROUP_VERSION, ROOT, RUN_TIMEOUT, Kube, Operators, condition
from waiting import wait_until

from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.policy_spec import Engine
from kafka_sandbox import SandboxBroker
from kafka_sandbox.clock import Clock

pytestmark = pytest.mark.slow  # the operator under Kopf, one Spark run

POLICIES = "consumergroupoffsetpolicies"
IMAGE = "ghcr.io/example/kafka-offset-operator-spark:test"
POD_SA = "kafka-offset-spark"  # manifests/spark/driver-rbac.yaml
DAY_MS = 86_400_000
TEAMS = {"team-a": 3, "team-b": 2}  # standalone groups per team, each with 2 offsets
WINDOW_S = 2.0


@dataclass
class World:
    api: InstalledApi
    kube: Kube
    standin: JobStandIn
    operators: Operators


@pytest.fixture(scope="module")
def broker() -> Iterator[SandboxBroker]:
    """Standalone groups committed three days ago: candidates of a 1d rule."""
    with sandbox_broker(clock=Clock(start_ms=int(time.time() * 1000) - 3 * DAY_MS)) as b:
        make_topics(b, {"orders": 2})
        for team, count in TEAMS.items():
            for i in range(count):
                admin_commit(b.bootstrap_servers, f"{team}-{i}", {("orders", 0): 1, ("orders", 1): 2})
        yield b


@pytest.fixture(scope="module")
def world(real_cluster: ControlPlane, real_crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    workdir = tmp_path_factory.mktemp("jobs")
    with installed_api(real_cluster, workdir) as api:
        out = kubectl(real_cluster.kubeconfig, "label", "namespace", api.namespace,
                      "pod-security.kubernetes.io/enforce=restricted")
        assert out.returncode == 0, out.stderr
        rbac = (ROOT / "manifests" / "spark" / "driver-rbac.yaml").read_text().replace("namespace: team-a",
                                                                                    f"namespace: {api.namespace}")
        (workdir / "pod-rbac.yaml").write_text(rbac)
        apply_file(real_cluster, workdir / "pod-rbac.yaml")
        standin = JobStandIn(api.kube, real_cluster, workdir).start()
        operators = Operators(api.options(spark_image=IMAGE, scan_share_window_s=WINDOW_S, default_engine=Engine.JOB))
        try:
            yield World(api, api.kube, standin, operators)
        finally:
            operators.close()
            standin.stop()


def new_policy(kube: Kube, name: str, bootstrap: str, team: str, **job: Any) -> None:
    """No engine named: the operator's --default-engine (Job) runs it."""
    kube.create(POLICIES, {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": name, "namespace": kube.namespace},
        "spec": {"kafka": {"bootstrapServers": bootstrap},
                 "groups": {"include": [f"{team}-*"]}, "rules": {"standaloneRetention": "1d"},
                 "analysis": {"brokerRetention": "7d", "job": {"serviceAccount": POD_SA, **job}}}})


def ready(kube: Kube, name: str) -> dict[str, Any] | None:
    s = kube.status(POLICIES, name)
    return s if condition(s, "Ready").get("status") == "True" and s.get("lastRun") else None


def jobs(kube: Kube) -> list[dict[str, Any]]:
    return kube.list("batch/v1", "jobs")


def job_names(kube: Kube) -> list[str]:
    return [j["metadata"]["name"] for j in jobs(kube)]


def run_configmaps(kube: Kube) -> list[str]:
    return [cm["metadata"]["name"] for cm in kube.list("v1", "configmaps")
            if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/run")]


def progress(kube: Kube, name: str) -> str:
    return str(condition(kube.status(POLICIES, name), "Progressing").get("message"))


# -- two policies, one Job, an operator restart while it waits


@dataclass
class SharedRun:
    job: dict[str, Any]  # the one Job, as the first operator created it
    jobs_after_restart: list[str]
    pods: list[str]  # the pods the kubelet stand-in ran
    a: dict[str, Any]
    b: dict[str, Any]
    jobs_after: list[str]
    pods_after: list[str]
    configmaps_after: list[str]


@pytest.fixture(scope="module")
def shared_run(world: World, broker: SandboxBroker) -> SharedRun:
    kube = world.kube
    world.standin.hold()  # the pod waits (as for a node) until the next operator has adopted the Job
    first = world.operators.start()
    new_policy(kube, "a", broker.bootstrap_servers, "team-a")
    new_policy(kube, "b", broker.bootstrap_servers, "team-b")
    [job] = wait_until(lambda: jobs(kube), 60, "the shared Job")
    wait_until(lambda: world.standin.pods, 60, "its pod, admitted under Pod Security restricted")
    first.stop()
    before = {p: progress(kube, p) for p in ("a", "b")}
    second = int(time.time())
    wait_until(lambda: int(time.time()) > second, 5, "the next second")  # the visit's message has its start second
    world.operators.start()
    wait_until(lambda: all(progress(kube, p) != before[p] for p in ("a", "b")), 30, "both policies' new visits")
    after_restart = job_names(kube)
    world.standin.release()
    try:
        a = wait_until(lambda: ready(kube, "a"), RUN_TIMEOUT, "policy a's run")
        b = wait_until(lambda: ready(kube, "b"), RUN_TIMEOUT, "policy b's run")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; jobs: {[(j['metadata']['name'], j.get('status')) for j in jobs(kube)]}; "
                             f"policies: { {n: kube.status(POLICIES, n).get('conditions') for n in ('a', 'b')} }") from None
    wait_until(lambda: job_names(kube) == [] and run_configmaps(kube) == [], 60, "the run cleaned up")
    wait_until(lambda: kube.list("v1", "pods") == [], 60, "the Job's pod deleted with it (background propagation)")
    return SharedRun(job, after_restart, list(world.standin.pods), a, b, job_names(kube),
                     [p["metadata"]["name"] for p in kube.list("v1", "pods")], run_configmaps(kube))


def test_policies_due_together_share_one_job(shared_run: SharedRun) -> None:
    meta = shared_run.job["metadata"]
    assert meta["name"].startswith("shared-analysis-")
    assert sorted(m.name for m in sparkapp.members_of(shared_run.job)) == ["a", "b"]
    assert sorted(o["name"] for o in meta["ownerReferences"]) == ["a", "b"]
    spec = shared_run.job["spec"]
    assert spec["activeDeadlineSeconds"] == 3600 and spec["ttlSecondsAfterFinished"] > 0
    assert spec["template"]["spec"]["containers"][0]["image"] == IMAGE  # the operator's default image
    assert len(shared_run.pods) == 1  # one scan


def test_a_restart_adopts_the_running_job(shared_run: SharedRun) -> None:
    assert shared_run.jobs_after_restart == [shared_run.job["metadata"]["name"]]


def test_each_policys_results_reach_its_status(shared_run: SharedRun) -> None:
    for s, team in ((shared_run.a, "team-a"), (shared_run.b, "team-b")):
        assert s["lastRun"]["engine"] == "Job"
        assert s["lastRun"]["candidates"] == 2 * TEAMS[team]  # two offsets per group
        assert {c["group"] for c in s.get("topCandidates") or ()} == {f"{team}-{i}" for i in range(TEAMS[team])}


def test_the_job_its_pod_and_every_configmap_go_once_read(shared_run: SharedRun) -> None:
    assert shared_run.jobs_after == [] and shared_run.pods_after == [] and shared_run.configmaps_after == []


# -- failures (nothing runs: the stand-in ends or holds the pod)


def test_an_input_error_fails_the_job_once_and_waits_for_a_new_spec(world: World, broker: SandboxBroker,
                                                                       shared_run: SharedRun) -> None:
    kube = world.kube
    world.standin.behaviour = lambda pod: 2 if pod["metadata"]["name"].startswith("refused-") else "run"
    new_policy(kube, "refused", broker.bootstrap_servers, "team-a")

    def refused() -> dict[str, Any] | None:
        ready_ = condition(kube.status(POLICIES, "refused"), "Ready")
        return ready_ if ready_.get("reason") == "InvalidSpec" else None

    ready_ = wait_until(refused, 120, "the policy's InvalidSpec condition")
    assert ready_["message"].startswith("spec.analysis: the analysis Job refused-analysis-")
    assert "exit code 2" in ready_["message"] and "kubectl logs job/" in ready_["message"]
    [job] = [j for j in jobs(kube) if j["metadata"]["name"].startswith("refused-")]
    failed = condition(job.get("status"), "Failed")
    assert failed.get("reason") == "PodFailurePolicy"  # the real Job controller's verdict: no pod retried
    deadline = time.monotonic() + 5 * world.operators.options.retry_interval + 3
    while time.monotonic() < deadline:  # several retry intervals: no new Job, no new pod
        assert len([p for p in world.standin.pods if p.startswith("refused-")]) == 1
        assert len([n for n in job_names(kube) if n.startswith("refused-")]) == 1
        time.sleep(0.5)  # the pace of a check that nothing happens, not synchronisation
    assert kube.status(POLICIES, "refused").get("nextRunTime") is None
    kube.delete(GROUP_VERSION, POLICIES, "refused")


def test_a_job_past_its_deadline_gives_a_condition_naming_the_deadline(world: World, broker: SandboxBroker,
                                                                         shared_run: SharedRun) -> None:
    kube = world.kube
    world.standin.behaviour = lambda pod: "never" if pod["metadata"]["name"].startswith("stuck-") else "run"
    new_policy(kube, "stuck", broker.bootstrap_servers, "team-a", deadline="3s")

    def failed() -> dict[str, Any] | None:
        degraded = condition(kube.status(POLICIES, "stuck"), "Degraded")
        return degraded if degraded.get("reason") == "AnalysisJobFailed" else None

    degraded = wait_until(failed, 120, "the deadline's condition")
    assert "ran past spec.analysis.job.deadline (3 s)" in degraded["message"]
    kube.delete(GROUP_VERSION, POLICIES, "stuck")


# -- least privilege: what the installed ServiceAccount may do with Jobs


def test_the_installed_service_account_manages_jobs_and_nothing_more(world: World, real_cluster: ControlPlane) -> None:
    ns = world.api.namespace
    for verb in ("create", "get", "list", "watch", "delete"):
        assert can_i(real_cluster, ns, verb, "jobs", "batch"), verb
    for verb in ("update", "patch"):
        assert not can_i(real_cluster, ns, verb, "jobs", "batch"), verb
    assert not can_i(real_cluster, ns, "patch", "jobs", "batch", "status")
    for verb in ("create", "get", "list", "delete"):  # the Job controller makes the pods, not the operator
        assert not can_i(real_cluster, ns, verb, "pods"), verb
