"""A ConsumerGroupOffsetPolicy through the real operator (Kopf on the real kube-apiserver, installed as a
platform team does it and running with the installed ServiceAccount's token: installed_api.py), the sandbox
broker and the Local engine (PySpark local mode in the operator's warm worker): the demo's story played in DryRun,
then Approve, then Auto; an offset committed between the scan and the deletion is skipped; the protected
group is never deleted, and its keep-alive only says what it would do in DryRun, proposes its rebase in
Approve (an OffsetDeletion that changes nothing until approved), and Auto approves that proposal, which
rebases the group.

Three analysis runs in all (the first pays for Spark's start), so the story is played once per module and
each mode is a module fixture one step further than the one before (DryRun, Approve, a late commit, Auto);
each fixture records what its step left, and each test proves one thing a step did.

On the real API server because nothing here needs the emulator's fault injection: so the RBAC we ship is
proven enough for the whole policy story (proposals created, approved by Auto as the operator's own user
under the real approvals admission policy, backups, Events, keep-alive's rebase), and the last step deletes
the policy and the real garbage collector takes what it owns. The sandbox broker stays: the story moves its
clock by days."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from argocd_health import health, health_script
from brokers import sandbox_broker
from flux_health import flux_status
from installed_api import ADMIN, OPERATOR_USER, installed_api
from kafka_clients import admin_commit, committed
from kube_cluster import ControlPlane
from operator_harness import (
    GROUP_VERSION,
    Kube,
    Operators,
    condition,
    deletions_by_group,
    set_mode,
    wait_run,
)
from waiting import wait_past, wait_until

from kafka_offset_demo.story import POLICY_SPEC, Story, story_clock
from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.times import parse_iso
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow  # Spark analyses

POLICY = "stale-offsets"
GROUPS = ("reporting-old", "orders-app", "nightly-export", "billing-monthly")
OPERATOR = OPERATOR_USER  # as the install names it


@dataclass
class Played:
    broker: SandboxBroker
    kube: Kube
    namespace: str


@pytest.fixture(scope="module")
def played(real_cluster: ControlPlane, real_crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    """The demo's story on its own broker, an operator with the installed ServiceAccount's token, and the
    policy applied in DryRun."""
    with sandbox_broker(clock=story_clock()) as broker, Story(broker), \
            installed_api(real_cluster, tmp_path_factory.mktemp("kube")) as api:
        kube = api.kube
        operators = Operators(api.options())
        try:
            operators.start()
            kube.create("consumergroupoffsetpolicies", {
                "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                "metadata": {"name": POLICY, "namespace": api.namespace},
                "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, **POLICY_SPEC, "mode": "DryRun"}})
            yield Played(broker, kube, api.namespace)
        finally:
            operators.close()


# -- the steps


@dataclass
class DryRun:
    status: dict[str, Any]
    deletions: dict[str, dict[str, Any]]
    billing_protocol_type: str


@pytest.fixture(scope="module")
def dry_run(played: Played) -> DryRun:
    status = wait_run(played.kube, POLICY, None, "the DryRun analysis")
    with KafkaAdmin(ConnectionSettings(played.broker.bootstrap_servers)) as admin:
        billing = admin.describe_group("billing-monthly")
    return DryRun(status, deletions_by_group(played.kube), billing.protocol_type)


@dataclass
class Approve:
    status: dict[str, Any]
    proposed: dict[str, dict[str, Any]]  # the deletion proposals, by group
    rebase: dict[str, Any]  # keep-alive's rebase proposal for billing-monthly
    phases: dict[str, str]  # group -> its OffsetDeletion's phase, once each waits for approval
    billing_protocol_type: str
    billing_committed: dict[tuple[str, int], int]


@pytest.fixture(scope="module")
def approve(played: Played, dry_run: DryRun) -> Approve:
    kube = played.kube
    wait_past(dry_run.status["lastRun"]["completionTime"])  # runs are told apart by completionTime (seconds)
    set_mode(kube, POLICY, "Approve")
    status = wait_run(kube, POLICY, dry_run.status["lastRun"]["completionTime"], "the Approve analysis")
    found = deletions_by_group(kube)
    phases = {group: kube.wait_for_phase(d["metadata"]["name"], "AwaitingApproval")["phase"]
              for group, d in found.items()}
    rebase = kube.deletion(found["billing-monthly"]["metadata"]["name"])  # with its status
    with KafkaAdmin(ConnectionSettings(played.broker.bootstrap_servers)) as admin:
        billing = admin.describe_group("billing-monthly")
    return Approve(status, {g: d for g, d in found.items() if g != "billing-monthly"}, rebase, phases,
                   billing.protocol_type, committed(played.broker.bootstrap_servers, "billing-monthly"))


@dataclass
class LateCommit:
    status: dict[str, Any]  # manual-replay's OffsetDeletion once Succeeded
    committed: dict[tuple[str, int], int]  # manual-replay's offsets afterwards


@pytest.fixture(scope="module")
def late_commit(played: Played, approve: Approve) -> LateCommit:
    """The replay tool commits again after the scan; then someone approves its proposal."""
    admin_commit(played.broker.bootstrap_servers, "manual-replay", {("payments", 0): 4})
    replay = approve.proposed["manual-replay"]["metadata"]["name"]
    played.kube.patch(GROUP_VERSION, "offsetdeletions", replay, {"spec": {"approved": True, "approvedBy": ADMIN}})
    status = played.kube.wait_for_phase(replay, "Succeeded")
    return LateCommit(status, committed(played.broker.bootstrap_servers, "manual-replay"))


@dataclass
class Auto:
    status: dict[str, Any]
    deletions: dict[str, dict[str, Any]]
    committed: dict[str, dict[tuple[str, int], int]]  # once reporting-old's and orders-app's deletions Succeeded
    rebase: dict[str, Any]  # billing-monthly's rebase proposal once it ran
    billing_protocol_type: str


@pytest.fixture(scope="module")
def auto(played: Played, approve: Approve, late_commit: LateCommit) -> Auto:
    kube = played.kube
    wait_past(approve.status["lastRun"]["completionTime"])  # runs are told apart by completionTime (seconds)
    set_mode(kube, POLICY, "Auto")
    status = wait_run(kube, POLICY, approve.status["lastRun"]["completionTime"], "the Auto analysis")
    found = deletions_by_group(kube)
    for group in ("reporting-old", "orders-app"):
        kube.wait_for_phase(approve.proposed[group]["metadata"]["name"], "Succeeded")
    rebase = approve.rebase["metadata"]["name"]
    kube.wait_for_phase(rebase, "Restored", "Failed", "PartiallyFailed")
    with KafkaAdmin(ConnectionSettings(played.broker.bootstrap_servers)) as admin:
        billing = admin.describe_group("billing-monthly")
    return Auto(status, found, {g: committed(played.broker.bootstrap_servers, g) for g in GROUPS},
                kube.deletion(rebase), billing.protocol_type)


# -- DryRun


def test_dry_run_reports_the_candidates_and_proposes_nothing(dry_run: DryRun) -> None:
    status = dry_run.status
    last = status["lastRun"]
    assert last["engine"] == "Local" and last["candidates"] == 7 and last["deletionsCreated"] == 0
    assert {k: v for k, v in last["candidatesByReason"].items() if v} == {
        "EmptyGroup": 3, "Standalone": 2, "UnsubscribedTopic": 2}
    assert [(c["group"], c["partitions"], c["reason"]) for c in status["topCandidates"]] == [
        ("reporting-old", 3, "EmptyGroup"), ("manual-replay", 2, "Standalone"), ("orders-app", 2, "UnsubscribedTopic")]
    assert status["observedGeneration"] == 1 and status["nextRunTime"] > last["completionTime"]
    assert condition(status, "Degraded")["status"] == "False"
    assert dry_run.deletions == {}


def test_a_policy_after_a_successful_run_is_healthy_for_argo_cd_and_current_for_flux(dry_run: DryRun) -> None:
    obj = {"kind": "ConsumerGroupOffsetPolicy", "metadata": {"generation": 1}, "status": dry_run.status}
    assert health(health_script("kafkaoffsets.dev", "ConsumerGroupOffsetPolicy"), obj)["status"] == "Healthy"
    assert flux_status(obj) == "Current"
    assert not {c["type"] for c in dry_run.status["conditions"]} & {"Reconciling", "Stalled"}


def test_a_successful_run_exports_readiness_its_time_and_the_first_expiries(dry_run: DryRun, played: Played) -> None:
    from kafka_offset_operator.adapters.metrics import REGISTRY

    labels = {"namespace": played.namespace, "policy": POLICY}
    assert REGISTRY.get_sample_value("kafka_offset_operator_policy_ready", labels) == 1
    completed = parse_iso(dry_run.status["lastRun"]["completionTime"])
    assert completed is not None
    assert REGISTRY.get_sample_value("kafka_offset_operator_policy_last_success_timestamp_seconds", labels) == pytest.approx(
        completed / 1000, abs=1)
    protected = REGISTRY.get_sample_value("kafka_offset_operator_offsets_expire_timestamp_seconds",
                                          {**labels, "kind": "protected", "group": "billing-monthly"})
    assert protected is not None and protected > completed / 1000  # not yet expired: keep-alive's business


def test_dry_run_says_what_keep_alive_would_do_and_writes_nothing(dry_run: DryRun) -> None:
    assert "billing-monthly: would rebase as a simple group" in condition(dry_run.status, "Ready")["message"]
    assert dry_run.billing_protocol_type == "consumer"  # DryRun writes nothing


def test_approve_proposes_the_rebase_and_changes_nothing_in_kafka_until_it_is_approved(
        approve: Approve, dry_run: DryRun) -> None:
    """Issue 18 item 3: in Approve mode keep-alive's rebase (DeleteGroups, then re-commit) waits for an approval."""
    name = approve.rebase["metadata"]["name"]
    assert f"billing-monthly: rebase proposed as OffsetDeletion {name}" in condition(approve.status, "Ready")["message"]
    spec = approve.rebase["spec"]
    assert (spec["rebase"], spec["deleteGroup"], spec["restore"], spec["approved"]) == (True, True, True, False)
    assert spec["requestedBy"] == OPERATOR and "approvedBy" not in spec
    assert spec["expectedOffsets"] == [{"topic": "invoices", "partition": 0, "offset": 5, "reason": "KeepAliveRebase"}]
    waiting = approve.rebase["status"]
    assert waiting["phase"] == "AwaitingApproval" and "backup" not in waiting
    assert "plan: keep-alive rebase of protected group billing-monthly" in condition(waiting, "Ready")["message"]
    assert approve.billing_protocol_type == "consumer"  # not rebased: nothing changed in Kafka
    assert approve.billing_committed == {("invoices", 0): 5}


def test_every_action_of_a_run_is_an_event_read_back_from_the_api(played: Played, approve: Approve) -> None:
    """Posted from the visit's own thread (not Kopf's): the first run's success, the proposals, keep-alive's
    rebase proposal (Approve mode)."""
    def posted() -> dict[str, str] | None:
        found = {e["reason"]: e["type"] for e in played.kube.events_for(POLICY)}
        wanted = {"AnalysisSucceeded", "OffsetDeletionsCreated", "KeepAliveProposed"}
        return found if wanted <= set(found) else None
    found = wait_until(posted, 30, "the policy's Events")
    assert (found["AnalysisSucceeded"], found["OffsetDeletionsCreated"], found["KeepAliveProposed"]) == (
        "Normal", "Normal", "Normal")
    created = [e for e in played.kube.events_for(POLICY) if e["reason"] == "OffsetDeletionsCreated"]
    assert [e["message"] for e in created] == [
        f"{approve.status['lastRun']['deletionsCreated']} OffsetDeletions created (awaiting approval)"]
    assert {e["involvedObject"]["kind"] for e in played.kube.events_for(POLICY)} == {"ConsumerGroupOffsetPolicy"}


# -- Approve


def test_approve_proposes_one_deletion_per_group_waiting_for_approval(approve: Approve) -> None:
    proposed = approve.proposed
    assert approve.status["lastRun"]["deletionsCreated"] == 3, (condition(approve.status, "Ready")["message"], list(proposed))
    assert set(proposed) == {"reporting-old", "manual-replay", "orders-app"}
    assert all(d["spec"]["approved"] is False for d in proposed.values())
    assert proposed["orders-app"]["spec"]["topics"] == [{"name": "payments", "partitions": [0, 1]}]
    assert set(approve.phases.values()) == {"AwaitingApproval"}


def test_proposals_carry_the_facts_of_their_scan(approve: Approve) -> None:
    """What the re-check right before the delete reads from (decisions/fresh_verdict.py): where the scan
    ended in the group's __consumer_offsets partition, and each offset's commit time and rule."""
    from kafka_offsets_model.codec import partition_for

    spec = approve.proposed["orders-app"]["spec"]
    snapshot = approve.status["lastRun"].get("snapshot")
    scan = spec["scan"]
    assert scan["groupType"] == "classic" and scan["offsetsEndOffset"] > 0 and scan["time"]
    if snapshot:  # the partition count is the snapshot's
        assert scan["offsetsPartition"] == partition_for("orders-app", len(snapshot))
    assert {(e["topic"], e["reason"]) for e in spec["expectedOffsets"]} == {("payments", "UnsubscribedTopic")}
    assert all(e["commitTimestamp"] > 0 for e in spec["expectedOffsets"])


def test_an_offset_committed_after_the_scan_is_skipped_when_approved(late_commit: LateCommit) -> None:
    results = {(r["topic"], r["partition"]): r["status"] for r in late_commit.status["results"]}
    assert results == {("payments", 0): "Skipped", ("payments", 1): "Deleted"}
    assert late_commit.committed == {("payments", 0): 4}


# -- Auto


def test_auto_finds_the_same_proposals_again_and_creates_no_duplicates(auto: Auto, approve: Approve) -> None:
    assert auto.status["lastRun"]["deletionsCreated"] == 0 and auto.status["lastRun"]["candidates"] == 5
    assert {g: d["metadata"]["name"] for g, d in auto.deletions.items()} == {
        **{g: d["metadata"]["name"] for g, d in approve.proposed.items()},
        "billing-monthly": approve.rebase["metadata"]["name"]}


def test_auto_approves_the_waiting_rebase_which_keeps_the_protected_group_alive_as_a_simple_group(auto: Auto) -> None:
    name = auto.rebase["metadata"]["name"]
    assert f"billing-monthly: approved its waiting rebase proposal, OffsetDeletion {name}" in condition(
        auto.status, "Ready")["message"]
    assert (auto.rebase["spec"]["approved"], auto.rebase["spec"]["approvedBy"]) == (True, OPERATOR)
    assert auto.rebase["status"]["phase"] == "Restored", auto.rebase["status"].get("conditions")
    assert auto.billing_protocol_type == ""  # a simple group: its offsets now expire by commit time
    assert auto.committed["billing-monthly"] == {("invoices", 0): 5}  # the same offsets


def test_auto_approves_the_proposals_and_deletes_only_the_candidates(auto: Auto) -> None:
    assert auto.committed["reporting-old"] == {}
    assert auto.committed["orders-app"] == {("orders", 0): 5, ("orders", 1): 6}  # subscribed: kept
    assert auto.committed["nightly-export"] == {("orders", 0): 5, ("orders", 1): 5}  # within retention
    assert auto.committed["billing-monthly"] == {("invoices", 0): 5}  # protected

