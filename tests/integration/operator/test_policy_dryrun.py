"""DryRun writes nothing to Kafka, ever (issue 9): the DryRun example of manifests/examples, as the README's
install commands apply it (its Kafka address pointed at the sandbox broker, its namespace at the test's),
runs through the real operator and the Local engine over a cluster where its protected group is due for
keep-alive. It reports what keep-alive would do, and afterwards Kafka is exactly as before: the same
groups in the same states with the same members, the same committed offsets (with leader epoch and
metadata), and not one record more in __consumer_offsets (which every commit, group deletion or rebalance
would append to). One analysis run (the first pays for Spark's start).

The operator runs under Kopf on the real kube-apiserver (the `real_api` marker: the install applied, the
operator on the installed ServiceAccount's token, a fresh namespace), so "nothing in Kubernetes" is read
from a real API server. The broker stays the sandbox (docs/testing.md): keep-alive is due only days after a
group left, and the sandbox's clock is moved a day on between the commits (Apache Kafka's cannot be)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from operator_harness import GROUP_VERSION, ROOT, RUN_TIMEOUT, Kube
from waiting import wait_until

from kafka_offset_demo.story import admin_commit, catch_up, commit_and_leave, make_topics, story_broker
from kafka_offsets_model.raw import OFFSETS_TOPIC
from kafka_sandbox import SandboxBroker

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # a Spark run; the operator on the real API server


EXAMPLE = ROOT / "manifests" / "examples" / "policy-dryrun.yaml"
PLURAL = "consumergroupoffsetpolicies"
OFFSETS_PARTITIONS = 4


@pytest.fixture
def cluster_due_for_keep_alive() -> Iterator[SandboxBroker]:
    """No live member (a consumer that sits in a group may rebalance on its own and write to
    __consumer_offsets, which would blur the comparison): billing-monthly, the example's protected group,
    left 5 days ago, so the broker expires it in 2 days and keep-alive is due (lead: half the 7-day
    retention); reporting-old left as long ago and is a candidate of the example's rules; manual-replay is a
    simple group."""
    with story_broker() as broker:  # 4 __consumer_offsets partitions
        make_topics(broker, {"orders": 2, "invoices": 1}, 6)
        admin_commit(broker, "manual-replay", {("orders", 0): 2})
        broker.clock.advance(days=1)
        commit_and_leave(broker, "billing-monthly", {("invoices", 0): 5})
        commit_and_leave(broker, "reporting-old", {("orders", 0): 4, ("orders", 1): 5})
        catch_up(broker)
        yield broker


def kafka_state(broker: SandboxBroker) -> dict[str, Any]:
    """Everything a write could change, read with an independent client (kafka-python's admin):
    ListGroups, DescribeGroups, OffsetFetch of every group, and the end of every __consumer_offsets
    partition (ListOffsets)."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        groups = sorted(g["group_id"] for g in admin.list_groups())
        described = {g: {k: v for k, v in d.items() if k != "authorized_operations"}
                     for g, d in admin.describe_groups(groups).items()}
        offsets = {g: {(tp.topic, tp.partition): (o.offset, o.metadata, o.leader_epoch) for tp, o in found.items()}
                   for g, found in admin.list_group_offsets({g: None for g in groups}).items()}
        ends = admin.list_partition_offsets(
            {TopicPartition(OFFSETS_TOPIC, p): OffsetSpec.LATEST for p in range(OFFSETS_PARTITIONS)})
        return {"groups": described, "offsets": offsets,
                "records": {tp.partition: o.offset for tp, o in ends.items()}}
    finally:
        admin.close()


def localised(example: Path, bootstrap: str, namespace: str) -> dict[str, Any]:
    doc = yaml.safe_load(example.read_text())
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["kafka"]["bootstrapServers"] = bootstrap
    return doc


def ready(kube: Kube, name: str) -> dict[str, Any] | None:
    status = kube.get(GROUP_VERSION, PLURAL, name).get("status") or {}
    cond = next((c for c in status.get("conditions", []) if c["type"] == "Ready"), {})
    if cond.get("status") == "False" and cond.get("reason") not in (None, "AnalysisRunning"):
        raise AssertionError(f"the run failed: {cond}")
    return cond if cond.get("status") == "True" and status.get("lastRun") else None


def test_the_dry_run_example_with_keep_alive_writes_nothing_to_kafka(
        cluster_due_for_keep_alive: SandboxBroker, kube: Kube, start_operator: Any) -> None:
    broker = cluster_due_for_keep_alive
    policy = localised(EXAMPLE, broker.bootstrap_servers, kube.namespace)
    spec = policy["spec"]
    assert spec["mode"] == "DryRun" and spec["protect"] == {"groups": ["billing-monthly"], "keepAlive": True}
    # A regex where a glob is meant: the run goes on, and the status says so (issue 11).
    spec.setdefault("groups", {})["exclude"] = ["^scratch-.*$"]
    before = kafka_state(broker)
    assert before["groups"]["billing-monthly"]["protocol_type"] == "consumer"  # a rebase would clear it

    start_operator()
    kube.create(PLURAL, policy)
    cond = wait_until(lambda: ready(kube, policy["metadata"]["name"]), RUN_TIMEOUT, "the DryRun run")

    # It says what it would do ...
    assert "(DryRun: nothing proposed)" in cond["message"]
    assert "keep-alive: billing-monthly: would rebase as a simple group" in cond["message"], cond["message"]
    assert "DryRun writes nothing to Kafka" in cond["message"]
    warnings = kube.get(GROUP_VERSION, PLURAL, policy["metadata"]["name"])["status"]["warnings"]
    assert [w.split(": ", 1)[0] for w in warnings] == ["spec.groups.exclude", "spec.groups.exclude"]
    assert "looks like a regular expression" in warnings[0] and "did you mean 'scratch-*'?" in warnings[0]
    assert "matches none of the" in warnings[1]
    assert "2 warnings about group patterns (status.warnings)" in cond["message"]
    # ... and does nothing: Kafka is as it was, to the last __consumer_offsets record.
    assert kafka_state(broker) == before
    # Nor anything in Kubernetes on keep-alive's behalf, nor an Event claiming an action.
    assert kube.list(GROUP_VERSION, "offsetdeletions") == []
    assert [c["metadata"]["name"] for c in kube.list("v1", "configmaps") if c["metadata"]["name"].endswith("-keepalive")] == []
    reasons = {e.get("reason") for e in kube.events_for(policy["metadata"]["name"])}
    assert not reasons & {"KeepAliveRebased", "KeepAliveRecommitted", "KeepAliveResumed"}, reasons
