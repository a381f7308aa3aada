"""The verdict is re-derived from fresh facts right before Kafka is changed (docs/safety.md, issue 18): an
OffsetDeletion as a policy proposes it (spec.scan: where its scan of the group's __consumer_offsets partition
ended; expectedOffsets with their rule), approved after the group came back to life, touches nothing that
changed, also when only the commit TIME changed. Each cause over the wire: the operator under Kopf on the
real kube-apiserver (the install applied, the operator on the installed ServiceAccount's token, a fresh
namespace per test: installed_api.py; approvals pass the install's admission policy), real kafka-python
clients for the group's side, and Apache Kafka (the `kafka` fixture) where no fault is needed; the sandbox
broker where a test writes the group's records itself (KIP-848 and streams groups) or injects a fault."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from brokers import make_topics, seed_kip848_group
from installed_api import ADMIN
from kafka import KafkaConsumer, TopicPartition
from kafka_clients import admin_commit, committed, empty_group, member
from kafka_under_test import Kafka
from operator_harness import GROUP_VERSION, Kube, OperatorThread, condition

from kafka_offsets_model.codec import (
    consumer_group,
    offset_commit,
    partition_for,
    streams_group,
    streams_group_topology,
)
from kafka_sandbox import SandboxBroker

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf per test

Start = Callable[..., OperatorThread]
TP = tuple[str, int]


def scan_position(bootstrap: str, group: str) -> tuple[int, int]:
    """What a policy's scan records: the group's __consumer_offsets partition and its end offset now
    (read_committed), read with a plain KafkaConsumer."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed")
    try:
        partitions = consumer.partitions_for_topic("__consumer_offsets")
        assert partitions
        p = partition_for(group, len(partitions))
        tp = TopicPartition("__consumer_offsets", p)
        return p, int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def proposed(name: str, broker: SandboxBroker | Kafka, group: str, offsets: Mapping[TP, int], reason: str, *,
             group_type: str = "classic", delete_group: bool = False) -> dict[str, Any]:
    """An OffsetDeletion as a policy's scan proposes it now (decisions/proposals.child_manifest's shape),
    waiting for approval."""
    partition, end = scan_position(broker.bootstrap_servers, group)
    topics: dict[str, list[int]] = {}
    for t, p in sorted(offsets):
        topics.setdefault(t, []).append(p)
    spec: dict[str, Any] = {
        "kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": group, "approved": False,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        "expectedOffsets": [{"topic": t, "partition": p, "offset": o, "reason": reason}
                            for (t, p), o in sorted(offsets.items())],
        "scan": {"time": "2026-01-01T00:00:00Z", "offsetsPartition": partition, "offsetsEndOffset": end,
                 "groupType": group_type},
    }
    if delete_group:
        spec["deleteGroup"] = True
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
            "metadata": {"name": name}, "spec": spec}


def approve(kube: Kube, name: str) -> dict[str, Any]:
    """The admin approves (approvedBy: the admission policy's check)."""
    kube.patch(GROUP_VERSION, "offsetdeletions", name, {"spec": {"approved": True, "approvedBy": ADMIN}})
    return kube.wait_for_status(name, lambda s: s.get("phase") in ("Succeeded", "Failed", "PartiallyFailed"),
                                what="a final phase")["status"]


def results(status: Mapping[str, Any]) -> dict[TP, tuple[str, str]]:
    return {(r["topic"], r["partition"]): (r["status"], r.get("message", "")) for r in status["results"]}


def test_a_re_commit_of_the_same_offset_after_the_scan_keeps_the_partition(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """The core defect: a standalone consumer (assign() and auto-commit on an idle partition) commits its
    unchanged position after the scan. Kafka now keeps that offset from the new commit; the operator must
    not delete it, although its VALUE is what the scan saw."""
    make_topics(kafka, {"orders": 2})
    admin_commit(kafka.bootstrap_servers, "idle-reader", {("orders", 0): 3, ("orders", 1): 5})
    start_operator()
    kube.create("offsetdeletions", proposed("idle", kafka, "idle-reader", {("orders", 0): 3, ("orders", 1): 5},
                                            "Standalone"))
    kube.wait_for_phase("idle", "AwaitingApproval")
    admin_commit(kafka.bootstrap_servers, "idle-reader", {("orders", 0): 3})  # the same value, a new commit
    status = approve(kube, "idle")
    found = results(status)
    assert found[("orders", 1)][0] == "Deleted"
    assert found[("orders", 0)][0] == "Skipped" and "committed again" in found[("orders", 0)][1], found
    assert "since the scan (2026-01-01T00:00:00Z)" in found[("orders", 0)][1]
    assert committed(kafka.bootstrap_servers, "idle-reader") == {("orders", 0): 3}
    assert "skipped 1" in condition(status, "Ready")["message"]


def test_members_back_in_a_classic_group_keep_its_offsets(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """EmptyGroup at the scan; a member joins afterwards (subscribed to another topic, so Kafka itself would
    have accepted the OffsetDelete). Nothing is deleted."""
    make_topics(kafka, {"orders": 1, "payments": 1})
    empty_group(kafka.bootstrap_servers, "back", {("orders", 0): 4})
    start_operator()
    kube.create("offsetdeletions", proposed("back", kafka, "back", {("orders", 0): 4}, "EmptyGroup"))
    kube.wait_for_phase("back", "AwaitingApproval")
    with member(kafka.bootstrap_servers, "back", ["payments"]):
        status = approve(kube, "back")
    found = results(status)
    assert found[("orders", 0)][0] == "Skipped", found
    assert "rewritten" in found[("orders", 0)][1] or "member(s) now" in found[("orders", 0)][1]
    assert committed(kafka.bootstrap_servers, "back")[("orders", 0)] == 4


def test_a_kip_848_group_whose_members_came_back_keeps_its_offsets(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """A KIP-848 group (invisible to DescribeGroups) Empty at the scan; a member re-joins with a regular
    expression not yet resolved, so Kafka's OffsetDelete would not see the topic as subscribed
    (ModernGroup.isSubscribedToTopic). Its records in __consumer_offsets tell: nothing is deleted."""
    make_topics(broker, {"orders": 1})
    now = int(time.time() * 1000)
    seed = [*consumer_group("modern", {}, epoch=3, resolved_at=now),
            offset_commit("modern", "orders", 0, offset=6, commit_timestamp=now)]
    broker.append_offsets_records([(k, v, now) for k, v in seed])
    start_operator()
    kube.create("offsetdeletions", proposed("modern", broker, "modern", {("orders", 0): 6}, "EmptyGroup",
                                            group_type="consumer"))
    kube.wait_for_phase("modern", "AwaitingApproval")
    later = int(time.time() * 1000)
    back = consumer_group("modern", {"m1": ((), "ord.*")}, epoch=4, resolved_at=later)
    broker.append_offsets_records([(k, v, later) for k, v in back])
    status = approve(kube, "modern")
    found = results(status)
    assert found[("orders", 0)][0] == "Skipped" and "ConsumerGroup" in found[("orders", 0)][1], found
    assert committed(broker.bootstrap_servers, "modern") == {("orders", 0): 6}


def test_a_subscription_that_now_includes_the_topic_keeps_its_offsets(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """UnsubscribedTopic at the scan (the live member read orders only); the member now reads payments too."""
    make_topics(kafka, {"orders": 1, "payments": 1})
    with member(kafka.bootstrap_servers, "widened", ["orders"]) as consumer:
        consumer.commit({("orders", 0): 2, ("payments", 0): 7})
    start_operator()
    with member(kafka.bootstrap_servers, "widened", ["orders"]):
        kube.create("offsetdeletions", proposed("widened", kafka, "widened", {("payments", 0): 7},
                                                "UnsubscribedTopic"))
        kube.wait_for_phase("widened", "AwaitingApproval")
    with member(kafka.bootstrap_servers, "widened", ["orders", "payments"]):
        status = approve(kube, "widened")
    found = results(status)
    assert found[("payments", 0)][0] == "Skipped", found
    assert committed(kafka.bootstrap_servers, "widened")[("payments", 0)] == 7


def delete_groups_skipped_after_a_re_commit(kafka: SandboxBroker | Kafka, kube: Kube, start_operator: Start) -> None:
    """A stale group (StaleGroup: DeleteGroups) commits its unchanged offsets again before the approval: the
    approved proposal deletes nothing (shared by the sandbox's and Apache Kafka's module)."""
    make_topics(kafka, {"orders": 1})
    admin_commit(kafka.bootstrap_servers, "stale", {("orders", 0): 8})
    start_operator()
    kube.create("offsetdeletions", proposed("stale", kafka, "stale", {("orders", 0): 8}, "StaleGroup",
                                            delete_group=True))
    kube.wait_for_phase("stale", "AwaitingApproval")
    admin_commit(kafka.bootstrap_servers, "stale", {("orders", 0): 8})
    status = approve(kube, "stale")
    assert status["phase"] == "Failed" and status["groupResult"]["status"] == "Skipped", status
    assert "committed again" in status["groupResult"]["message"]
    assert committed(kafka.bootstrap_servers, "stale") == {("orders", 0): 8}


def test_delete_groups_is_not_sent_for_a_group_that_re_committed_after_the_scan(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """A stale group (StaleGroup: DeleteGroups) commits its unchanged offsets again before the approval."""
    delete_groups_skipped_after_a_re_commit(kafka, kube, start_operator)


def test_without_a_change_the_proposal_runs_as_approved(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """The control: nothing happened to the group since the scan, so everything is deleted (the re-check
    reads only the group's own records: other groups' commits in the same partition do not count)."""
    make_topics(kafka, {"orders": 1})
    admin_commit(kafka.bootstrap_servers, "quiet", {("orders", 0): 1})
    start_operator()
    kube.create("offsetdeletions", proposed("quiet", kafka, "quiet", {("orders", 0): 1}, "Standalone"))
    kube.wait_for_phase("quiet", "AwaitingApproval")
    for i in range(60):  # other groups commit; some share the group's __consumer_offsets partition
        admin_commit(kafka.bootstrap_servers, f"other-{i}", {("orders", 0): 1})
    status = approve(kube, "quiet")
    assert results(status) == {("orders", 0): ("Deleted", "")}
    assert committed(kafka.bootstrap_servers, "quiet") == {}


def test_fresh_facts_that_cannot_be_read_change_nothing_and_are_retried(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """Not allowed to read __consumer_offsets (TOPIC_AUTHORIZATION_FAILED on its ListOffsets, as Kafka answers
    without Describe/Read on the topic): the deletion does not act on facts it could not read. The condition
    names the permission; once the read works, it goes on."""
    make_topics(broker, {"orders": 1})
    admin_commit(broker.bootstrap_servers, "unread", {("orders", 0): 2})
    start_operator()
    kube.create("offsetdeletions", proposed("unread", broker, "unread", {("orders", 0): 2}, "Standalone"))
    kube.wait_for_phase("unread", "AwaitingApproval")
    refused = broker.faults.error("ListOffsets", "TOPIC_AUTHORIZATION_FAILED", times=None, after=1)
    try:
        kube.patch(GROUP_VERSION, "offsetdeletions", "unread", {"spec": {"approved": True, "approvedBy": ADMIN}})
        status = kube.wait_for_reason("unread", "KafkaUnavailable", timeout=60)
        assert "Read on topic __consumer_offsets" in condition(status, "Degraded")["message"]
        assert status["phase"] == "Running" and not status.get("deleteStartTime")
        assert committed(broker.bootstrap_servers, "unread") == {("orders", 0): 2}
        assert refused.hits >= 1
    finally:
        broker.faults.clear()
    status = kube.wait_for_phase("unread", "Succeeded", timeout=60)
    assert results(status) == {("orders", 0): ("Deleted", "")}


def test_restore_skips_a_partition_the_group_committed_after_the_backup_unless_forced(
        kafka: Kafka, tmp_path: Any) -> None:
    """`restore --execute` commits only partitions without an offset; one whose offset the group committed
    AFTER the backup was taken (then deleted again) would be moved back to the older backed-up position:
    skipped, saying so, unless --overwrite-newer (with a WARNING line)."""
    import subprocess
    import sys

    from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
    from kafka_offset_operator.model.backups import Action, BackupRecord, Requester, encode
    from kafka_offset_operator.model.connection import ConnectionSettings
    from kafka_offset_operator.model.offsets import Committed

    make_topics(kafka, {"orders": 2})
    admin_commit(kafka.bootstrap_servers, "moved-on", {("orders", 0): 3, ("orders", 1): 5})
    partition, end = scan_position(kafka.bootstrap_servers, "moved-on")  # as the operator records it
    taken = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        cluster = admin.cluster_id()
    record = BackupRecord("b", Action.DELETE, cluster, kafka.bootstrap_servers, "moved-on",
                          {("orders", 0): Committed(3), ("orders", 1): Committed(5)},
                          Requester("OffsetDeletion", "kafka", "od", "uid", "test"), taken, "2999-01-01T00:00:00Z",
                          extra={"offsetsLog": {"partition": partition, "offset": end}})
    file = tmp_path / "backup.json.gz"
    file.write_bytes(encode(record))
    admin_commit(kafka.bootstrap_servers, "moved-on", {("orders", 0): 7})  # newer than the backup
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        assert admin.delete_offsets("moved-on", [("orders", 0), ("orders", 1)]) == {("orders", 0): None,
                                                                                   ("orders", 1): None}

    def restore(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kafka_offset_operator", "restore", "--file", str(file),
                               "--execute", "--ignore-protection", *extra],  # no cluster here: protect is tested apart
                              capture_output=True, text=True, timeout=120)

    done = restore()
    assert done.returncode == 0, done.stderr
    assert committed(kafka.bootstrap_servers, "moved-on") == {("orders", 1): 5}
    assert "skipped: newer than the backup: committed at" in done.stdout and "1 skipped" in done.stdout, done.stdout
    forced = restore("--overwrite-newer")
    assert forced.returncode == 0, forced.stderr
    assert "WARNING: --overwrite-newer: restoring 1 partitions" in forced.stdout
    assert committed(kafka.bootstrap_servers, "moved-on") == {("orders", 0): 3, ("orders", 1): 5}


def test_a_kip_848_member_subscribed_by_a_regex_not_yet_resolved_keeps_the_topic(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """Already at the scan a KIP-848 member subscribed by regular expression, which Kafka had not resolved
    (no ConsumerGroupRegularExpression record), so the scan saw the topic unsubscribed and Kafka's
    OffsetDelete would delete it (ModernGroup.isSubscribedToTopic knows only resolved expressions). Nothing
    was written since the scan: ConsumerGroupDescribe, asked right before the delete, shows the member."""
    make_topics(broker, {"orders": 1, "payments": 1})
    seed_kip848_group(broker, "regex-reader", {("orders", 0): 4}, {"m1": (["payments"], "ord.*")})
    start_operator()
    kube.create("offsetdeletions", proposed("regex", broker, "regex-reader", {("orders", 0): 4},
                                            "UnsubscribedTopic", group_type="consumer"))
    kube.wait_for_phase("regex", "AwaitingApproval")
    status = approve(kube, "regex")
    why = results(status)[("orders", 0)]
    assert why[0] == "Skipped" and "regular expression 'ord.*', which matches orders" in why[1], why
    assert committed(broker.bootstrap_servers, "regex-reader") == {("orders", 0): 4}


def test_the_describe_apis_of_kip_848_and_streams_groups_over_the_wire(broker: SandboxBroker) -> None:
    """The adapter's ConsumerGroupDescribe / StreamsGroupDescribe (message definitions kafka-python lacks,
    kafka_offsets_model.kafka_messages) against the sandbox broker's answers."""
    from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
    from kafka_offset_operator.model.connection import ConnectionSettings
    from kafka_offset_operator.model.offsets import ModernMember

    make_topics(broker, {"orders": 1})
    seed_kip848_group(broker, "modern-two", {("orders", 0): 1}, {"m1": (["orders"], None), "m2": ([], "pay.*")})
    now = broker.clock.now_ms()
    topology = streams_group_topology("streamer", source_topics=["orders"])
    broker.append_offsets_records([(k, v, now) for k, v in streams_group("streamer", ["s1"], topology)])
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        modern = admin.describe_modern_group("modern-two", "consumer")
        streams = admin.describe_modern_group("streamer", "streams")
        missing = admin.describe_modern_group("modern-two", "streams")  # another kind: GROUP_ID_NOT_FOUND
        classic = admin.describe_group("modern-two")
    assert modern is not None and modern.state == "Stable"
    assert sorted(modern.members, key=lambda m: m.member_id) == [
        ModernMember("m1", "client", "/127.0.0.1", ("orders",), None), ModernMember("m2", "client", "/127.0.0.1", (), "pay.*")]
    assert streams is not None and streams.source_topics == frozenset({"orders"}) and len(streams.members) == 1
    assert missing is not None and not missing.exists
    assert classic.state == "Dead"  # what DescribeGroups says of them


def test_a_lost_answer_of_the_re_check_read_is_retried_and_changes_nothing_meanwhile(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """The connection drops on the re-check's ListOffsets of __consumer_offsets (twice): the deletion waits
    (KafkaUnavailable, nothing sent: one OffsetDelete in all), then deletes as approved."""
    make_topics(broker, {"orders": 1})
    admin_commit(broker.bootstrap_servers, "flaky", {("orders", 0): 2})
    start_operator()
    kube.create("offsetdeletions", proposed("flaky", broker, "flaky", {("orders", 0): 2}, "Standalone"))
    kube.wait_for_phase("flaky", "AwaitingApproval")
    sent = broker.faults.count("OffsetDelete", group="flaky")
    dropped = broker.faults.reset("ListOffsets", times=2, after=1)
    try:
        status = approve(kube, "flaky")
    finally:
        broker.faults.clear()
    assert dropped.hits == 2 and sent.hits == 1, (dropped.describe(), sent.hits)
    assert results(status) == {("orders", 0): ("Deleted", "")}
    assert any(e["reason"] == "KafkaUnavailable" for e in kube.events_for("flaky")), kube.events_for("flaky")
