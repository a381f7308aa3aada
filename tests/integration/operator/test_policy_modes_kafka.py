"""A ConsumerGroupOffsetPolicy on Apache Kafka (the session's real broker) and the real kube-apiserver (the
install applied as a platform team does it, the operator running with the installed ServiceAccount's token:
installed_api.py): the operator under Kopf, the Local
engine (PySpark local mode) reading the real broker's `__consumer_offsets` as Kafka's group coordinator wrote
it, in DryRun, then Approve, then Auto. The rules are seconds long, so groups made a moment ago are already
candidates: an Empty classic group, a simple group (standalone commits), a protected group, and a group with
a live member (Kafka's Java consumer) that is never a candidate for its subscribed topic.

The day-long story of test_policy_modes.py (retention by days, keep-alive ahead of expiry) stays on the
sandbox: it moves the broker's clock, which only the sandbox can. Three analysis runs in all (the first pays
for Spark's start); each mode is a module fixture one step further than the one before.

Nothing here needs the emulator's fault injection, so it runs where every call is authorized by a real RBAC
authorizer and Auto's approvals pass the real approvals admission policy as the operator's own user."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from installed_api import installed_api
from java_clients import JavaConsumer
from kafka_clients import admin_commit, committed, empty_group
from kafka_under_test import Kafka, clean_after
from kube_cluster import ControlPlane
from operator_harness import (
    GROUP_VERSION,
    Kube,
    Operators,
    deletions_by_group,
    policy_status,
    set_mode,
    wait_run,
)
from waiting import wait_past, wait_until

pytestmark = pytest.mark.slow  # Spark analyses

POLICY = "short-retention"
SPEC = {
    "groups": {"include": ["*"]},
    "rules": {"emptyGroupRetention": "2s", "unsubscribedTopicRetention": "2s", "standaloneRetention": "2s"},
    "protect": {"groups": ["billing-*"]},
    "schedule": {"interval": "1h"},
}


@dataclass
class Played:
    kafka: Kafka
    kube: Kube


@pytest.fixture(scope="module")
def played(real_kafka: Kafka, real_cluster: ControlPlane, real_crds: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    """The groups, a live Java member, an operator, and the policy in DryRun once every commit is 2 s old."""
    if not real_kafka.is_real:
        pytest.skip("the day-long sandbox story is test_policy_modes.py")
    with clean_after(real_kafka) as kafka, installed_api(real_cluster, tmp_path_factory.mktemp("kube")) as api:
        make_topics(kafka, {"orders": 2, "invoices": 1, "payments": 1}, records_per_partition=6)
        empty_group(kafka.bootstrap_servers, "reporting-old", {("orders", 0): 3, ("orders", 1): 4})
        empty_group(kafka.bootstrap_servers, "billing-monthly", {("invoices", 0): 5})
        admin_commit(kafka.bootstrap_servers, "manual-replay", {("payments", 0): 2})
        with JavaConsumer(kafka.bootstrap_servers, "orders-app", ["orders"], version=kafka.version) as live:
            live.wait_assigned(2)
            live.commit({("orders", 0): 5, ("orders", 1): 6})
            started = time.time()
            wait_until(lambda: time.time() > started + 2.5, 5, "the commits to be older than the rules' 2 s")
            kube = api.kube
            operators = Operators(api.options())
            try:
                operators.start()
                kube.create("consumergroupoffsetpolicies", {
                    "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                    "metadata": {"name": POLICY, "namespace": api.namespace},
                    "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, **SPEC, "mode": "DryRun"}})
                yield Played(kafka, kube)
            finally:
                operators.close()


@pytest.fixture(scope="module")
def dry_run(played: Played) -> dict[str, Any]:
    status = wait_run(played.kube, POLICY, None, "the DryRun analysis")
    assert deletions_by_group(played.kube) == {}
    return status


@pytest.fixture(scope="module")
def approve(played: Played, dry_run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    kube = played.kube
    wait_past(dry_run["lastRun"]["completionTime"])
    set_mode(kube, POLICY, "Approve")
    wait_run(kube, POLICY, dry_run["lastRun"]["completionTime"], "the Approve analysis")
    proposed = deletions_by_group(kube)
    for d in proposed.values():
        kube.wait_for_phase(d["metadata"]["name"], "AwaitingApproval")
    return proposed


@pytest.fixture(scope="module")
def auto(played: Played, approve: dict[str, dict[str, Any]]) -> dict[str, dict[tuple[str, int], int]]:
    kube = played.kube
    last = policy_status(kube, POLICY)["lastRun"]["completionTime"]
    wait_past(last)
    set_mode(kube, POLICY, "Auto")
    wait_run(kube, POLICY, last, "the Auto analysis")
    for d in approve.values():
        kube.wait_for_phase(d["metadata"]["name"], "Succeeded")
    return {g: committed(played.kafka.bootstrap_servers, g)
            for g in ("reporting-old", "manual-replay", "billing-monthly", "orders-app")}


def test_dry_run_finds_the_empty_and_the_simple_group_on_kafka(dry_run: dict[str, Any], played: Played) -> None:
    last = dry_run["lastRun"]
    assert {k: v for k, v in last["candidatesByReason"].items() if v} == {"EmptyGroup": 2, "Standalone": 1}, last
    assert [(c["group"], c["partitions"], c["reason"]) for c in dry_run["topCandidates"]] == [
        ("reporting-old", 2, "EmptyGroup"), ("manual-replay", 1, "Standalone")]
    assert last["deletionsCreated"] == 0
    assert committed(played.kafka.bootstrap_servers, "reporting-old") == {("orders", 0): 3, ("orders", 1): 4}


def test_approve_proposes_and_waits(approve: dict[str, dict[str, Any]]) -> None:
    assert set(approve) == {"reporting-old", "manual-replay"}
    assert all(d["spec"]["approved"] is False for d in approve.values())


def test_auto_deletes_only_the_candidates(auto: dict[str, dict[tuple[str, int], int]]) -> None:
    assert auto["reporting-old"] == {} and auto["manual-replay"] == {}
    assert auto["billing-monthly"] == {("invoices", 0): 5}  # protected
    assert auto["orders-app"] == {("orders", 0): 5, ("orders", 1): 6}  # a live member's subscribed topic
