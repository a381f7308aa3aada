"""A ConsumerGroupOffsetPolicy through the real operator (Kopf on kmock's emulated API), the sandbox broker
and the Local engine (PySpark local mode in the operator's warm worker): the demo's story played in DryRun,
then Approve, then Auto; an offset committed between the scan and the deletion is skipped; the protected
group is never deleted, and its keep-alive only says what it would do in DryRun, then rebases it once the
policy acts (Approve). Three analysis runs in all (the first pays for Spark's start)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from operator_harness import GROUP_VERSION, NAMESPACE, Kube, OperatorThread
from policy_scenario import admin_commit, committed

from kafka_offset_demo.story import POLICY_SPEC, Story, story_broker
from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_sandbox import SandboxBroker

Start = Callable[..., OperatorThread]
POLICY = "stale-offsets"
RUN_TIMEOUT = 240.0  # a cold Spark start on a busy 2-core machine


@pytest.fixture
def story() -> Iterator[tuple[SandboxBroker, Story]]:
    with story_broker() as broker, Story(broker) as played:
        yield broker, played


def cond(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == kind)


def policy_status(kube: Kube) -> dict[str, Any]:
    return kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", POLICY).get("status") or {}


def wait_run(kube: Kube, after: str | None, what: str) -> dict[str, Any]:
    """The status once a run newer than `after` (a lastRun.completionTime) finished."""
    def done() -> dict[str, Any] | None:
        status = policy_status(kube)
        last = (status.get("lastRun") or {}).get("completionTime")
        ready = next((c for c in status.get("conditions", []) if c["type"] == "Ready"), {})
        if last and last != after and ready.get("status") == "True":
            return status
        if ready.get("status") == "False" and ready.get("reason") not in (None, "AnalysisRunning"):
            raise AssertionError(f"the run failed: {ready}")
        return None
    return kube.wait_for(done, RUN_TIMEOUT, what)


def deletions(kube: Kube) -> dict[str, dict[str, Any]]:
    return {d["spec"]["group"]: d for d in kube.list(GROUP_VERSION, "offsetdeletions")}


def set_mode(kube: Kube, mode: str) -> None:
    kube.patch(GROUP_VERSION, "consumergroupoffsetpolicies", POLICY, {"spec": {"mode": mode}})


def test_dry_run_then_approve_then_auto_on_one_story(story: tuple[SandboxBroker, Story], kube: Kube, start_operator: Start) -> None:
    broker, _ = story
    start_operator()
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": POLICY, "namespace": NAMESPACE},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, **POLICY_SPEC, "mode": "DryRun"}})

    # DryRun: the report, nothing proposed; keep-alive says it would rebase the protected group, and does not.
    status = wait_run(kube, None, "the DryRun analysis")
    last = status["lastRun"]
    assert last["engine"] == "Local" and last["candidates"] == 7 and last["deletionsCreated"] == 0
    assert {k: v for k, v in last["candidatesByReason"].items() if v} == {
        "EmptyGroup": 3, "Standalone": 2, "UnsubscribedTopic": 2}
    assert [(c["group"], c["partitions"], c["reason"]) for c in status["topCandidates"]] == [
        ("reporting-old", 3, "EmptyGroup"), ("manual-replay", 2, "Standalone"), ("orders-app", 2, "UnsubscribedTopic")]
    assert status["observedGeneration"] == 1 and status["nextRunTime"] > last["completionTime"]
    assert cond(status, "Degraded")["status"] == "False"
    assert "billing-monthly: would rebase as a simple group" in cond(status, "Ready")["message"]
    assert deletions(kube) == {}
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        assert admin.describe_group("billing-monthly").protocol_type == "consumer"  # DryRun writes nothing

    # Approve: one OffsetDeletion per group, waiting for approval.
    set_mode(kube, "Approve")
    status = wait_run(kube, last["completionTime"], "the Approve analysis")
    last = status["lastRun"]
    assert last["deletionsCreated"] == 3, (cond(status, "Ready")["message"], list(deletions(kube)))
    proposed = deletions(kube)
    assert set(proposed) == {"reporting-old", "manual-replay", "orders-app"}
    assert all(d["spec"]["approved"] is False for d in proposed.values())
    # Approve acts: the protected group is kept alive (rebased as a simple group).
    assert "billing-monthly: rebased as a simple group" in cond(status, "Ready")["message"]
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        assert admin.describe_group("billing-monthly").protocol_type == ""
    assert proposed["orders-app"]["spec"]["topics"] == [{"name": "payments", "partitions": [0, 1]}]
    for d in proposed.values():
        kube.wait_for_status(d["metadata"]["name"], lambda s: s.get("phase") == "AwaitingApproval", what="approval wait")

    # The replay tool commits again after the scan; then someone approves its proposal: that partition is skipped.
    admin_commit(broker, "manual-replay", {("payments", 0): 4})
    replay = proposed["manual-replay"]["metadata"]["name"]
    kube.patch(GROUP_VERSION, "offsetdeletions", replay, {"spec": {"approved": True}})
    done = kube.wait_for_status(replay, lambda s: s.get("phase") == "Succeeded", what="the approved deletion")
    results = {(r["topic"], r["partition"]): r["status"] for r in done["status"]["results"]}
    assert results == {("payments", 0): "Skipped", ("payments", 1): "Deleted"}
    assert committed(broker, "manual-replay") == {("payments", 0): 4}

    # Auto: the same proposals are found again (same names, no duplicates) and approved by the policy.
    set_mode(kube, "Auto")
    status = wait_run(kube, last["completionTime"], "the Auto analysis")
    assert status["lastRun"]["deletionsCreated"] == 0 and status["lastRun"]["candidates"] == 5
    assert {g: d["metadata"]["name"] for g, d in deletions(kube).items()} == {
        g: d["metadata"]["name"] for g, d in proposed.items()}
    for group in ("reporting-old", "orders-app"):
        name = proposed[group]["metadata"]["name"]
        kube.wait_for_status(name, lambda s: s.get("phase") == "Succeeded", what=f"{group} deleted")
    assert committed(broker, "reporting-old") == {}
    assert committed(broker, "orders-app") == {("orders", 0): 5, ("orders", 1): 6}  # subscribed: kept
    assert committed(broker, "nightly-export") == {("orders", 0): 5, ("orders", 1): 5}  # within retention
    assert committed(broker, "billing-monthly") == {("invoices", 0): 5}  # protected
