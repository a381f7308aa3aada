"""OffsetDeletion end to end: the operator under Kopf on the real kube-apiserver (the install applied once per
module, the operator on the installed ServiceAccount's token, a fresh namespace per test: installed_api.py)
and Apache Kafka (the `kafka` fixture: the session's real broker, or the sandbox with
KOO_KAFKA_VERSIONS=sandbox), with consumer groups made by kafka-python. Every assertion about Kafka is an
OffsetFetch over TCP; every approval passes the install's admission policy (approvedBy: the admin).

A deletion that walks through several phases (awaiting approval, deleted, restored) is brought to the phase
a test starts from by a fixture, so each test proves what happens in one phase."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from brokers import make_topics
from installed_api import ADMIN
from kafka_clients import committed, empty_group, member
from kafka_under_test import Kafka
from operator_harness import FINAL, GROUP_VERSION, Kube, OperatorThread, condition
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.model.connection import ConnectionSettings

pytestmark = pytest.mark.real_api

Start = Callable[..., OperatorThread]


def deletion(name: str, group: str, topics: list[dict[str, Any]], *, kafka: dict[str, Any] | None = None,
             policy: str | None = None, approved: bool = True, restore: bool = False) -> dict[str, Any]:
    """In the client's namespace (Kube.create's default); an approval names its approver, as the install's
    admission policy asks (the admin approves)."""
    spec: dict[str, Any] = {"group": group, "topics": topics, "approved": approved, "restore": restore}
    if approved:
        spec["approvedBy"] = ADMIN
    if policy:
        spec["policyRef"] = {"name": policy}
    else:
        spec["kafka"] = kafka
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": spec}


def plain(kafka: Kafka) -> dict[str, Any]:
    return {"bootstrapServers": kafka.bootstrap_servers}


def patch_spec(kube: Kube, name: str, spec: dict[str, Any]) -> None:
    kube.patch(GROUP_VERSION, "offsetdeletions", name, {"spec": spec})


# -- one visit


def test_deletes_offsets_of_an_empty_group_after_backing_them_up(kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders-v1": 2, "payments": 3})
    empty_group(kafka.bootstrap_servers, "reporting",
                {("orders-v1", 0): 3, ("orders-v1", 1): 4, ("payments", 0): 5, ("payments", 2): 1})
    start_operator()
    kube.create("offsetdeletions", deletion("old-topics", "reporting", [
        {"name": "orders-v1"}, {"name": "payments", "partitions": [0, 1]}], kafka=plain(kafka)))

    status = kube.wait_for_phase("old-topics", *FINAL)
    assert status["phase"] == "Succeeded", status
    assert (status["deleted"], status["failed"]) == (3, 0)
    by_tp = {(r["topic"], r.get("partition")): r for r in status["results"]}
    assert {tp for tp, r in by_tp.items() if r["status"] == "Deleted"} == {("orders-v1", 0), ("orders-v1", 1), ("payments", 0)}
    assert by_tp[("payments", 1)]["status"] == "NotCommitted"
    assert {(b["topic"], b["partition"], b["offset"]) for b in status["backup"]["offsets"]} == {
        ("orders-v1", 0, 3), ("orders-v1", 1, 4), ("payments", 0, 5)}
    assert condition(status, "Ready")["status"] == "True"
    # OffsetFetch: only the partition not asked for is left.
    assert committed(kafka.bootstrap_servers, "reporting") == {("payments", 2): 1}
    reasons = wait_until(lambda: {e["reason"] for e in kube.events_for("old-topics")} >= {"BackedUp", "Succeeded"},
                         what="BackedUp and Succeeded events")
    assert reasons


def test_subscribed_topic_of_a_live_group_is_refused_and_nothing_is_deleted(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 2})
    with member(kafka.bootstrap_servers, "shipping", ["orders"]) as consumer:
        consumer.commit({("orders", 0): 2, ("orders", 1): 3})
        start_operator()
        kube.create("offsetdeletions", deletion("live", "shipping", [{"name": "orders"}], kafka=plain(kafka)))
        status = kube.wait_for_phase("live", *FINAL)
        assert status["phase"] == "Failed", status
        assert {(r["partition"], r["status"], r["error"]) for r in status["results"]} == {
            (0, "Failed", "GROUP_SUBSCRIBED_TO_TOPIC"), (1, "Failed", "GROUP_SUBSCRIBED_TO_TOPIC")}
        assert condition(status, "Degraded")["status"] == "True"
        assert committed(kafka.bootstrap_servers, "shipping") == {("orders", 0): 2, ("orders", 1): 3}


def test_unknown_group_fails_with_group_id_not_found(kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 1})
    start_operator()
    kube.create("offsetdeletions", deletion("ghost", "no-such-group", [{"name": "orders"}], kafka=plain(kafka)))
    status = kube.wait_for_phase("ghost", *FINAL)
    assert status["phase"] == "Failed"
    assert [(r["topic"], r["error"]) for r in status["results"]] == [("orders", "GROUP_ID_NOT_FOUND")]
    assert "does not exist" in condition(status, "Ready")["message"]


def test_missing_secret_is_a_condition_naming_the_field(kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "secure", {("orders", 0): 1})
    connection = {**plain(kafka), "securityProtocol": "SASL_PLAINTEXT",
                  "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-user"}}}
    op = start_operator()
    kube.create("offsetdeletions", deletion("locked", "secure", [{"name": "orders"}], kafka=connection))
    status = kube.wait_for_status("locked", lambda s: bool(s.get("conditions")), what="a condition")["status"]
    degraded = condition(status, "Degraded")
    assert (status["phase"], degraded["status"], degraded["reason"]) == ("Pending", "True", "SecretNotFound")
    assert degraded["message"].startswith("spec.kafka.sasl.secretRef:") and "kafka-user" in degraded["message"]
    assert committed(kafka.bootstrap_servers, "secure") == {("orders", 0): 1}
    assert op.alive  # no crash loop: the operator waits for the Secret
    # Kopf posts events asynchronously: wait for it, then check it was posted once, not once per retry.
    wait_until(lambda: kube.events_for("locked"), what="the SecretNotFound event")
    kube.wait_for_status("locked", lambda s: True)  # a few more retries happen meanwhile (0.3s interval)
    assert [e["reason"] for e in kube.events_for("locked")] == ["SecretNotFound"]


def test_secrets_never_reach_status_events_or_logs(
        kafka: Kafka, kube: Kube, start_operator: Start, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    password = "Tq8-must-stay-secret-7Zx"
    kube.create_secret("kafka-user", {"username": "svc-offsets", "password": password})
    connection = {**plain(kafka), "securityProtocol": "SASL_PLAINTEXT",
                  "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "kafka-user"}}}
    start_operator()
    # The operator keeps kafka-python's loggers at INFO; turn DEBUG back on to prove the masking itself.
    caplog.set_level(logging.DEBUG, logger="kafka")
    kube.create("offsetdeletions", deletion("sasl", "any", [{"name": "orders"}], kafka=connection))
    # The plaintext listener speaks no SASL: the connection fails, and says so without the credentials.
    status = kube.wait_for_reason("sasl", "KafkaUnavailable")
    everything = repr(status) + repr(kube.events_for("sasl")) + caplog.text
    assert "sasl_plain_password" in caplog.text  # kafka-python did log its configuration ...
    assert password not in everything  # ... with the password masked


def test_resumed_after_a_crash_between_delete_request_and_results(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """The state an operator leaves when it dies after sending OffsetDelete and before writing the results:
    backup and deleteStartTime in the status, orders/0 already deleted in Kafka, and since then the group
    committed orders/0 again. The restarted operator must not delete that new commit."""
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "crashy", {("orders", 0): 3, ("orders", 1): 4})
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        backup = admin.committed_offsets("crashy")
        # When it was read: a backup without status.backup.offsetsLog (an older operator's) is re-checked for
        # commits since its takenAt, so it must not claim a time before the commits it holds.
        taken_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
        assert admin.delete_offsets("crashy", [("orders", 0)]) == {("orders", 0): None}  # the lost request
    empty_group(kafka.bootstrap_servers, "crashy", {("orders", 0): 9})  # the group moved on after the deletion
    kube.create("offsetdeletions", deletion("resumed", "crashy", [{"name": "orders"}], kafka=plain(kafka)))
    entries = [{"topic": t, "partition": p, "offset": c.offset, "leaderEpoch": c.leader_epoch, "metadata": c.metadata}
               for (t, p), c in sorted(backup.items())]
    kube.patch(GROUP_VERSION, "offsetdeletions", "resumed", {"status": {
        "phase": "Running", "startTime": "2026-01-01T00:00:00Z", "deleteStartTime": "2026-01-01T00:00:01Z",
        "backup": {"takenAt": taken_at, "partitions": 2, "offsets": entries}, "results": []}},
        subresource="status")

    start_operator()
    status = kube.wait_for_phase("resumed", *FINAL)
    assert committed(kafka.bootstrap_servers, "crashy") == {("orders", 0): 9}  # new commit kept, orders/1 deleted
    by_partition = {r["partition"]: r for r in status["results"]}
    assert by_partition[0]["status"] == "Skipped" and "committed since the backup" in by_partition[0]["message"]
    assert by_partition[1]["status"] == "Deleted"
    assert status["phase"] == "Succeeded" and status["deleteStartTime"] == "2026-01-01T00:00:01Z"


# -- approval


@pytest.fixture
def awaiting_approval(kafka: Kafka, kube: Kube, start_operator: Start) -> dict[str, Any]:
    """Deletion "gated" of group "audit" (orders/0 at 4), not approved: its status once AwaitingApproval."""
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "audit", {("orders", 0): 4})
    start_operator()
    kube.create("offsetdeletions", deletion("gated", "audit", [{"name": "orders"}], approved=False,
                                            kafka=plain(kafka)))
    return kube.wait_for_phase("gated", "AwaitingApproval")


def test_an_unapproved_deletion_waits_without_a_backup_or_a_deletion_and_can_be_cancelled(
        awaiting_approval: dict[str, Any], kafka: Kafka, kube: Kube) -> None:
    status = awaiting_approval
    assert condition(status, "Ready")["reason"] == "AwaitingApproval" and "backup" not in status
    assert committed(kafka.bootstrap_servers, "audit") == {("orders", 0): 4}
    # Its timer waits (needs_work is False: unit-tested); Kopf's finalizer stays, so deleting it cancels it.
    wait_until(lambda: kube.deletion("gated")["metadata"].get("finalizers"), what="the cancel finalizer")


def test_approving_a_waiting_deletion_deletes_the_offsets(
        awaiting_approval: dict[str, Any], kafka: Kafka, kube: Kube) -> None:
    patch_spec(kube, "gated", {"approved": True, "approvedBy": ADMIN})
    status = kube.wait_for_phase("gated", *FINAL)
    assert status["phase"] == "Succeeded"
    assert committed(kafka.bootstrap_servers, "audit") == {}


# -- policyRef


@pytest.fixture
def waiting_for_its_policy(kafka: Kafka, kube: Kube, start_operator: Start) -> dict[str, Any]:
    """Deletion "by-ref" of group "via-policy" naming policy "stale-offsets", which does not exist yet: its
    status once it has a condition."""
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "via-policy", {("orders", 0): 1})
    start_operator()
    kube.create("offsetdeletions", deletion("by-ref", "via-policy", [{"name": "orders"}], policy="stale-offsets"))
    return kube.wait_for_status("by-ref", lambda s: bool(s.get("conditions")), what="a condition")["status"]


def test_a_missing_policy_is_a_condition_naming_the_field(waiting_for_its_policy: dict[str, Any]) -> None:
    degraded = condition(waiting_for_its_policy, "Degraded")
    assert degraded["reason"] == "PolicyNotFound"
    assert degraded["message"].startswith("spec.policyRef.name:")


def test_policy_ref_reads_the_policys_connection_once_it_exists(
        waiting_for_its_policy: dict[str, Any], kafka: Kafka, kube: Kube) -> None:
    kube.create("consumergroupoffsetpolicies", {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": "stale-offsets"},
        "spec": {"kafka": plain(kafka), "mode": "DryRun"}})
    status = kube.wait_for_phase("by-ref", "Succeeded")
    assert condition(status, "Degraded")["status"] == "False"
    assert committed(kafka.bootstrap_servers, "via-policy") == {}


# -- restore


@pytest.fixture
def deleted(kafka: Kafka, kube: Kube, start_operator: Start) -> str:
    """Deletion "undo" of group "replay" (orders/0 at 3, orders/1 at 5), Succeeded: returns its name."""
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "replay", {("orders", 0): 3, ("orders", 1): 5})
    start_operator()
    kube.create("offsetdeletions", deletion("undo", "replay", [{"name": "orders"}], kafka=plain(kafka)))
    kube.wait_for_phase("undo", "Succeeded")
    return "undo"


def test_restore_commits_the_backup_back(deleted: str, kafka: Kafka, kube: Kube) -> None:
    assert committed(kafka.bootstrap_servers, "replay") == {}  # what the deletion left
    patch_spec(kube, deleted, {"restore": True})
    status = kube.wait_for_phase(deleted, "Restored")
    assert committed(kafka.bootstrap_servers, "replay") == {("orders", 0): 3, ("orders", 1): 5}
    assert status["restored"] == 2 and status["restoreTime"]
    assert {r["status"] for r in status["restoreResults"]} == {"Restored"}
    assert condition(status, "Ready")["reason"] == "Restored"


@dataclasses.dataclass
class BlockedRestore:
    status: dict[str, Any]  # the whole OffsetDeletion "busy" once RestoreBlocked
    leave: Callable[[], None]  # the group's member leaves


@pytest.fixture
def blocked_restore(kafka: Kafka, kube: Kube, start_operator: Start) -> Iterator[BlockedRestore]:
    """Deletion "busy" of group "mover" (old/0 at 2), Succeeded, asked to restore while a member of the group
    (subscribed to topic "new") is live: the restore is blocked until the member leaves."""
    make_topics(kafka, {"old": 1, "new": 1})
    empty_group(kafka.bootstrap_servers, "mover", {("old", 0): 2})
    start_operator()
    kube.create("offsetdeletions", deletion("busy", "mover", [{"name": "old"}], kafka=plain(kafka)))
    kube.wait_for_phase("busy", "Succeeded")
    with ExitStack() as live:
        live.enter_context(member(kafka.bootstrap_servers, "mover", ["new"]))
        patch_spec(kube, "busy", {"restore": True})
        status = kube.wait_for_status(
            "busy", lambda s: any(c["reason"] == "RestoreBlocked" for c in s.get("conditions", [])), what="RestoreBlocked")
        yield BlockedRestore(status, live.close)


def test_a_restore_is_blocked_while_the_group_has_members(blocked_restore: BlockedRestore, kafka: Kafka) -> None:
    status = blocked_restore.status["status"]
    degraded = condition(status, "Degraded")
    assert degraded["status"] == "True" and "active member" in degraded["message"]
    assert status["phase"] == "Succeeded" and ("old", 0) not in committed(kafka.bootstrap_servers, "mover")


def test_a_blocked_restore_finishes_once_the_members_left(
        blocked_restore: BlockedRestore, kafka: Kafka, kube: Kube) -> None:
    blocked_restore.leave()  # LeaveGroup: the next retry restores
    status = kube.wait_for_phase("busy", "Restored")
    assert committed(kafka.bootstrap_servers, "mover") == {("old", 0): 2}
    assert condition(status, "Degraded")["status"] == "False"
    wait_until(lambda: any(e["reason"] == "Restored" for e in kube.events_for("busy")), what="the Restored event")
    assert [e["reason"] for e in kube.events_for("busy")].count("RestoreBlocked") == 1


@pytest.fixture
def configmap_backup(kafka: Kafka, kube: Kube, start_operator: Start,
                     operator_options: OperatorOptions) -> dict[str, Any]:
    """Deletion "wide" of 12 partitions of group "wide-group" (each at 1) by an operator that copies backups
    of at most 10 partitions into the status: its status once Succeeded."""
    make_topics(kafka, {"wide": 12}, records_per_partition=1)
    empty_group(kafka.bootstrap_servers, "wide-group", {("wide", p): 1 for p in range(12)})
    start_operator(dataclasses.replace(operator_options, large_backup_partitions=10))
    kube.create("offsetdeletions", deletion("wide", "wide-group", [{"name": "wide"}], kafka=plain(kafka)))
    return kube.wait_for_phase("wide", "Succeeded")


def test_a_large_backup_is_named_in_the_status_and_kept_unowned_in_the_backup_store(
        configmap_backup: dict[str, Any], kube: Kube) -> None:
    status = configmap_backup
    assert "offsets" not in status["backup"] and status["backup"]["partitions"] == 12
    cm = kube.get("v1", "configmaps", status["backup"]["name"])
    assert "ownerReferences" not in cm["metadata"]  # owned by nothing: it outlives the OffsetDeletion
    assert cm["metadata"]["labels"]["kafkaoffsets.dev/backup"] == "true"


def test_a_large_backup_is_restored_from_the_store(configmap_backup: dict[str, Any], kafka: Kafka, kube: Kube) -> None:
    patch_spec(kube, "wide", {"restore": True})
    kube.wait_for_phase("wide", "Restored")
    assert committed(kafka.bootstrap_servers, "wide-group") == {("wide", p): 1 for p in range(12)}


@pytest.mark.slow  # an operator restart: Kopf gives the stopping one 2 s
def test_operator_restarted_mid_restore_finishes_without_overwriting_new_commits(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(kafka, {"orders": 2, "other": 1})
    empty_group(kafka.bootstrap_servers, "restart", {("orders", 0): 3, ("orders", 1): 4})
    first = start_operator()
    kube.create("offsetdeletions", deletion("twice", "restart", [{"name": "orders"}], kafka=plain(kafka)))
    done = kube.wait_for_phase("twice", "Succeeded")
    with member(kafka.bootstrap_servers, "restart", ["other"]) as consumer:
        patch_spec(kube, "twice", {"restore": True})
        kube.wait_for_reason("twice", "RestoreBlocked")
        first.stop()  # the operator goes away mid-run
        consumer.commit({("orders", 1): 7})  # meanwhile the group commits orders/1 itself
    start_operator()  # a new operator process
    status = kube.wait_for_phase("twice", "Restored")
    assert committed(kafka.bootstrap_servers, "restart") == {("orders", 0): 3, ("orders", 1): 7}
    assert {(r["partition"], r["status"]) for r in status["restoreResults"]} == {(0, "Restored"), (1, "Skipped")}
    # The deletion itself did not run again.
    assert (status["results"], status["deleteStartTime"]) == (done["results"], done["deleteStartTime"])
