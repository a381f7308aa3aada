"""OffsetDeletion end to end: the operator under Kopf against kmock's emulated API and the sandbox broker,
with consumer groups made by kafka-python. Every assertion about Kafka is an OffsetFetch over TCP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from operator_harness import GROUP_VERSION, NAMESPACE, Kube, OperatorThread
from operator_kafka import commit, empty_group, live_group, make_topics

from kafka_offset_operator.kafka_admin import ConnectionSettings, KafkaAdmin
from kafka_offset_operator.sandbox import SandboxBroker

Start = Callable[..., OperatorThread]
FINAL = ("Succeeded", "PartiallyFailed", "Failed")


def deletion(name: str, group: str, topics: list[dict[str, Any]], *, kafka: dict[str, Any] | None = None,
             policy: str | None = None, approved: bool = True, restore: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": group, "topics": topics, "approved": approved, "restore": restore}
    if policy:
        spec["policyRef"] = {"name": policy}
    else:
        spec["kafka"] = kafka
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def committed(broker: SandboxBroker, group: str) -> dict[tuple[str, int], int]:
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        return {tp: c.offset for tp, c in admin.committed_offsets(group).items()}


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == type_)


def test_deletes_offsets_of_an_empty_group_after_backing_them_up(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders-v1": 2, "payments": 3})
    empty_group(broker, "reporting", {("orders-v1", 0): 3, ("orders-v1", 1): 4, ("payments", 0): 5, ("payments", 2): 1})
    start_operator()
    kube.create("offsetdeletions", deletion("old-topics", "reporting", [
        {"name": "orders-v1"}, {"name": "payments", "partitions": [0, 1]}], kafka={"bootstrapServers": broker.bootstrap_servers}))

    obj = kube.wait_for_status("old-topics", lambda s: s.get("phase") in FINAL, what="a final phase")
    status = obj["status"]
    assert status["phase"] == "Succeeded", status
    assert (status["deleted"], status["failed"]) == (3, 0)
    by_tp = {(r["topic"], r.get("partition")): r for r in status["results"]}
    assert {tp for tp, r in by_tp.items() if r["status"] == "Deleted"} == {("orders-v1", 0), ("orders-v1", 1), ("payments", 0)}
    assert by_tp[("payments", 1)]["status"] == "NotCommitted"
    assert {(b["topic"], b["partition"], b["offset"]) for b in status["backup"]["offsets"]} == {
        ("orders-v1", 0, 3), ("orders-v1", 1, 4), ("payments", 0, 5)}
    assert cond(status, "Ready")["status"] == "True"
    # OffsetFetch: only the partition not asked for is left.
    assert committed(broker, "reporting") == {("payments", 2): 1}
    reasons = [e["reason"] for e in kube.events_for("old-topics")]
    assert "BackedUp" in reasons and "Succeeded" in reasons


def test_subscribed_topic_of_a_live_group_is_refused_and_nothing_is_deleted(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 2})
    with live_group(broker, "shipping", ["orders"]) as consumer:
        commit(consumer, {("orders", 0): 2, ("orders", 1): 3})
        start_operator()
        kube.create("offsetdeletions", deletion("live", "shipping", [{"name": "orders"}],
                                                kafka={"bootstrapServers": broker.bootstrap_servers}))
        status = kube.wait_for_status("live", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
        assert status["phase"] == "Failed", status
        assert {(r["partition"], r["status"], r["error"]) for r in status["results"]} == {
            (0, "Failed", "GROUP_SUBSCRIBED_TO_TOPIC"), (1, "Failed", "GROUP_SUBSCRIBED_TO_TOPIC")}
        assert cond(status, "Degraded")["status"] == "True"
        assert committed(broker, "shipping") == {("orders", 0): 2, ("orders", 1): 3}


def test_unknown_group_fails_with_group_id_not_found(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 1})
    start_operator()
    kube.create("offsetdeletions", deletion("ghost", "no-such-group", [{"name": "orders"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    status = kube.wait_for_status("ghost", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert status["phase"] == "Failed"
    assert [(r["topic"], r["error"]) for r in status["results"]] == [("orders", "GROUP_ID_NOT_FOUND")]
    assert "does not exist" in cond(status, "Ready")["message"]
