"""The spec.pauseWorkloads tests that need a fault only a test double can inject, split from
test_offset_reset_pause.py (which runs everything else on the real kube-apiserver and Apache Kafka):

- a `run` process SIGKILLed while its scale-to-zero patch is held (unapplied, or applied with its answer
  held): kmock's emulated API holds a chosen write; the real API server answers at once and has no hook to
  hold one request. The broker there is Apache Kafka (the `kafka` fixture): nothing is injected on its side.
- members back after the backup (a DescribeGroups held at the broker while a consumer joins) and the
  Kafka concurrency gate (DescribeGroups and OffsetFetch held): the sandbox broker's `faults`; Apache Kafka
  cannot hold a request. Their Kubernetes side is the emulator with one operator each (conftest's `cluster`
  and `start_operator`: milliseconds to start), since what they check is the operator's conduct at the broker;
  the pause through the real scale subresource and the real RBAC is test_offset_reset_pause.py's."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import kmock
import pytest
from brokers import make_topics
from kafka_clients import GroupConsumer, admin_commit, committed
from kafka_under_test import Kafka
from operator_harness import GROUP_VERSION, Kube, OperatorThread, condition, emulated_cluster
from operator_process import OperatorProcess
from reset_world import RESETS
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow  # operators under Kopf and as processes, with end-to-end waits

FINAL = ("Succeeded", "PartiallyFailed", "Failed")


def reset(name: str, group: str, target: dict[str, Any], bootstrap: str, pause: list[tuple[str, str]],
          *, timeout: str | None = None, approved: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": group, "target": target, "approved": approved, "allTopics": True,
                            "kafka": {"bootstrapServers": bootstrap}}
    if pause:
        spec["pauseWorkloads"] = [{"kind": k, "name": n} for k, n in pause]
    if timeout is not None:
        spec["pauseTimeout"] = timeout
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": name}, "spec": spec}


def replicas(kube: Kube, name: str) -> int:
    return int(kube.get("apps/v1", "deployments", name)["spec"]["replicas"])


@pytest.fixture
def members() -> Iterator[list[GroupConsumer]]:
    """Consumers a test started; any still in their group leave it at the end."""
    started: list[GroupConsumer] = []
    yield started
    for member in started:
        member.close()


def join(started: list[GroupConsumer], bootstrap: str, group: str, topic: str, client_id: str) -> GroupConsumer:
    member = GroupConsumer(bootstrap, group, [topic], client_id=client_id)
    started.append(member)
    member.wait_assigned()
    return member


@pytest.mark.parametrize("when", ["held", "applied"])
def test_sigkill_between_the_scale_down_and_its_status_write(kafka: Kafka, members: list[GroupConsumer],
                                                             tmp_path: Path, when: str) -> None:
    """A real `run` process SIGKILLed while its scale-to-zero patch is in flight (held before the API applied
    it, or applied with the answer held): the status says Recorded, not ScaledDown. The next process scales
    down (again), waits for Empty, resets and scales back to the replicas the first one recorded."""
    group = f"killed-{when}"
    make_topics(kafka, {group: 1}, records_per_partition=4)
    admin_commit(kafka.bootstrap_servers, group, {(group, 0): 1})
    member = join(members, kafka.bootstrap_servers, group, group, f"{group}-0")
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        kube.create("deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "killed-api"},
                                    "spec": {"replicas": 3}})
        held = cluster.hold("patch deployments", kmock.subresource("scale"), after=when == "applied")
        with OperatorProcess(kubeconfig, tmp_path) as first:
            first.ready()
            kube.create(RESETS, reset("killed", group, {"latest": True}, kafka.bootstrap_servers,
                                      [("Deployment", "killed-api")]))
            held.wait(30)
            assert first.kill() == -signal.SIGKILL
        held.release(apply=False)  # held before it applied: dropped with its client
        recorded = kube.status(RESETS, "killed")
        assert [(p["replicas"], p["state"]) for p in recorded["pausedWorkloads"]] == [(3, "Recorded")]
        assert replicas(kube, "killed-api") == (0 if when == "applied" else 3)
        with OperatorProcess(kubeconfig, tmp_path) as second:
            second.ready()
            wait_until(lambda: replicas(kube, "killed-api") == 0, 30, "zero")
            members.remove(member)
            member.close()  # the pods are gone: the consumer leaves the group
            wait_until(lambda: (kube.status(RESETS, "killed").get("pausedWorkloads") or [{}])[0].get("state") == "Restored",
                       30, "restored")
            assert "Traceback" not in second.log()
            second.kill()
        done = kube.status(RESETS, "killed")
        assert done["phase"] == "Succeeded" and committed(kafka.bootstrap_servers, group) == {(group, 0): 4}
        assert replicas(kube, "killed-api") == 3


def test_members_back_after_the_backup_end_a_running_reset_at_pause_timeout_and_scale_back(
        broker: SandboxBroker, kube: Kube, start_operator: Callable[..., OperatorThread],
        members: list[GroupConsumer]) -> None:
    make_topics(broker, {"rejoin": 1})
    admin_commit(broker.bootstrap_servers, "rejoin-app", {("rejoin", 0): 1})
    kube.create("deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rejoin-api"},
                                "spec": {"replicas": 2}})
    start_operator()
    # The third DescribeGroups of the group is _commit's (after _pause's and _backup's): held while a consumer
    # joins, so the reset is Running, backed up, with a member in the group.
    held = broker.faults.hold("DescribeGroups", group="rejoin-app", after=2)
    kube.create(RESETS, reset("rejoin", "rejoin-app", {"earliest": True}, broker.bootstrap_servers,
                              [("Deployment", "rejoin-api")], timeout="2s"))
    held.wait()
    assert kube.status(RESETS, "rejoin")["phase"] == "Running"
    join(members, broker.bootstrap_servers, "rejoin-app", "rejoin", "rejoin-outside-1")
    held.release()
    final = kube.wait_phase(RESETS, "rejoin", *FINAL)
    degraded = condition(final, "Degraded")
    assert (final["phase"], degraded["reason"]) == ("Failed", "PauseTimedOut"), final
    assert "rejoin-outside-1" in degraded["message"] and "no OffsetCommit sent" in degraded["message"]
    assert final["backup"]["name"] and "commitStartTime" not in final
    kube.wait_status(RESETS, "rejoin", lambda s: s["pausedWorkloads"][0]["state"] == "Restored", "restored")
    assert replicas(kube, "rejoin-api") == 2 and committed(broker.bootstrap_servers, "rejoin-app") == {("rejoin", 0): 1}


def test_reset_visits_wait_for_the_kafka_concurrency_gate(
        broker: SandboxBroker, kube: Kube, start_operator: Callable[..., OperatorThread],
        operator_options: OperatorOptions) -> None:
    """With --kafka-concurrency 1, a reset whose visit is at the broker holds the only slot: another reset's
    visit does not talk to Kafka until it is released (as OffsetDeletion visits and policies)."""
    make_topics(broker, {"gate-a": 1, "gate-b": 1})
    admin_commit(broker.bootstrap_servers, "gate-a-app", {("gate-a", 0): 0})
    admin_commit(broker.bootstrap_servers, "gate-b-app", {("gate-b", 0): 0})
    start_operator(replace(operator_options, kafka_concurrency=1))
    try:
        first = broker.faults.hold("DescribeGroups", group="gate-a-app")
        kube.create(RESETS, reset("gate-a", "gate-a-app", {"earliest": True}, broker.bootstrap_servers, []))
        first.wait()
        second = broker.faults.hold("OffsetFetch", group="gate-b-app")
        kube.create(RESETS, reset("gate-b", "gate-b-app", {"earliest": True}, broker.bootstrap_servers, [],
                                  approved=False))
        with pytest.raises(AssertionError, match="no OffsetFetch request arrived"):
            second.wait(timeout=1.0)  # bounded: the slot is taken, so it must not arrive at all
        first.release()
        second.wait().release()
        kube.wait_phase(RESETS, "gate-b", "AwaitingApproval")
        assert kube.wait_phase(RESETS, "gate-a", *FINAL)["phase"] == "Succeeded"
    finally:
        broker.faults.clear()
