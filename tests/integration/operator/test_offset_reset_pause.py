"""OffsetReset with spec.pauseWorkloads end to end: the operator under Kopf on the real kube-apiserver (the
install applied with its opt-in component manifests/components/pause-workloads, the operator on the installed
ServiceAccount's token: every call it makes is authorized by the real RBAC authorizer against the rules we
ship) and Apache Kafka (the session's broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox).

The workloads are real Deployments and StatefulSets, scaled through their real scale subresource; the
deployment, replica-set and stateful-set controllers of kube-controller-manager run, so pods are created
and deleted as replicas change, but with no kubelet they stay Pending. Nothing here needs them to run: the
operator reads and writes spec.replicas through the Scale and waits for the group on the broker to become
Empty, never for pods. The test plays the workloads' consumers with kafka-python GroupConsumers and closes
them (LeaveGroup) when it sees their workload's replicas at zero, as Kubernetes stopping the pods would.
What the operator asked the API server, in what order and with what answer, is read from the API server's
audit log (tests/support/audit_log.py).

One operator, one namespace and one broker for the module; one test restarts the operator mid-way (a new
Kopf, a new reconciler: only the status carries over). The pause tests that need a fault only the emulator
(a write held while the process is SIGKILLed) or the sandbox broker (a request held at the broker) can
inject are in test_offset_reset_pause_faults.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_log import AuditLog, Call
from brokers import make_topics
from install_renders import KUBECTL, NO_KUBECTL, allowed, cluster_wide_rules, render_install
from installed_api import ADMIN, OPERATOR_USER, InstalledApi, can_i, cluster_role, rules_changed
from kafka_clients import GroupConsumer, admin_commit
from kafka_under_test import Kafka, clean_after
from operator_harness import GROUP_VERSION, ROOT, KubeApiError, Operators, OperatorThread, condition
from reset_world import RESETS, ResetWorld
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf with end-to-end waits

FINAL = ("Succeeded", "PartiallyFailed", "Failed")
PLURAL = {"Deployment": "deployments", "StatefulSet": "statefulsets"}
CLUSTER_ROLE = "/apis/rbac.authorization.k8s.io/v1/clusterroles/kafka-offset-operator"
PAUSE_PATCH = ROOT / "manifests" / "components" / "pause-workloads" / "rules.yaml"


@dataclass
class World(ResetWorld):
    api: InstalledApi
    operators: Operators
    operator: OperatorThread
    audit: AuditLog  # the operator's calls since the module began
    consumers: list[GroupConsumer] = field(default_factory=list)

    def reason(self, name: str, reason: str) -> dict[str, Any]:
        return self.wait(name, lambda s: condition(s, "Degraded").get("reason") == reason
                         or condition(s, "Ready").get("reason") == reason, reason)

    def events(self, name: str) -> list[dict[str, Any]]:
        return self.kube.events_for(name)

    def workload(self, kind: str, name: str, replicas: int) -> None:
        """A Deployment or StatefulSet as the API server requires one (a pod template; its pods stay Pending)."""
        spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": {"containers": [{"name": "consumer", "image": "none"}]}}}
        if kind == "StatefulSet":
            spec["serviceName"] = name
        self.kube.create(PLURAL[kind], {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
                                        "spec": spec})

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

    def scale_calls(self, name: str, verb: str) -> list[Call]:
        """The operator's calls (`verb`: get or patch) on the scale subresource of workload `name`."""
        return self.audit.calls(lambda c: c.subresource == "scale" and c.name == name and c.verb == verb
                                and c.namespace == self.kube.namespace)


def reset(name: str, group: str, target: dict[str, Any], kafka: dict[str, Any], pause: list[tuple[str, str]],
          *, timeout: str | None = None, topics: list[dict[str, Any]] | None = None,
          approved: bool = True) -> dict[str, Any]:
    """In the client's namespace (Kube.create's default); an approval names its approver, as the install's
    admission policy asks (the admin approves)."""
    spec: dict[str, Any] = {"group": group, "target": target, "approved": approved, "kafka": kafka,
                            "pauseWorkloads": [{"kind": k, "name": n} for k, n in pause]}
    if approved:
        spec["approvedBy"] = ADMIN
    spec.update({"topics": topics} if topics is not None else {"allTopics": True})
    if timeout is not None:
        spec["pauseTimeout"] = timeout
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": name}, "spec": spec}


def _pause_rule() -> dict[str, Any]:
    """The rule manifests/components/pause-workloads adds (its kustomize patch: one JSON-patch `add`)."""
    [op] = yaml.safe_load(PAUSE_PATCH.read_text())
    return dict(op["value"])


@contextmanager
def pause_opt_in(api: InstalledApi) -> Iterator[None]:
    """The installed ClusterRole with the pause-workloads component, as its kustomize patch makes it (the
    component's own JSON patch, applied by the API server); the install's own rules back afterwards. Each way,
    polled until the real authorizer answers accordingly (it reads RBAC through an informer)."""
    probe = (api.namespace, "patch", "deployments", "apps", "scale")
    plane = api.plane
    if _pause_rule() not in cluster_role(plane)["rules"]:
        plane.api.request("PATCH", CLUSTER_ROLE, yaml.safe_load(PAUSE_PATCH.read_text()), "application/json-patch+json")
    try:
        wait_until(lambda: can_i(plane, *probe), 30, "the pause-workloads rule in force")
        yield
    finally:
        role = cluster_role(plane)
        role["rules"] = [r for r in role["rules"] if r != _pause_rule()]
        plane.api.request("PUT", CLUSTER_ROLE, role)
        wait_until(lambda: not can_i(plane, *probe), 30, "the install's own rules back in force")


@pytest.fixture(scope="module")
def world(real_kafka: Kafka, api: InstalledApi) -> Iterator[World]:
    """One broker for the module (emptied afterwards: clean_after), the install's namespace (the conftest's
    `api`) with the pause opt-in, one operator on the ServiceAccount's token."""
    with clean_after(real_kafka) as broker, pause_opt_in(api):
        audit = AuditLog.of(api.plane, OPERATOR_USER)
        operators = Operators(api.options())
        w = World(broker, api.kube, api, operators, operators.start(), audit)
        try:
            yield w
        finally:
            for member in list(w.consumers):
                member.close()
            operators.close()


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
    # The replicas were in the status before anything was scaled: the first status patch that wrote
    # pausedWorkloads was answered before the first scale patch arrived.
    [recorded, *_] = world.audit.wait(
        lambda c: c.resource == RESETS and c.subresource == "status" and c.name == "paused" and c.verb == "patch"
        and "pausedWorkloads" in str(c.body), what="the status patch recording the replicas")
    [scaled, *_] = world.audit.wait(lambda c: c.subresource == "scale" and c.name == "paused-api"
                                    and c.verb == "patch", what="the scale patch")
    assert recorded.answered <= scaled.received, (recorded, scaled)
    world.stop(member)
    status = world.phase("paused", *FINAL)
    assert status["phase"] == "Succeeded", status
    assert world.offsets("paused-app") == {("paused", 0): 0, ("paused", 1): 0}
    status = world.wait("paused", lambda s: all(p["state"] == "Restored" for p in s["pausedWorkloads"]), "restored")
    assert (world.replicas("Deployment", "paused-api"), world.replicas("StatefulSet", "paused-worker")) == (3, 2)
    assert [p["state"] for p in status["pausedWorkloads"]] == ["Restored", "Restored"]
    world.audit.wait(lambda c: c.subresource == "scale" and c.name == "paused-api" and c.verb == "patch",
                     at_least=2, what="the scale back")
    assert len(world.scale_calls("paused-api", "patch")) == 2  # down once, up once
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
    assert world.replicas("Deployment", "refusal-api") == 2
    world.audit.wait(lambda c: c.subresource == "scale" and c.name == "refusal-api" and c.verb == "patch",
                     at_least=2, what="the scale down and back")
    assert len(world.scale_calls("refusal-api", "patch")) == 2
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
    # The status patch that said so is in the audit log, so is every call the operator made before it.
    world.audit.wait(lambda c: c.resource == RESETS and c.name == "missing" and "WorkloadNotFound" in str(c.body),
                     what="the WorkloadNotFound status patch")
    world.audit.wait(lambda c: c.subresource == "scale" and c.name == "missing-worker" and c.code == 404,
                     what="the StatefulSet's scale read, answered 404")
    assert world.replicas("Deployment", "missing-api") == 2 and not world.scale_calls("missing-api", "patch")
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
    """The installed ClusterRole without the pause-workloads rule (the default install) while the reset is
    created: the real authorizer answers 403, which the condition names, and the operator retries (each retry
    a 403 in the audit log) with one Event, not one per retry."""
    make_topics(world.broker, {"locked": 1})
    admin_commit(world.broker.bootstrap_servers, "locked-app", {("locked", 0): 0})
    world.workload("Deployment", "locked-api", 2)
    namespace, plane = world.kube.namespace, world.api.plane
    default = [r for r in cluster_role(plane)["rules"] if r != _pause_rule()]
    with rules_changed(plane, default, in_force=(namespace, "get", "deployments", "apps", "scale")):
        world.kube.create(RESETS, reset("locked", "locked-app", {"latest": True}, world.kafka,
                                        [("Deployment", "locked-api")]))
        status = world.reason("locked", "WorkloadAccessDenied")
        message = condition(status, "Degraded")["message"]
        assert f"may not get deployments/scale (apps) in namespace {namespace}" in message, message
        assert "pauseWorkloads.enabled=true" in message and "manifests/components/pause-workloads" in message
        assert "forbidden" in message  # the API server's own answer, quoted
        refused = world.audit.wait(lambda c: c.subresource == "scale" and c.name == "locked-api", at_least=3,
                                   what="a few retries")
        assert {(c.verb, c.code, c.decision) for c in refused} == {("get", 403, "forbid")}
        assert [e["reason"] for e in world.events("locked")].count("WorkloadAccessDenied") == 1  # no storm
        assert "pausedWorkloads" not in world.status("locked") and world.replicas("Deployment", "locked-api") == 2
    world.kube.delete(GROUP_VERSION, RESETS, "locked")
    try:
        wait_until(lambda: world.kube.find(GROUP_VERSION, RESETS, "locked") is None, what="the reset gone")
    except AssertionError:
        raise AssertionError(f"{world.kube.find(GROUP_VERSION, RESETS, 'locked')} {world.events('locked')}") from None


def test_workloads_come_back_even_when_the_connection_can_no_longer_be_read(world: World) -> None:
    """The state a reset leaves when it ended (Failed) with a workload still at zero, and its Secret was deleted
    since: the scale back needs nothing from Kafka or the spec, so it happens all the same."""
    world.workload("Deployment", "orphan-api", 0)
    kafka = {"bootstrapServers": world.broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
             "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "deleted-since"}}}
    world.kube.create(RESETS, reset("orphan", "orphan-app", {"latest": True}, kafka, [("Deployment", "orphan-api")],
                                    approved=False))
    world.reason("orphan", "SecretNotFound")
    world.kube.patch(GROUP_VERSION, RESETS, "orphan", {"status": {
        "phase": "Failed", "completionTime": "2026-01-01T00:00:00Z", "pauseStartTime": "2026-01-01T00:00:00Z",
        "pausedWorkloads": [{"kind": "Deployment", "name": "orphan-api", "replicas": 2, "state": "ScaledDown"}]}},
        subresource="status")
    world.wait("orphan", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert world.replicas("Deployment", "orphan-api") == 2
    assert condition(world.status("orphan"), "Degraded")["reason"] == "SecretNotFound"  # still said


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
    assert world.replicas("Deployment", "nobackup-api") == 2
    world.audit.wait(lambda c: c.subresource == "scale" and c.name == "nobackup-api" and c.verb == "patch",
                     at_least=2, what="the scale down and back")
    assert len(world.scale_calls("nobackup-api", "patch")) == 2
    assert world.offsets("nobackup-app") == {("nobackup", 0): 1} and "backup" not in status


def test_a_final_reset_scales_each_workload_back_once_per_visit(world: World) -> None:
    """A final reset found with a workload at zero (the scale back of an earlier visit failed, or the operator
    stopped right after the final write): scaled back once, one WorkloadsRestored Event, and the entry says
    what was done ("scaled back"), not what a second pass over a stale status would find."""
    make_topics(world.broker, {"once": 1})
    world.workload("Deployment", "once-api", 0)
    world.kube.create(RESETS, reset("once", "once-app", {"latest": True}, world.kafka, [("Deployment", "once-api")],
                                    approved=False))
    world.phase("once", "AwaitingApproval")
    world.kube.patch(GROUP_VERSION, RESETS, "once", {"status": {
        "phase": "Failed", "completionTime": "2026-01-01T00:00:00Z", "pauseStartTime": "2026-01-01T00:00:00Z",
        "pausedWorkloads": [{"kind": "Deployment", "name": "once-api", "replicas": 2, "state": "ScaledDown"}]}},
        subresource="status")
    wait_until(lambda: [e for e in world.events("once") if e["reason"] == "WorkloadsRestored"], what="restored")
    assert world.replicas("Deployment", "once-api") == 2
    # Every call of that visit is in the audit log once its status patch (the entry's message) is.
    world.audit.wait(lambda c: c.resource == RESETS and c.name == "once" and "scaled back to 2 replicas" in str(c.body),
                     what="the status patch of the scale back")
    gets = world.scale_calls("once-api", "get")
    assert len(gets) == 1, gets
    assert world.status("once")["pausedWorkloads"][0]["message"] == "scaled back to 2 replicas"
    assert [e["reason"] for e in world.events("once")].count("WorkloadsRestored") == 1


def test_the_pause_install_allows_every_call_the_operator_made(world: World, tmp_path: Path) -> None:
    """Every request the operator sent in this module (the real API server's audit log) was allowed by the real
    authorizer on the install with components/pause-workloads (but test_without_the_rbac_opt_in's, while the
    rule was taken away), and is allowed by the rules of that install as kustomize renders it; its calls on workloads
    are scale subresources only, and the default install allows none of them."""
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    made = world.audit.calls()
    refused = [c for c in made if c.decision != "allow"]
    assert all((c.name, c.resource_path, c.decision) == ("locked-api", "deployments/scale", "forbid")
               for c in refused), refused
    calls = {(c.group, c.resource_path, c.verb) for c in made}
    workloads = {c for c in calls if c[0] == "apps"}
    assert workloads == {("apps", "deployments/scale", "get"), ("apps", "deployments/scale", "patch"),
                         ("apps", "statefulsets/scale", "get"), ("apps", "statefulsets/scale", "patch")}

    pause_install = [r for o in render_install("cluster-wide+pause-workloads", tmp_path) if o["kind"] == "ClusterRole"
                     for r in o["rules"]]
    assert sorted(c for c in calls if not allowed(pause_install, *c)) == []
    assert not [c for c in workloads if allowed(cluster_wide_rules(), *c)]  # the default install's sources
