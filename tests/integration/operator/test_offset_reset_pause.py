"""OffsetReset with spec.pauseWorkloads end to end: the operator under Kopf against kmock's emulated API (which
serves Deployments and StatefulSets with their scale subresource) and the sandbox broker.

Nothing runs pods here: the test plays the workloads' consumers with kafka-python GroupConsumers and closes
them (LeaveGroup) when it sees their workload's replicas at zero, so the group becomes Empty on the broker
as it would when Kubernetes stops the pods. One operator, API and broker for the module; one test restarts
the operator mid-way (a new Kopf, a new reconciler: only the status carries over)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import kmock
import pytest
from brokers import make_topics, sandbox_broker
from install_renders import KUBECTL, NO_KUBECTL, allowed, cluster_wide_rules, render_install
from kafka_clients import GroupConsumer, admin_commit, committed
from operator_harness import (
    GROUP_VERSION,
    NAMESPACE,
    EmulatedCluster,
    Kube,
    KubeApiError,
    Operators,
    OperatorThread,
    condition,
    emulated_cluster,
    fast_options,
)
from operator_process import OperatorProcess
from waiting import wait_until

from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow  # an operator under Kopf with end-to-end waits

RESETS = "offsetresets"
FINAL = ("Succeeded", "PartiallyFailed", "Failed")
PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets"}


@dataclass
class World:
    broker: SandboxBroker
    cluster: EmulatedCluster
    kube: Kube
    operators: Operators
    operator: OperatorThread
    consumers: list[GroupConsumer] = field(default_factory=list)

    @property
    def kafka(self) -> dict[str, Any]:
        return {"bootstrapServers": self.broker.bootstrap_servers}

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        return committed(self.broker.bootstrap_servers, group)

    def status(self, name: str) -> dict[str, Any]:
        return self.kube.get(GROUP_VERSION, RESETS, name).get("status") or {}

    def wait(self, name: str, predicate: Any, what: str, timeout: float = 90.0) -> dict[str, Any]:
        seen: list[dict[str, Any]] = [{}]

        def check() -> dict[str, Any] | None:
            seen[0] = self.status(name)
            return seen[0] if predicate(seen[0]) else None

        try:
            return wait_until(check, timeout, what)
        except AssertionError:
            raise AssertionError(f"timed out waiting for {what} of {name}; status: {seen[0]}") from None

    def phase(self, name: str, *phases: str) -> dict[str, Any]:
        return self.wait(name, lambda s: s.get("phase") in phases, " or ".join(phases))

    def reason(self, name: str, reason: str) -> dict[str, Any]:
        return self.wait(name, lambda s: condition(s, "Degraded").get("reason") == reason
                         or condition(s, "Ready").get("reason") == reason, reason)

    def events(self, name: str) -> list[dict[str, Any]]:
        return self.kube.events_for(name)

    def workload(self, kind: str, name: str, replicas: int) -> None:
        self.kube.create(PLURAL[kind], {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
                                        "spec": {"replicas": replicas,
                                                 "selector": {"matchLabels": {"app": name}}}})

    def replicas(self, kind: str, name: str) -> int:
        return int(self.kube.get("apps/v1", PLURAL[kind], name)["spec"]["replicas"])

    def scale(self, kind: str, name: str, replicas: int) -> None:
        self.kube.patch("apps/v1", PLURAL[kind], name, {"spec": {"replicas": replicas}}, subresource="scale")

    def at_zero(self, *workloads: tuple[str, str], timeout: float = 90.0) -> None:
        """Until every workload is scaled to zero (what Kubernetes would answer by stopping its pods)."""
        wait_until(lambda: all(self.replicas(k, n) == 0 for k, n in workloads), timeout, f"{workloads} at zero")

    def consumer(self, group: str, topic: str, client_id: str) -> GroupConsumer:
        member = GroupConsumer(self.broker.bootstrap_servers, group, [topic], client_id=client_id)
        self.consumers.append(member)
        member.wait_assigned()
        return member

    def stop(self, member: GroupConsumer) -> None:
        """The pods are gone: the consumer leaves the group."""
        self.consumers.remove(member)
        member.close()


def reset(name: str, group: str, target: dict[str, Any], kafka: dict[str, Any], pause: list[tuple[str, str]],
          *, timeout: str | None = None, topics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": group, "target": target, "approved": True, "kafka": kafka,
                            "pauseWorkloads": [{"kind": k, "name": n} for k, n in pause]}
    spec.update({"topics": topics} if topics is not None else {"allTopics": True})
    if timeout is not None:
        spec["pauseTimeout"] = timeout
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with sandbox_broker() as broker, emulated_cluster() as cluster:
        kubeconfig: Path = cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
        operators = Operators(fast_options(kubeconfig))
        w = World(broker, cluster, Kube(cluster.url), operators, operators.start())
        try:
            yield w
        finally:
            for member in list(w.consumers):
                member.close()
            operators.close()


def _scale_patches(cluster: EmulatedCluster, name: str) -> list[Any]:
    return cluster.requests(lambda r: r.subresource == "scale" and r.name == name and r.method == "PATCH")


def test_scaled_to_zero_the_group_empties_the_reset_commits_and_each_is_scaled_back(world: World) -> None:
    make_topics(world.broker, {"paused": 2}, records_per_partition=8)
    world.workload("Deployment", "paused-api", 3)
    world.workload("StatefulSet", "paused-worker", 2)
    admin_commit(world.broker.bootstrap_servers, "paused-app", {("paused", 0): 6, ("paused", 1): 7})
    member = world.consumer("paused-app", "paused", "paused-api-7d9f")
    world.kube.create(RESETS, reset("paused", "paused-app", {"earliest": True}, world.kafka,
                                    [("Deployment", "paused-api"), ("StatefulSet", "paused-worker")]))
    world.at_zero(("Deployment", "paused-api"), ("StatefulSet", "paused-worker"))
    waiting = world.status("paused")
    assert [(p["kind"], p["name"], p["replicas"]) for p in waiting["pausedWorkloads"]] == [
        ("Deployment", "paused-api", 3), ("StatefulSet", "paused-worker", 2)]
    assert waiting["phase"] == "Pending" and world.offsets("paused-app") == {("paused", 0): 6, ("paused", 1): 7}
    # The replicas were in the status before anything was scaled: the first write of pausedWorkloads comes
    # before the first scale patch.
    requests = world.cluster.requests(lambda r: r.method == "PATCH")
    recorded = next(i for i, r in enumerate(requests) if r.subresource == "status" and r.name == "paused"
                    and "pausedWorkloads" in str(r.data))
    scaled = next(i for i, r in enumerate(requests) if r.subresource == "scale" and r.name == "paused-api")
    assert recorded < scaled
    world.stop(member)
    status = world.phase("paused", *FINAL)
    assert status["phase"] == "Succeeded", status
    assert world.offsets("paused-app") == {("paused", 0): 0, ("paused", 1): 0}
    status = world.wait("paused", lambda s: all(p["state"] == "Restored" for p in s["pausedWorkloads"]), "restored")
    assert (world.replicas("Deployment", "paused-api"), world.replicas("StatefulSet", "paused-worker")) == (3, 2)
    assert [p["state"] for p in status["pausedWorkloads"]] == ["Restored", "Restored"]
    assert len(_scale_patches(world.cluster, "paused-api")) == 2  # down once, up once
    reasons = wait_until(lambda: {e["reason"] for e in world.events("paused")} >= {"WorkloadsPaused", "WorkloadsRestored"}
                         and {e["reason"] for e in world.events("paused")}, what="events")
    assert "WorkloadLeftAsFound" not in reasons


def test_a_reset_that_fails_still_scales_back(world: World) -> None:
    make_topics(world.broker, {"refusal": 1})
    admin_commit(world.broker.bootstrap_servers, "refusal-app", {("refusal", 0): 1})
    world.workload("Deployment", "refusal-api", 2)
    world.kube.create(RESETS, reset("refusal", "refusal-app", {"earliest": True}, world.kafka,
                                    [("Deployment", "refusal-api")], topics=[{"name": "refusal", "partitions": [0, 5]}]))
    status = world.phase("refusal", *FINAL)
    assert (status["phase"], condition(status, "Degraded")["reason"]) == ("Failed", "PlanRefused")
    status = world.wait("refusal", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("Deployment", "refusal-api") == 2 and len(_scale_patches(world.cluster, "refusal-api")) == 2
    assert world.offsets("refusal-app") == {("refusal", 0): 1}


def test_deleted_mid_way_its_workloads_are_scaled_back_before_it_goes(world: World) -> None:
    make_topics(world.broker, {"gone": 1})
    world.workload("Deployment", "gone-api", 4)
    admin_commit(world.broker.bootstrap_servers, "gone-app", {("gone", 0): 0})
    member = world.consumer("gone-app", "gone", "gone-api-1")  # never leaves while the reset exists
    world.kube.create(RESETS, reset("gone", "gone-app", {"latest": True}, world.kafka, [("Deployment", "gone-api")]))
    world.at_zero(("Deployment", "gone-api"))
    world.reason("gone", "PausingWorkloads")
    world.kube.delete(GROUP_VERSION, RESETS, "gone")
    wait_until(lambda: world.kube.find(GROUP_VERSION, RESETS, "gone") is None, what="the reset gone")
    assert world.replicas("Deployment", "gone-api") == 4  # restored before the finalizer let it go
    assert {"Cancelled", "WorkloadsRestored"} <= {e["reason"] for e in world.events("gone")}
    world.stop(member)
    assert world.offsets("gone-app") == {("gone", 0): 0}


def test_an_operator_restarted_mid_way_finishes_and_scales_back_from_the_status(world: World) -> None:
    make_topics(world.broker, {"restart": 1}, records_per_partition=5)
    world.workload("StatefulSet", "restart-worker", 3)
    admin_commit(world.broker.bootstrap_servers, "restart-app", {("restart", 0): 1})
    member = world.consumer("restart-app", "restart", "restart-worker-0")
    world.kube.create(RESETS, reset("restart", "restart-app", {"latest": True}, world.kafka,
                                    [("StatefulSet", "restart-worker")]))
    world.at_zero(("StatefulSet", "restart-worker"))
    world.wait("restart", lambda s: [p["state"] for p in s.get("pausedWorkloads") or ()] == ["ScaledDown"],
               "ScaledDown")
    world.operator.stop(graceful=False)  # mid-way: scaled down, the group not yet Empty
    world.stop(member)
    assert world.status("restart")["phase"] == "Pending" and world.offsets("restart-app") == {("restart", 0): 1}
    world.operator = world.operators.start()  # a new process' worth of state: only the status carries over
    status = world.phase("restart", *FINAL)
    assert status["phase"] == "Succeeded" and world.offsets("restart-app") == {("restart", 0): 5}
    world.wait("restart", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("StatefulSet", "restart-worker") == 3


def test_a_missing_workload_is_named_by_its_field_and_nothing_is_scaled(world: World) -> None:
    make_topics(world.broker, {"missing": 1})
    admin_commit(world.broker.bootstrap_servers, "missing-app", {("missing", 0): 0})
    world.workload("Deployment", "missing-api", 2)
    world.kube.create(RESETS, reset("missing", "missing-app", {"latest": True}, world.kafka,
                                    [("Deployment", "missing-api"), ("StatefulSet", "missing-worker")]))
    status = world.reason("missing", "WorkloadNotFound")
    message = condition(status, "Degraded")["message"]
    assert message.startswith("spec.pauseWorkloads[1].name: StatefulSet missing-worker not found"), message
    assert "pausedWorkloads" not in status and status["phase"] == "Pending"
    assert world.replicas("Deployment", "missing-api") == 2 and not _scale_patches(world.cluster, "missing-api")
    world.kube.delete(GROUP_VERSION, RESETS, "missing")
    wait_until(lambda: world.kube.find(GROUP_VERSION, RESETS, "missing") is None, what="the reset gone")
    assert world.offsets("missing-app") == {("missing", 0): 0}


def test_a_group_that_never_empties_times_out_and_a_workload_someone_scaled_is_left_as_found(world: World) -> None:
    make_topics(world.broker, {"stuck": 1})
    world.workload("Deployment", "stuck-api", 2)
    world.workload("Deployment", "stuck-admin", 1)
    admin_commit(world.broker.bootstrap_servers, "stuck-app", {("stuck", 0): 0})
    member = world.consumer("stuck-app", "stuck", "stuck-cron")  # a consumer no listed workload runs
    world.kube.create(RESETS, reset("stuck", "stuck-app", {"latest": True}, world.kafka,
                                    [("Deployment", "stuck-api"), ("Deployment", "stuck-admin")], timeout="2s"))
    world.at_zero(("Deployment", "stuck-api"), ("Deployment", "stuck-admin"))
    world.scale("Deployment", "stuck-admin", 5)  # someone scales it meanwhile
    status = world.phase("stuck", *FINAL)
    assert (status["phase"], condition(status, "Ready")["reason"]) == ("Failed", "PauseTimedOut")
    message = condition(status, "Degraded")["message"]
    assert "pauseTimeout 2s passed" in message and "stuck-cron at " in message and "nothing reset" in message
    assert condition(status, "Stalled")["status"] == "True"  # final: a person decides what next
    status = world.wait("stuck", lambda s: all(p["state"] not in ("Recorded", "ScaledDown")
                                               for p in s["pausedWorkloads"]), "scaled back")
    assert {p["name"]: p["state"] for p in status["pausedWorkloads"]} == {"stuck-api": "Restored",
                                                                          "stuck-admin": "LeftAsFound"}
    assert (world.replicas("Deployment", "stuck-api"), world.replicas("Deployment", "stuck-admin")) == (2, 5)
    left = wait_until(lambda: [e for e in world.events("stuck") if e["reason"] == "WorkloadLeftAsFound"], what="event")
    assert "found at 5 replicas" in left[0]["message"]
    assert world.offsets("stuck-app") == {("stuck", 0): 0}
    world.stop(member)


def test_without_the_rbac_opt_in_a_condition_names_the_permission_and_retries_quietly(world: World) -> None:
    make_topics(world.broker, {"locked": 1})
    admin_commit(world.broker.bootstrap_servers, "locked-app", {("locked", 0): 0})
    world.workload("Deployment", "locked-api", 2)
    assert world.cluster.emulator is not None
    forbidden = world.cluster.fail(kmock.subresource("scale"), lambda r: r.name == "locked-api", status=403,
                                   times=None, message='deployments.apps "locked-api" is forbidden')
    try:
        world.kube.create(RESETS, reset("locked", "locked-app", {"latest": True}, world.kafka,
                                        [("Deployment", "locked-api")]))
        status = world.reason("locked", "WorkloadAccessDenied")
        message = condition(status, "Degraded")["message"]
        assert "may not get deployments/scale (apps) in namespace kafka" in message
        assert "pauseWorkloads.enabled=true" in message and "manifests/components/pause-workloads" in message
        wait_until(lambda: len(forbidden.taken) >= 3, what="a few retries")
        assert [e["reason"] for e in world.events("locked")].count("WorkloadAccessDenied") == 1  # no storm
        assert "pausedWorkloads" not in world.status("locked") and world.replicas("Deployment", "locked-api") == 2
    finally:
        forbidden.times = len(forbidden.taken)  # spent: the API answers again
    world.kube.delete(GROUP_VERSION, RESETS, "locked")
    try:
        wait_until(lambda: world.kube.find(GROUP_VERSION, RESETS, "locked") is None, what="the reset gone")
    except AssertionError:
        raise AssertionError(f"{world.kube.find(GROUP_VERSION, RESETS, 'locked')} {world.events('locked')}") from None


def test_the_pause_install_allows_every_call_the_operator_made(world: World, tmp_path: Path) -> None:
    """Every request the operator sent in this module (the emulated API's log) is allowed by the rules of the
    cluster-wide install with components/pause-workloads; its calls on workloads are scale subresources only,
    and the default install allows none of them."""
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    verbs = {"fetch": "get", "list": "list", "watch": "watch", "create": "create", "delete": "delete"}
    calls = set()
    for request in world.cluster.requests(lambda r: r.headers.get("User-Agent", "").startswith(("kopf", "OpenAPI"))):
        if request.resource is None or request.action is None or not request.resource.plural:
            continue
        method = request.method.value
        verb = "patch" if method == "PATCH" else "update" if method == "PUT" else verbs[request.action.value.lower()]
        calls.add((request.resource.group or "", request.resource.plural
                   + (f"/{request.subresource}" if request.subresource else ""), verb))
    workloads = {c for c in calls if c[0] == "apps"}
    assert workloads == {("apps", "deployments/scale", "get"), ("apps", "deployments/scale", "patch"),
                         ("apps", "statefulsets/scale", "get"), ("apps", "statefulsets/scale", "patch")}

    pause_install = [r for o in render_install("cluster-wide+pause-workloads", tmp_path) if o["kind"] == "ClusterRole"
                     for r in o["rules"]]
    assert sorted(c for c in calls if not allowed(pause_install, *c)) == []
    assert not [c for c in workloads if allowed(cluster_wide_rules(), *c)]  # the default install's sources


def test_workloads_come_back_even_when_the_connection_can_no_longer_be_read(world: World) -> None:
    """The state a reset leaves when it ended (Failed) with a workload still at zero, and its Secret was deleted
    since: the scale back needs nothing from Kafka or the spec, so it happens all the same."""
    world.workload("Deployment", "orphan-api", 0)
    kafka = {"bootstrapServers": world.broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
             "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "deleted-since"}}}
    body = reset("orphan", "orphan-app", {"latest": True}, kafka, [("Deployment", "orphan-api")])
    body["spec"]["approved"] = False
    world.kube.create(RESETS, body)
    world.reason("orphan", "SecretNotFound")
    world.kube.patch(GROUP_VERSION, RESETS, "orphan", {"status": {
        "phase": "Failed", "completionTime": "2026-01-01T00:00:00Z", "pauseStartTime": "2026-01-01T00:00:00Z",
        "pausedWorkloads": [{"kind": "Deployment", "name": "orphan-api", "replicas": 2, "state": "ScaledDown"}]}},
        subresource="status")
    world.wait("orphan", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("Deployment", "orphan-api") == 2
    assert condition(world.status("orphan"), "Degraded")["reason"] == "SecretNotFound"  # still said


@pytest.mark.parametrize("when", ["held", "applied"])
def test_sigkill_between_the_scale_down_and_its_status_write(world: World, tmp_path: Path, when: str) -> None:
    """A real `run` process SIGKILLed while its scale-to-zero patch is in flight (held before the API applied
    it, or applied with the answer held): the status says Recorded, not ScaledDown. The next process scales
    down (again), waits for Empty, resets and scales back to the replicas the first one recorded."""
    group = f"killed-{when}"
    make_topics(world.broker, {group: 1}, records_per_partition=4)
    admin_commit(world.broker.bootstrap_servers, group, {(group, 0): 1})
    member = world.consumer(group, group, f"{group}-0")
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        kube.create("deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "killed-api"},
                                    "spec": {"replicas": 3}})
        held = cluster.hold("patch deployments", kmock.subresource("scale"), after=when == "applied")
        with OperatorProcess(kubeconfig, tmp_path) as first:
            first.ready()
            kube.create(RESETS, reset("killed", group, {"latest": True}, world.kafka, [("Deployment", "killed-api")]))
            held.wait(30)
            assert first.kill() == -signal.SIGKILL
        held.release(apply=False)  # held before it applied: dropped with its client
        status = kube.get(GROUP_VERSION, RESETS, "killed")["status"]
        assert [(p["replicas"], p["state"]) for p in status["pausedWorkloads"]] == [(3, "Recorded")]
        assert kube.get("apps/v1", "deployments", "killed-api")["spec"]["replicas"] == (0 if when == "applied" else 3)
        with OperatorProcess(kubeconfig, tmp_path) as second:
            second.ready()
            wait_until(lambda: kube.get("apps/v1", "deployments", "killed-api")["spec"]["replicas"] == 0, 30, "zero")
            world.stop(member)
            wait_until(lambda: (kube.get(GROUP_VERSION, RESETS, "killed").get("status") or {}).get(
                "pausedWorkloads", [{}])[0].get("state") == "Restored", 30, "restored")
            assert "Traceback" not in second.log()
            second.kill()
        status = kube.get(GROUP_VERSION, RESETS, "killed")["status"]
        assert status["phase"] == "Succeeded" and world.offsets(group) == {(group, 0): 4}
        assert kube.get("apps/v1", "deployments", "killed-api")["spec"]["replicas"] == 3


def test_the_api_refuses_a_bad_or_changed_pause_list_naming_the_field(world: World) -> None:
    def refused(body: dict[str, Any]) -> str:
        with pytest.raises(KubeApiError) as error:
            world.kube.create(RESETS, body)
        assert error.value.status == 422
        return str(error.value)

    twice = reset("twice", "g", {"latest": True}, world.kafka, [("Deployment", "a"), ("Deployment", "a")])
    assert "lists a workload twice" in refused(twice)
    daemon = reset("daemon", "g", {"latest": True}, world.kafka, [("DaemonSet", "a")])
    assert "spec.pauseWorkloads[0].kind" in refused(daemon)
    many = reset("many", "g", {"latest": True}, world.kafka, [("Deployment", f"d{i}") for i in range(11)])
    assert "spec.pauseWorkloads" in refused(many)
    # Frozen with the rest of the spec once approved (no workload named here exists: it waits, WorkloadNotFound).
    world.kube.create(RESETS, reset("frozen-pause", "g", {"latest": True}, world.kafka, [("Deployment", "nowhere")]))
    with pytest.raises(KubeApiError) as error:
        world.kube.patch(GROUP_VERSION, RESETS, "frozen-pause", {"spec": {"pauseWorkloads": []}})
    assert error.value.status == 422 and "frozen" in str(error.value)
    world.kube.delete(GROUP_VERSION, RESETS, "frozen-pause")
    wait_until(lambda: world.kube.find(GROUP_VERSION, RESETS, "frozen-pause") is None, what="the reset gone")


def test_an_approved_plan_refused_by_its_frozen_spec_after_the_scale_down_ends_failed_and_scales_back(
        world: World) -> None:
    make_topics(world.broker, {"nobackup": 1})
    admin_commit(world.broker.bootstrap_servers, "nobackup-app", {("nobackup", 0): 1})
    world.workload("Deployment", "nobackup-api", 2)
    world.kube.create(RESETS, reset("nobackup", "nobackup-app", {"fromBackup": "no-such-backup"}, world.kafka,
                                    [("Deployment", "nobackup-api")]))
    status = world.phase("nobackup", *FINAL)
    degraded = condition(status, "Degraded")
    assert (status["phase"], degraded["reason"]) == ("Failed", "InvalidSpec"), status
    assert degraded["message"].startswith("spec.target.fromBackup")
    world.wait("nobackup", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("Deployment", "nobackup-api") == 2 and len(_scale_patches(world.cluster, "nobackup-api")) == 2
    assert world.offsets("nobackup-app") == {("nobackup", 0): 1} and "backup" not in status


def test_members_back_after_the_backup_end_a_running_reset_at_pause_timeout_and_scale_back(world: World) -> None:
    make_topics(world.broker, {"rejoin": 1})
    admin_commit(world.broker.bootstrap_servers, "rejoin-app", {("rejoin", 0): 1})
    world.workload("Deployment", "rejoin-api", 2)
    # The third DescribeGroups of the group is _commit's (after _pause's and _backup's): held while a consumer
    # joins, so the reset is Running, backed up, with a member in the group.
    held = world.broker.faults.hold("DescribeGroups", group="rejoin-app", after=2)
    world.kube.create(RESETS, reset("rejoin", "rejoin-app", {"earliest": True}, world.kafka,
                                    [("Deployment", "rejoin-api")], timeout="2s"))
    held.wait()
    assert world.status("rejoin")["phase"] == "Running"
    world.consumer("rejoin-app", "rejoin", "rejoin-outside-1")
    held.release()
    status = world.phase("rejoin", *FINAL)
    degraded = condition(status, "Degraded")
    assert (status["phase"], degraded["reason"]) == ("Failed", "PauseTimedOut"), status
    assert "rejoin-outside-1" in degraded["message"] and "no OffsetCommit sent" in degraded["message"]
    assert status["backup"]["name"] and "commitStartTime" not in status
    world.wait("rejoin", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("Deployment", "rejoin-api") == 2 and world.offsets("rejoin-app") == {("rejoin", 0): 1}


def test_a_final_reset_scales_each_workload_back_once_per_visit(world: World) -> None:
    """A final reset found with a workload at zero (the scale back of an earlier visit failed, or the operator
    stopped right after the final write): scaled back once, one WorkloadsRestored Event, and the entry says
    what was done ("scaled back"), not what a second pass over a stale status would find."""
    make_topics(world.broker, {"once": 1})
    world.workload("Deployment", "once-api", 0)
    body = reset("once", "once-app", {"latest": True}, world.kafka, [("Deployment", "once-api")])
    body["spec"]["approved"] = False
    world.kube.create(RESETS, body)
    world.phase("once", "AwaitingApproval")
    world.kube.patch(GROUP_VERSION, RESETS, "once", {"status": {
        "phase": "Failed", "completionTime": "2026-01-01T00:00:00Z", "pauseStartTime": "2026-01-01T00:00:00Z",
        "pausedWorkloads": [{"kind": "Deployment", "name": "once-api", "replicas": 2, "state": "ScaledDown"}]}},
        subresource="status")
    wait_until(lambda: [e for e in world.events("once") if e["reason"] == "WorkloadsRestored"], what="restored")
    assert world.replicas("Deployment", "once-api") == 2
    gets = world.cluster.requests(lambda r: r.subresource == "scale" and r.name == "once-api" and r.method == "GET")
    assert len(gets) == 1, gets
    assert world.status("once")["pausedWorkloads"][0]["message"] == "scaled back to 2 replicas"
    assert [e["reason"] for e in world.events("once")].count("WorkloadsRestored") == 1


def test_reset_visits_wait_for_the_kafka_concurrency_gate(world: World) -> None:
    """With --kafka-concurrency 1, a reset whose visit is at the broker holds the only slot: another reset's
    visit does not talk to Kafka until it is released (as OffsetDeletion visits and policies)."""
    make_topics(world.broker, {"gate-a": 1, "gate-b": 1})
    admin_commit(world.broker.bootstrap_servers, "gate-a-app", {("gate-a", 0): 0})
    admin_commit(world.broker.bootstrap_servers, "gate-b-app", {("gate-b", 0): 0})
    world.operator.stop(graceful=True)
    world.operator = world.operators.start(replace(world.operators.options, kafka_concurrency=1))
    try:
        first = world.broker.faults.hold("DescribeGroups", group="gate-a-app")
        approved = reset("gate-a", "gate-a-app", {"earliest": True}, world.kafka, [])
        del approved["spec"]["pauseWorkloads"]
        world.kube.create(RESETS, approved)
        first.wait()
        second = world.broker.faults.hold("OffsetFetch", group="gate-b-app")
        body = reset("gate-b", "gate-b-app", {"earliest": True}, world.kafka, [])
        body["spec"]["approved"] = False
        del body["spec"]["pauseWorkloads"]
        world.kube.create(RESETS, body)
        with pytest.raises(AssertionError, match="no OffsetFetch request arrived"):
            second.wait(timeout=1.0)  # bounded: the slot is taken, so it must not arrive at all
        first.release()
        second.wait().release()
        world.phase("gate-b", "AwaitingApproval")
        assert world.phase("gate-a", *FINAL)["phase"] == "Succeeded"
    finally:
        world.broker.faults.clear()
        world.operator.stop(graceful=True)
        world.operator = world.operators.start()
