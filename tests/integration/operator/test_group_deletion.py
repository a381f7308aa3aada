"""OffsetDeletion with spec.deleteGroup end to end: the operator under Kopf on the real kube-apiserver (the
install applied, the operator on the installed ServiceAccount's token, a fresh namespace per test:
installed_api.py) and Apache Kafka (the `kafka` fixture); the sandbox broker for the three tests that need
its faults (a held or dropped DeleteGroups) or its log (offsets of a topic that no longer exists, appended
as records). The backup comes first and holds every offset of the group; DeleteGroups is sent only
after the live re-check; a group that gained members is never deleted (by the re-check, or by Kafka's own
NON_EMPTY_GROUP when a member joins between the re-check and the request); restore recreates the group's
offsets as a simple group. Every assertion about Kafka is an OffsetFetch or DescribeGroups over TCP."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from brokers import make_topics
from installed_api import ADMIN
from kafka_clients import committed, empty_group, member
from kafka_under_test import Kafka
from operator_harness import FINAL, GROUP_VERSION, Kube, KubeApiError, OperatorThread, condition

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offsets_model.codec import offset_commit
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.real_api

Start = Callable[..., OperatorThread]


def group_deletion(name: str, group: str, topics: list[str], broker: SandboxBroker | Kafka, **spec: Any) -> dict[str, Any]:
    """Approved by the admin (the install's admission policy checks approvedBy), in the client's namespace."""
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": group,
                     "topics": [{"name": t} for t in topics], "deleteGroup": True, "approved": True,
                     "approvedBy": ADMIN, **spec}}


def describe(broker: SandboxBroker | Kafka, group: str) -> Any:
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        return admin.describe_group(group)


def test_a_whole_empty_group_is_backed_up_deleted_and_restored_as_a_simple_group(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 2, "payments": 1})
    empty_group(kafka.bootstrap_servers, "old-batch", {("orders", 0): 3, ("orders", 1): 4, ("payments", 0): 2})
    start_operator()
    kube.create("offsetdeletions", group_deletion("drop-old-batch", "old-batch", ["orders", "payments"], kafka))

    status = kube.wait_for_phase("drop-old-batch", *FINAL)
    assert status["phase"] == "Succeeded", status
    assert status["groupResult"]["status"] == "Deleted"
    assert (status["deleted"], status["failed"]) == (3, 0)
    assert {(b["topic"], b["partition"], b["offset"]) for b in status["backup"]["offsets"]} == {
        ("orders", 0, 3), ("orders", 1, 4), ("payments", 0, 2)}
    assert status["deleteStartTime"] and condition(status, "Ready")["status"] == "True"
    assert committed(kafka.bootstrap_servers, "old-batch") == {}
    assert not describe(kafka, "old-batch").exists  # the group itself is gone, not just its offsets

    kube.patch(GROUP_VERSION, "offsetdeletions", "drop-old-batch", {"spec": {"restore": True}})
    restored = kube.wait_for_phase("drop-old-batch", "Restored")
    assert restored["restored"] == 3
    assert committed(kafka.bootstrap_servers, "old-batch") == {("orders", 0): 3, ("orders", 1): 4, ("payments", 0): 2}
    again = describe(kafka, "old-batch")
    assert (again.state, again.protocol_type) == ("Empty", "")  # a simple group until its consumers return


def test_a_group_with_members_is_not_deleted_and_nothing_changes(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 1})
    with member(kafka.bootstrap_servers, "busy", ["orders"]) as consumer:
        consumer.commit({("orders", 0): 3})
        start_operator()
        kube.create("offsetdeletions", group_deletion("drop-busy", "busy", ["orders"], kafka))
        status = kube.wait_for_phase("drop-busy", *FINAL)
        assert status["phase"] == "Failed" and status["deleted"] == 0
        assert status["groupResult"]["status"] == "Skipped" and "member" in status["groupResult"]["message"]
        assert condition(status, "Degraded")["reason"] == "GroupChanged"
        assert "backup" not in status and "deleteStartTime" not in status  # nothing sent, nothing to restore
        assert committed(kafka.bootstrap_servers, "busy") == {("orders", 0): 3}


def test_a_member_joining_after_the_recheck_makes_kafka_refuse_and_the_result_says_so(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """The race the re-check cannot close: Kafka's DeleteGroups answers NON_EMPTY_GROUP
    (ClassicGroup.validateDeleteGroup), the result carries that name, and the offsets stay."""
    make_topics(broker, {"orders": 1})
    empty_group(broker.bootstrap_servers, "racy", {("orders", 0): 3})
    held = broker.faults.hold("DeleteGroups")
    start_operator()
    kube.create("offsetdeletions", group_deletion("drop-racy", "racy", ["orders"], broker))
    held.wait()
    with member(broker.bootstrap_servers, "racy", ["orders"]):
        held.release()
        status = kube.wait_for_phase("drop-racy", *FINAL)
    assert status["phase"] == "Failed", status
    assert status["groupResult"] == {"status": "Failed", "error": "NON_EMPTY_GROUP",
                                     "message": status["groupResult"]["message"]}
    assert {r["error"] for r in status["results"]} == {"NON_EMPTY_GROUP"}
    assert status["backup"]["partitions"] == 1  # the backup came first
    assert committed(broker.bootstrap_servers, "racy") == {("orders", 0): 3}


def test_offsets_of_a_deleted_topic_go_with_their_group_where_offset_delete_fails(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    now = int(time.time() * 1000)
    broker.append_offsets_records([(*offset_commit(g, "gone", 0, offset=9, commit_timestamp=now), now)
                                   for g in ("legacy-a", "legacy-b")])
    start_operator()
    plain = group_deletion("offsets-only", "legacy-a", ["gone"], broker)
    del plain["spec"]["deleteGroup"]
    kube.create("offsetdeletions", plain)
    kube.create("offsetdeletions", group_deletion("whole", "legacy-b", ["gone"], broker, requireTopicsDeleted=True))

    refused = kube.wait_for_phase("offsets-only", *FINAL)
    assert refused["phase"] == "Failed"
    assert [(r["partition"], r["error"]) for r in refused["results"]] == [(0, "UNKNOWN_TOPIC_OR_PARTITION")]
    assert committed(broker.bootstrap_servers, "legacy-a") == {("gone", 0): 9}

    deleted = kube.wait_for_phase("whole", *FINAL)
    assert deleted["phase"] == "Succeeded" and deleted["groupResult"]["status"] == "Deleted"
    assert committed(broker.bootstrap_servers, "legacy-b") == {}


def test_require_topics_deleted_keeps_a_group_whose_topic_exists(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "reader", {("orders", 0): 2})
    start_operator()
    kube.create("offsetdeletions", group_deletion("not-gone", "reader", ["orders"], kafka, requireTopicsDeleted=True))
    status = kube.wait_for_phase("not-gone", *FINAL)
    assert status["phase"] == "Failed" and condition(status, "Ready")["reason"] == "GroupChanged"
    assert "orders" in status["groupResult"]["message"]
    assert committed(kafka.bootstrap_servers, "reader") == {("orders", 0): 2}


def test_the_api_refuses_require_topics_deleted_without_delete_group(broker: SandboxBroker, kube: Kube) -> None:
    """The CRD's CEL rule, evaluated by the real API server (the operator checks it too:
    decisions/deletion_spec.py)."""
    obj = group_deletion("confused", "g", ["orders"], broker, requireTopicsDeleted=True)
    obj["spec"]["deleteGroup"] = False
    with pytest.raises(KubeApiError) as refused:
        kube.create("offsetdeletions", obj)
    assert refused.value.status == 422 and "requireTopicsDeleted" in str(refused.value)


def test_a_delete_groups_whose_answer_is_lost_is_confirmed_not_sent_again(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """Kafka deleted the group but the connection dropped before the answer: the Event says the request was
    sent and its answer lost; the retry finds the group gone after deleteStartTime and counts it Deleted."""
    make_topics(broker, {"orders": 1})
    empty_group(broker.bootstrap_servers, "lost", {("orders", 0): 3})
    sent = broker.faults.count("DeleteGroups")
    held = broker.faults.hold("DeleteGroups")
    start_operator()
    kube.create("offsetdeletions", group_deletion("drop-lost", "lost", ["orders"], broker))
    held.wait().drop(applied=True)
    status = kube.wait_for_phase("drop-lost", *FINAL)
    assert status["phase"] == "Succeeded" and status["groupResult"]["status"] == "Deleted", status
    assert sent.hits == 1  # no second DeleteGroups
    assert committed(broker.bootstrap_servers, "lost") == {}
    messages = [e.get("message", "") for e in kube.events_for("drop-lost")]
    assert any("DeleteGroups of 1 offsets was sent but its answer was lost" in m for m in messages), messages
