"""The safety promises of an OffsetDeletion (docs/safety.md), each against the operator under Kopf and
Apache Kafka (the session's broker, emptied after each test; the sandbox with KOO_KAFKA_VERSIONS=sandbox), on
the real kube-apiserver with its real garbage collector (kube-controller-manager): the
install applied once per module, the operator on the installed ServiceAccount's token (installed_api.py), a
fresh namespace per test. The backup store outlives the resource (the real garbage collector has run when the
backup is read), restore goes where the offsets came from, deleting cancels what was not sent, `protect`
wins, and conditions (through the real status subresource) tell the truth.

One test stays on the emulator: a spec edited after the deletion (test_restore_goes_into_the_group_acted_on_
not_the_one_the_spec_names_now). The real API server refuses that edit with its CRD's transition rule (the
422 is asserted in test_api_validation.py); the operator's own defence behind it ("an older CRD would let it
in") needs the edit stored anyway, which on the real API server means replacing the session's CRD with an
older one, a cluster-wide change every other test on that API server would meet while it lasts."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from installed_api import ADMIN
from kafka_clients import committed, empty_group, member
from kafka_under_test import Kafka
from operator_harness import (
    FINAL,
    GROUP_VERSION,
    EmulatedCluster,
    Kube,
    Operators,
    OperatorThread,
    condition,
    fast_options,
)
from test_offset_deletion import deletion as deletion_body
from waiting import wait_until

from kafka_offset_operator.model.backups import Action, decode

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf per test, with end-to-end waits: the full suite runs them


Start = Callable[..., OperatorThread]


def deletion(kube: Kube, name: str, group: str, topics: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """test_offset_deletion's OffsetDeletion in the client's namespace; an approval names its approver, as
    the install's admission policy asks (the admin approves)."""
    body = deletion_body(name, group, topics, **kwargs)
    body["metadata"]["namespace"] = kube.namespace
    if body["spec"]["approved"]:
        body["spec"]["approvedBy"] = ADMIN
    return body


def backups(kube: Kube) -> dict[str, Any]:
    """The backup store as kubectl shows it: ConfigMaps labelled kafkaoffsets.dev/backup=true, decoded."""
    out = {}
    for cm in kube.list("v1", "configmaps"):
        if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/backup") == "true":
            out[cm["metadata"]["name"]] = decode(base64.b64decode(cm["binaryData"]["backup.json.gz"]))
    return out


def policy(kube: Kube, kafka: Kafka, name: str, protect: list[str]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": kube.namespace},
            "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, "mode": "DryRun",
                     "schedule": {"interval": "24h"}, "protect": {"groups": protect}}}


def test_the_backup_is_stored_unowned_with_the_cluster_and_outlives_the_deletion(
        kafka: Kafka, kube: Kube, start_operator: Start, caplog: Any) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="kafka_offset_operator.audit")
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "replay", {("orders", 0): 3, ("orders", 1): 5})
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "od", "replay", [{"name": "orders"}],
                                            kafka={"bootstrapServers": kafka.bootstrap_servers}))
    status = kube.wait_for_status("od", lambda s: s.get("phase") == "Succeeded", what="Succeeded")["status"]
    uid = kube.deletion("od")["metadata"]["uid"]
    # A witness the real garbage collector must take: a ConfigMap owned by the OffsetDeletion. Once it is gone,
    # the collector has handled the deletion, and the backup (no ownerReference) is still there.
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "owned-by-od", "ownerReferences": [{"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                                    "name": "od", "uid": uid}]}})
    kube.delete(GROUP_VERSION, "offsetdeletions", "od")
    wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "od") is None, what="the deletion gone")
    wait_until(lambda: kube.find("v1", "configmaps", "owned-by-od") is None, what="the garbage collector")
    assert "ownerReferences" not in kube.get("v1", "configmaps", status["backup"]["name"])["metadata"]
    stored = backups(kube)[status["backup"]["name"]]
    assert (stored.action, stored.group, stored.bootstrap_servers) == (Action.DELETE, "replay", kafka.bootstrap_servers)
    assert stored.cluster_id == status["target"]["clusterId"] and stored.cluster_id
    assert {tp: c.offset for tp, c in stored.offsets.items()} == {("orders", 0): 3, ("orders", 1): 5}
    assert (stored.requested_by.kind, stored.requested_by.name, stored.requested_by.uid) == ("OffsetDeletion", "od", uid)
    assert stored.expires_at > stored.taken_at
    # The audit trail: one line for the backup, one for the OffsetDelete with the offsets before and after.
    audit = [r.getMessage() for r in caplog.records if r.name == "kafka_offset_operator.audit"]
    assert [line.split()[0] for line in audit] == ["BackedUp", "OffsetDelete", "DeletedAfterChange"]
    assert f"backup={stored.name}" in audit[1] and "before=[orders:0=3,orders:1=5] after=[none]" in audit[1]


def test_deleting_right_after_approval_cancels_or_keeps_a_backup_never_neither(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """Finding 1: `kubectl delete` at once after the approval. Either nothing was sent (offsets intact;
    an operator that saw the object says Cancelled) or the delete was sent with its backup stored, and the
    DeletedAfterChange Event says so."""
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "hasty", {("orders", 0): 3, ("orders", 1): 5})
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "hasty", "hasty", [{"name": "orders"}],
                                            kafka={"bootstrapServers": kafka.bootstrap_servers}))
    kube.delete(GROUP_VERSION, "offsetdeletions", "hasty")
    wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "hasty") is None, what="the deletion gone")
    if committed(kafka.bootstrap_servers, "hasty") == {("orders", 0): 3, ("orders", 1): 5}:
        assert "DeletedAfterChange" not in {e["reason"] for e in kube.events_for("hasty")}
        return  # cancelled before anything was sent
    [stored] = [b for b in backups(kube).values() if b.requested_by.name == "hasty"]
    wait_until(lambda: "DeletedAfterChange" in {e["reason"] for e in kube.events_for("hasty")},
                  what="the DeletedAfterChange event")
    assert {tp: c.offset for tp, c in stored.offsets.items()} == {("orders", 0): 3, ("orders", 1): 5}


def test_an_approved_deletion_waiting_for_kafka_is_cancelled_by_deleting_it(
        kube: Kube, start_operator: Start, kafka: Kafka) -> None:
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "stuck", "g", [{"name": "orders"}],
                                            kafka={"bootstrapServers": "127.0.0.1:1"}))
    # Finding 8: approved and waiting for Kafka is Pending, Ready=False KafkaUnavailable, not "AwaitingApproval".
    status = kube.wait_for_status("stuck", lambda s: s.get("phase") == "Pending" and any(
        c["type"] == "Ready" and c["reason"] == "KafkaUnavailable" for c in s.get("conditions", [])),
        timeout=60, what="Pending, Ready=False KafkaUnavailable")["status"]
    assert condition(status, "Ready")["status"] == "False" and "approved; waiting for Kafka" in condition(status, "Ready")["message"]
    kube.delete(GROUP_VERSION, "offsetdeletions", "stuck")
    wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "stuck") is None, what="the deletion gone")
    # Kopf posts events from a queue of its own: the event may be written after the object is gone.
    wait_until(lambda: "Cancelled" in {e["reason"] for e in kube.events_for("stuck")}, what="the Cancelled event")
    assert not [b for b in backups(kube).values() if b.requested_by.name == "stuck"]


def test_restore_goes_into_the_group_acted_on_not_the_one_the_spec_names_now(
        kafka: Kafka, cluster: EmulatedCluster, tmp_path: Path) -> None:
    """Finding 3: a spec edit after the deletion changes nothing about where a restore goes. The CRD refuses
    such an edit (test_api_validation.py, the real API server's 422); an older CRD would let it in, and the
    operator still holds. On the emulator, which can store the edit (see the module docstring)."""
    kube = Kube(cluster.url)
    operators = Operators(fast_options(cluster.write_kubeconfig(tmp_path / "kubeconfig")))
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "source", {("orders", 0): 7})
    empty_group(kafka.bootstrap_servers, "bystander", {("orders", 0): 1})
    try:
        operators.start()
        kube.create("offsetdeletions", deletion_body("moved", "source", [{"name": "orders"}],
                                                     kafka={"bootstrapServers": kafka.bootstrap_servers}))
        kube.wait_for_status("moved", lambda s: s.get("phase") == "Succeeded", what="Succeeded")
        with cluster.unvalidated():
            kube.patch(GROUP_VERSION, "offsetdeletions", "moved", {"spec": {"group": "bystander"}})
        frozen = kube.wait_for_status("moved", lambda s: any(c["reason"] == "SpecFrozen" for c in s.get("conditions", [])),
                                      what="SpecFrozen")["status"]
        assert "spec.group" in condition(frozen, "Degraded")["message"] and frozen["target"]["group"] == "source"
        kube.patch(GROUP_VERSION, "offsetdeletions", "moved", {"spec": {"restore": True}})
        kube.wait_for_status("moved", lambda s: s.get("phase") == "Restored", what="Restored")
    finally:
        operators.close()
    assert committed(kafka.bootstrap_servers, "source") == {("orders", 0): 7}
    assert committed(kafka.bootstrap_servers, "bystander") == {("orders", 0): 1}


def test_restore_needs_neither_the_policy_nor_its_spec(kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """Finding 2: a deletion made through a policy restores after the policy is gone."""
    make_topics(kafka, {"orders": 1})
    empty_group(kafka.bootstrap_servers, "orphan", {("orders", 0): 4})
    kube.create("consumergroupoffsetpolicies", policy(kube, kafka, "parent", []))
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "child", "orphan", [{"name": "orders"}], policy="parent"))
    kube.wait_for_status("child", lambda s: s.get("phase") == "Succeeded", what="Succeeded")
    kube.delete(GROUP_VERSION, "consumergroupoffsetpolicies", "parent")
    wait_until(lambda: kube.find(GROUP_VERSION, "consumergroupoffsetpolicies", "parent") is None, what="policy gone")
    kube.patch(GROUP_VERSION, "offsetdeletions", "child", {"spec": {"restore": True}})
    kube.wait_for_status("child", lambda s: s.get("phase") == "Restored", what="Restored")
    assert committed(kafka.bootstrap_servers, "orphan") == {("orders", 0): 4}


def test_protect_wins_over_an_approved_deletion_that_references_the_policy(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """Finding 5."""
    make_topics(kafka, {"invoices": 1})
    empty_group(kafka.bootstrap_servers, "billing-monthly", {("invoices", 0): 9})
    kube.create("consumergroupoffsetpolicies", policy(kube, kafka, "guard", ["billing-*"]))
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "nope", "billing-monthly", [{"name": "invoices"}], policy="guard"))
    status = kube.wait_for_status("nope", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert (status["phase"], condition(status, "Ready")["reason"]) == ("Failed", "Protected")
    assert "'billing-*'" in condition(status, "Ready")["message"] and "backup" not in status
    assert committed(kafka.bootstrap_servers, "billing-monthly") == {("invoices", 0): 9}


def test_restore_blocked_clears_when_the_restore_is_withdrawn(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """Finding 8: Degraded=True RestoreBlocked does not outlive the request."""
    make_topics(kafka, {"old": 1, "new": 1})
    empty_group(kafka.bootstrap_servers, "mover", {("old", 0): 2})
    start_operator()
    kube.create("offsetdeletions", deletion(kube, "busy", "mover", [{"name": "old"}],
                                            kafka={"bootstrapServers": kafka.bootstrap_servers}))
    kube.wait_for_status("busy", lambda s: s.get("phase") == "Succeeded", what="Succeeded")
    with member(kafka.bootstrap_servers, "mover", ["new"]):
        kube.patch(GROUP_VERSION, "offsetdeletions", "busy", {"spec": {"restore": True}})
        kube.wait_for_status("busy", lambda s: condition(s, "Degraded").get("reason") == "RestoreBlocked"
                             if s.get("conditions") else False, what="RestoreBlocked")
        kube.patch(GROUP_VERSION, "offsetdeletions", "busy", {"spec": {"restore": False}})
        status = kube.wait_for_status("busy", lambda s: condition(s, "Degraded")["status"] == "False",
                                      what="Degraded cleared")["status"]
    assert status["phase"] == "Succeeded" and ("old", 0) not in committed(kafka.bootstrap_servers, "mover")


def test_backups_are_kept_until_they_expire(kube: Kube, start_operator: Start, operator_options: Any) -> None:
    import dataclasses

    def stored(name: str, expires: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": kube.namespace,
                             "labels": {"app.kubernetes.io/managed-by": "kafka-offset-operator",
                                        "kafkaoffsets.dev/backup": "true"},
                             "annotations": {"kafkaoffsets.dev/expires-at": expires}},
                "binaryData": {}}

    kube.create("configmaps", stored("offset-backup-old", "2020-01-01T00:00:00Z"))
    kube.create("configmaps", stored("offset-backup-new", "2999-01-01T00:00:00Z"))
    start_operator(dataclasses.replace(operator_options, backup_sweep_interval_s=0.2))
    wait_until(lambda: kube.find("v1", "configmaps", "offset-backup-old") is None, what="the expired backup gone")
    assert kube.find("v1", "configmaps", "offset-backup-new") is not None


def _restore_cli(*args: str, env: dict[str, str] | None = None) -> Any:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kafka_offset_operator", "restore", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_the_restore_command_restores_from_the_backup_alone(
        kafka: Kafka, kube: Kube, start_operator: Start, kubeconfig: Any, tmp_path: Any) -> None:
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "gone-for-good", {("orders", 0): 3, ("orders", 1): 5})
    op = start_operator()
    kube.create("offsetdeletions", deletion(kube, "od", "gone-for-good", [{"name": "orders"}],
                                            kafka={"bootstrapServers": kafka.bootstrap_servers}))
    name = kube.wait_for_status("od", lambda s: s.get("phase") == "Succeeded", what="Succeeded")["status"]["backup"]["name"]
    kube.delete(GROUP_VERSION, "offsetdeletions", "od")
    wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "od") is None, what="the deletion gone")
    op.stop()  # no operator, no OffsetDeletion: the backup alone

    dry = _restore_cli("--backup", f"{kube.namespace}/{name}", "--kubeconfig", str(kubeconfig))
    assert dry.returncode == 0, dry.stderr
    assert "would commit" in dry.stdout and committed(kafka.bootstrap_servers, "gone-for-good") == {}
    with member(kafka.bootstrap_servers, "gone-for-good", ["orders"]):
        busy = _restore_cli("--backup", f"{kube.namespace}/{name}", "--kubeconfig", str(kubeconfig), "--execute")
        assert busy.returncode == 2 and "has members" in busy.stderr and len(busy.stderr.splitlines()) == 1
    file = tmp_path / "backup.json.gz"
    file.write_bytes(base64.b64decode(kube.get("v1", "configmaps", name)["binaryData"]["backup.json.gz"]))
    nowhere = {**os.environ, "KUBECONFIG": str(tmp_path / "no-kubeconfig")}  # whatever the test run set
    alone = _restore_cli("--file", str(file), "--execute", env=nowhere)  # no kubeconfig: no policy can be checked
    assert alone.returncode == 2 and "ConsumerGroupOffsetPolicies" in alone.stderr, alone.stderr
    assert committed(kafka.bootstrap_servers, "gone-for-good") == {}
    done = _restore_cli("--file", str(file), "--execute", "--kubeconfig", str(kubeconfig))  # no policy protects it
    assert done.returncode == 0, done.stderr
    assert committed(kafka.bootstrap_servers, "gone-for-good") == {("orders", 0): 3, ("orders", 1): 5}
    again = _restore_cli("--file", str(file), "--execute")  # nothing to commit: nothing to check either
    assert again.returncode == 0 and "already restored" in again.stdout  # idempotent
    for bad, message in ((["--backup", "nope"], "NAMESPACE/NAME"), (["--file", str(tmp_path / "x")], "--file"),
                         (["--backup", f"{kube.namespace}/missing", "--kubeconfig", str(kubeconfig)], "no backup")):
        out = _restore_cli(*bad)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_backup_already_stored_for_the_change_is_kept_and_acted_on(
        kafka: Kafka, kube: Kube, start_operator: Start) -> None:
    """A retry after a crash between the backup and the status write finds its backup stored: it keeps it
    (the state before the change) and acts on it, never overwriting it with what it reads now."""
    from kafka_offset_operator.adapters.backup_store import backup_name
    from kafka_offset_operator.model.backups import BackupRecord, Requester, encode
    from kafka_offset_operator.model.offsets import Committed

    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "retried", {("orders", 0): 3, ("orders", 1): 5})
    # The real API server sets the uid itself: the OffsetDeletion is made first, unapproved and with no
    # operator running, and approved once the backup named after its uid is stored.
    uid = kube.create("offsetdeletions", deletion(kube, "retried", "retried", [{"name": "orders"}], approved=False,
                                                  kafka={"bootstrapServers": kafka.bootstrap_servers}))["metadata"]["uid"]
    name = backup_name("offsetdeletion", "retried", Action.DELETE, uid)
    earlier = BackupRecord(name, Action.DELETE, None, kafka.bootstrap_servers, "retried",
                           {("orders", 0): Committed(3), ("orders", 1): Committed(4)},
                           Requester("OffsetDeletion", kube.namespace, "retried", uid, "approved OffsetDeletion"),
                           "2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z")
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "labels": {"kafkaoffsets.dev/backup": "true"}},
                               "binaryData": {"backup.json.gz": base64.b64encode(encode(earlier)).decode()}})
    kube.patch(GROUP_VERSION, "offsetdeletions", "retried", {"spec": {"approved": True, "approvedBy": ADMIN}})
    start_operator()
    status = kube.wait_for_status("retried", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert status["backup"]["name"] == name and status["backup"]["takenAt"] == "2026-01-01T00:00:00Z"
    by_tp = {(r["topic"], r["partition"]): r["status"] for r in status["results"]}
    assert by_tp == {("orders", 0): "Deleted", ("orders", 1): "Skipped"}  # 5 is not the backed-up 4
    assert committed(kafka.bootstrap_servers, "retried") == {("orders", 1): 5}
    assert backups(kube)[name] == earlier
