"""A policy's whole-group deletions through the real operator (Kopf) on the real kube-apiserver (the install
applied once, the operator on the installed ServiceAccount's token: every DeleteGroups it proposes and every
approval pass the real RBAC authorizer and admission policy) and the sandbox broker: a group Empty for 40
days (rules.staleGroups) and a group whose offsets are all of a deleted topic (rules.deletedTopics: Delete,
which OffsetDelete cannot remove) are proposed as DeleteGroups, approved, deleted and one restored; a group
that also has offsets of a live topic is only reported, with the reason.

On the sandbox broker, not Apache Kafka (docs/testing.md): offsets a coordinator kept for a deleted topic
exist only as seeded __consumer_offsets records (Apache Kafka removes them with the topic), and the 40 days
are the sandbox's clock set back. The analysis is the plain-Python reference analysis (the Spark job's
oracle, same rules) of that broker's __consumer_offsets, with the topics its metadata lists, in place of
the Local engine: what is tested is what follows an analysis (the engine runs in test_policy_dryrun.py,
test_policy_modes*.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from brokers import make_topics, sandbox_broker
from installed_api import ADMIN, InstalledApi
from kafka_clients import admin_commit, committed, empty_group
from operator_harness import GROUP_VERSION, RUN_TIMEOUT, Kube, Operators, condition
from reference_engine import reference_engine
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offsets_model.codec import offset_commit
from kafka_sandbox import SandboxBroker
from kafka_sandbox.clock import Clock

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # the operator under Kopf on the real API server

POLICY = "cleanup"
DAY_MS = 86_400_000


@dataclass
class Proposed:
    broker: SandboxBroker
    kube: Kube
    status: dict[str, Any]  # the policy's, after its Approve run
    deletions: dict[str, dict[str, Any]]  # by group


@pytest.fixture(scope="module")
def proposed(api: InstalledApi) -> Iterator[Proposed]:
    wall = int(time.time() * 1000)
    # The broker's clock runs 40 days behind the operator's: what the groups do now happened 40 days ago.
    with sandbox_broker(clock=Clock(start_ms=wall - 40 * DAY_MS)) as broker, reference_engine(broker.bootstrap_servers):
        make_topics(broker, {"orders": 2})
        empty_group(broker.bootstrap_servers, "stale-batch", {("orders", 0): 3, ("orders", 1): 4})
        # Offsets a coordinator kept for a deleted topic (Kafka tombstones them only where it was active),
        # committed a day ago: not stale, only of a deleted topic.
        recent = wall - DAY_MS
        broker.append_offsets_records([(*offset_commit(g, "gone", p, offset=7, commit_timestamp=recent), recent)
                                       for g in ("legacy-reader", "mixed") for p in (0, 1)])
        admin_commit(broker.bootstrap_servers, "mixed", {("orders", 0): 1})  # and one of a live topic
        kube = api.kube
        operators = Operators(api.options())
        try:
            operators.start()
            kube.create("consumergroupoffsetpolicies", {
                "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                "metadata": {"name": POLICY, "namespace": kube.namespace},
                "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "mode": "Approve",
                         "rules": {"staleGroups": {"emptyFor": "30d"}, "deletedTopics": "Delete"},
                         "analysis": {"brokerRetention": "7d"}}})
            status = wait_until(lambda: _ran(kube), RUN_TIMEOUT, "the Approve analysis")
            found = {d["spec"]["group"]: d for d in kube.list(GROUP_VERSION, "offsetdeletions")}
            yield Proposed(broker, kube, status, found)
        finally:
            operators.close()


def _ran(kube: Kube) -> dict[str, Any] | None:
    status = kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", POLICY).get("status") or {}
    ready = condition(status, "Ready")
    if (status.get("lastRun") or {}).get("completionTime") and ready.get("status") == "True":
        return status
    if ready.get("status") == "False" and ready.get("reason") not in (None, "AnalysisRunning"):
        raise AssertionError(f"the run failed: {ready}")
    return None




def test_the_stale_group_and_the_deleted_topics_group_are_proposed_as_group_deletions(proposed: Proposed) -> None:
    last = proposed.status["lastRun"]
    assert {k: v for k, v in last["candidatesByReason"].items() if v} == {"StaleGroup": 2, "DeletedTopic": 4}
    assert set(proposed.deletions) == {"stale-batch", "legacy-reader"}
    stale, legacy = proposed.deletions["stale-batch"]["spec"], proposed.deletions["legacy-reader"]["spec"]
    assert stale["deleteGroup"] is True and not stale.get("requireTopicsDeleted")  # the API server defaults false
    assert legacy["deleteGroup"] is True and legacy["requireTopicsDeleted"] is True
    assert {(e["topic"], e["partition"], e["offset"]) for e in stale["expectedOffsets"]} == {
        ("orders", 0, 3), ("orders", 1, 4)}
    assert stale["approved"] is False


def test_a_deleted_topic_of_a_group_with_other_offsets_is_reported_with_the_reason(proposed: Proposed) -> None:
    message = condition(proposed.status, "Ready")["message"]
    assert "2 DeletedTopicReportOnly" in message, message
    assert committed(proposed.broker.bootstrap_servers, "mixed") == {("gone", 0): 7, ("gone", 1): 7, ("orders", 0): 1}


def test_approved_group_deletions_delete_the_groups_and_restore_recreates_a_simple_group(proposed: Proposed) -> None:
    kube, bootstrap = proposed.kube, proposed.broker.bootstrap_servers
    names = {g: d["metadata"]["name"] for g, d in proposed.deletions.items()}
    for name in names.values():
        kube.patch(GROUP_VERSION, "offsetdeletions", name, {"spec": {"approved": True, "approvedBy": ADMIN}})
    for group, name in names.items():
        status = kube.wait_for_phase(name, "Succeeded", "Failed", "PartiallyFailed")
        assert status["phase"] == "Succeeded" and status["groupResult"]["status"] == "Deleted", (group, status)
        assert committed(bootstrap, group) == {}
    kube.patch(GROUP_VERSION, "offsetdeletions", names["stale-batch"], {"spec": {"restore": True}})
    kube.wait_for_phase(names["stale-batch"], "Restored")
    assert committed(bootstrap, "stale-batch") == {("orders", 0): 3, ("orders", 1): 4}
    with KafkaAdmin(ConnectionSettings(bootstrap)) as admin:
        group = admin.describe_group("stale-batch")
    assert (group.state, group.protocol_type) == ("Empty", "")
