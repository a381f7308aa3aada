"""OffsetDeletion end to end: the operator under Kopf against kmock's emulated API and the sandbox broker,
with consumer groups made by kafka-python. Every assertion about Kafka is an OffsetFetch over TCP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from operator_harness import GROUP_VERSION, NAMESPACE, Kube, OperatorThread
from operator_kafka import commit, empty_group, live_group, make_topics

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_sandbox import SandboxBroker

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
    reasons = kube.wait_for(lambda: {e["reason"] for e in kube.events_for("old-topics")} >= {"BackedUp", "Succeeded"},
                            what="BackedUp and Succeeded events")
    assert reasons


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


def test_nothing_happens_until_approved(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 1})
    empty_group(broker, "audit", {("orders", 0): 4})
    start_operator()
    kube.create("offsetdeletions", deletion("gated", "audit", [{"name": "orders"}], approved=False,
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    status = kube.wait_for_status("gated", lambda s: s.get("phase") == "AwaitingApproval", what="AwaitingApproval")["status"]
    assert cond(status, "Ready")["reason"] == "AwaitingApproval" and "backup" not in status
    assert committed(broker, "audit") == {("orders", 0): 4}
    # Its timer waits (needs_work is False: unit-tested); Kopf's finalizer stays, so deleting it cancels it.
    kube.wait_for(lambda: kube.deletion("gated")["metadata"].get("finalizers"), what="the cancel finalizer")

    kube.patch(GROUP_VERSION, "offsetdeletions", "gated", {"spec": {"approved": True}})
    status = kube.wait_for_status("gated", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert status["phase"] == "Succeeded"
    assert committed(broker, "audit") == {}


def test_restore_commits_the_backup_back(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 2})
    empty_group(broker, "replay", {("orders", 0): 3, ("orders", 1): 5})
    start_operator()
    kube.create("offsetdeletions", deletion("undo", "replay", [{"name": "orders"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    kube.wait_for_status("undo", lambda s: s.get("phase") == "Succeeded", what="Succeeded")
    assert committed(broker, "replay") == {}

    kube.patch(GROUP_VERSION, "offsetdeletions", "undo", {"spec": {"restore": True}})
    status = kube.wait_for_status("undo", lambda s: s.get("phase") == "Restored", what="Restored")["status"]
    assert committed(broker, "replay") == {("orders", 0): 3, ("orders", 1): 5}
    assert status["restored"] == 2 and status["restoreTime"]
    assert {r["status"] for r in status["restoreResults"]} == {"Restored"}
    assert cond(status, "Ready")["reason"] == "Restored"


def test_restore_waits_while_the_group_has_members(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"old": 1, "new": 1})
    empty_group(broker, "mover", {("old", 0): 2})
    start_operator()
    kube.create("offsetdeletions", deletion("busy", "mover", [{"name": "old"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    kube.wait_for_status("busy", lambda s: s.get("phase") == "Succeeded", what="Succeeded")
    with live_group(broker, "mover", ["new"]):
        kube.patch(GROUP_VERSION, "offsetdeletions", "busy", {"spec": {"restore": True}})
        status = kube.wait_for_status(
            "busy", lambda s: any(c["reason"] == "RestoreBlocked" for c in s.get("conditions", [])), what="RestoreBlocked")
        degraded = cond(status["status"], "Degraded")
        assert degraded["status"] == "True" and "active member" in degraded["message"]
        assert status["status"]["phase"] == "Succeeded" and ("old", 0) not in committed(broker, "mover")
    # The member left (LeaveGroup): the next retry restores.
    status = kube.wait_for_status("busy", lambda s: s.get("phase") == "Restored", what="Restored")["status"]
    assert committed(broker, "mover") == {("old", 0): 2}
    assert cond(status, "Degraded")["status"] == "False"
    kube.wait_for(lambda: any(e["reason"] == "Restored" for e in kube.events_for("busy")), what="the Restored event")
    assert [e["reason"] for e in kube.events_for("busy")].count("RestoreBlocked") == 1


def test_missing_secret_is_a_condition_naming_the_field(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 1})
    empty_group(broker, "secure", {("orders", 0): 1})
    kafka = {"bootstrapServers": broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
             "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-user"}}}
    op = start_operator()
    kube.create("offsetdeletions", deletion("locked", "secure", [{"name": "orders"}], kafka=kafka))
    status = kube.wait_for_status("locked", lambda s: bool(s.get("conditions")), what="a condition")["status"]
    degraded = cond(status, "Degraded")
    assert (status["phase"], degraded["status"], degraded["reason"]) == ("Pending", "True", "SecretNotFound")
    assert degraded["message"].startswith("spec.kafka.sasl.secretRef:") and "kafka-user" in degraded["message"]
    assert committed(broker, "secure") == {("orders", 0): 1}
    assert op.alive  # no crash loop: the operator waits for the Secret
    # Kopf posts events asynchronously: wait for it, then check it was posted once, not once per retry.
    kube.wait_for(lambda: kube.events_for("locked"), what="the SecretNotFound event")
    kube.wait_for_status("locked", lambda s: True)  # a few more retries happen meanwhile (0.3s interval)
    assert [e["reason"] for e in kube.events_for("locked")] == ["SecretNotFound"]


def test_secrets_never_reach_status_events_or_logs(
        broker: SandboxBroker, kube: Kube, start_operator: Start, caplog: Any) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    password = "Tq8-must-stay-secret-7Zx"
    kube.create_secret("kafka-user", {"username": "svc-offsets", "password": password})
    kafka = {"bootstrapServers": broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
             "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "kafka-user"}}}
    start_operator()
    # The operator keeps kafka-python's loggers at INFO; turn DEBUG back on to prove the masking itself.
    caplog.set_level(logging.DEBUG, logger="kafka")
    kube.create("offsetdeletions", deletion("sasl", "any", [{"name": "orders"}], kafka=kafka))
    # The sandbox speaks no SASL: the connection fails, and says so without the credentials.
    status = kube.wait_for_status("sasl", lambda s: any(c["reason"] == "KafkaUnavailable" for c in s.get("conditions", [])),
                                  what="KafkaUnavailable")
    everything = repr(status) + repr(kube.events_for("sasl")) + caplog.text
    assert "sasl_plain_password" in caplog.text  # kafka-python did log its configuration ...
    assert password not in everything  # ... with the password masked


def test_policy_ref_reads_the_policys_connection(broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 1})
    empty_group(broker, "via-policy", {("orders", 0): 1})
    start_operator()
    kube.create("offsetdeletions", deletion("by-ref", "via-policy", [{"name": "orders"}], policy="stale-offsets"))
    status = kube.wait_for_status("by-ref", lambda s: bool(s.get("conditions")), what="a condition")["status"]
    assert cond(status, "Degraded")["reason"] == "PolicyNotFound"
    assert cond(status, "Degraded")["message"].startswith("spec.policyRef.name:")
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": "stale-offsets", "namespace": NAMESPACE},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "mode": "DryRun"}})
    status = kube.wait_for_status("by-ref", lambda s: s.get("phase") == "Succeeded", what="Succeeded")["status"]
    assert cond(status, "Degraded")["status"] == "False"
    assert committed(broker, "via-policy") == {}


def test_large_backup_is_named_in_the_status_and_kept_in_the_backup_store(
        broker: SandboxBroker, kube: Kube, start_operator: Start, operator_options: Any) -> None:
    import dataclasses

    make_topics(broker, {"wide": 12}, records_per_partition=1)
    empty_group(broker, "wide-group", {("wide", p): 1 for p in range(12)})
    start_operator(dataclasses.replace(operator_options, large_backup_partitions=10))
    kube.create("offsetdeletions", deletion("wide", "wide-group", [{"name": "wide"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    status = kube.wait_for_status("wide", lambda s: s.get("phase") == "Succeeded", what="Succeeded")["status"]
    assert "offsets" not in status["backup"] and status["backup"]["partitions"] == 12
    cm = kube.get("v1", "configmaps", status["backup"]["name"])
    assert "ownerReferences" not in cm["metadata"]  # owned by nothing: it outlives the OffsetDeletion
    assert cm["metadata"]["labels"]["kafkaoffsets.dev/backup"] == "true"
    kube.patch(GROUP_VERSION, "offsetdeletions", "wide", {"spec": {"restore": True}})
    kube.wait_for_status("wide", lambda s: s.get("phase") == "Restored", what="Restored")
    assert committed(broker, "wide-group") == {("wide", p): 1 for p in range(12)}


def test_resumed_after_a_crash_between_delete_request_and_results(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    """The state an operator leaves when it dies after sending OffsetDelete and before writing the results:
    backup and deleteStartTime in the status, orders/0 already deleted in Kafka, and since then the group
    committed orders/0 again. The restarted operator must not delete that new commit."""
    make_topics(broker, {"orders": 2})
    empty_group(broker, "crashy", {("orders", 0): 3, ("orders", 1): 4})
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers)) as admin:
        backup = admin.committed_offsets("crashy")
        assert admin.delete_offsets("crashy", [("orders", 0)]) == {("orders", 0): None}  # the lost request
    empty_group(broker, "crashy", {("orders", 0): 9})  # the group moved on after the deletion
    kube.create("offsetdeletions", deletion("resumed", "crashy", [{"name": "orders"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    entries = [{"topic": t, "partition": p, "offset": c.offset, "leaderEpoch": c.leader_epoch, "metadata": c.metadata}
               for (t, p), c in sorted(backup.items())]
    kube.patch(GROUP_VERSION, "offsetdeletions", "resumed", {"status": {
        "phase": "Running", "startTime": "2026-01-01T00:00:00Z", "deleteStartTime": "2026-01-01T00:00:01Z",
        "backup": {"takenAt": "2026-01-01T00:00:00Z", "partitions": 2, "offsets": entries}, "results": []}},
        subresource="status")

    start_operator()
    status = kube.wait_for_status("resumed", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert committed(broker, "crashy") == {("orders", 0): 9}  # new commit kept, orders/1 deleted
    by_partition = {r["partition"]: r for r in status["results"]}
    assert by_partition[0]["status"] == "Skipped" and "committed since the backup" in by_partition[0]["message"]
    assert by_partition[1]["status"] == "Deleted"
    assert status["phase"] == "Succeeded" and status["deleteStartTime"] == "2026-01-01T00:00:01Z"


def test_operator_restarted_mid_restore_finishes_without_overwriting_new_commits(
        broker: SandboxBroker, kube: Kube, start_operator: Start) -> None:
    make_topics(broker, {"orders": 2, "other": 1})
    empty_group(broker, "restart", {("orders", 0): 3, ("orders", 1): 4})
    first = start_operator()
    kube.create("offsetdeletions", deletion("twice", "restart", [{"name": "orders"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    done = kube.wait_for_status("twice", lambda s: s.get("phase") == "Succeeded", what="Succeeded")["status"]
    with live_group(broker, "restart", ["other"]) as consumer:
        kube.patch(GROUP_VERSION, "offsetdeletions", "twice", {"spec": {"restore": True}})
        kube.wait_for_status("twice", lambda s: any(c["reason"] == "RestoreBlocked" for c in s.get("conditions", [])),
                             what="RestoreBlocked")
        first.stop()  # the operator goes away mid-run
        commit(consumer, {("orders", 1): 7})  # meanwhile the group commits orders/1 itself
    start_operator()  # a new operator process
    status = kube.wait_for_status("twice", lambda s: s.get("phase") == "Restored", what="Restored")["status"]
    assert committed(broker, "restart") == {("orders", 0): 3, ("orders", 1): 7}
    assert {(r["partition"], r["status"]) for r in status["restoreResults"]} == {(0, "Restored"), (1, "Skipped")}
    # The deletion itself did not run again.
    assert (status["results"], status["deleteStartTime"]) == (done["results"], done["deleteStartTime"])
