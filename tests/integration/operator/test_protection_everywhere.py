"""`protect` means never, whoever asks (issue 18 item 2): a policy's spec.protect.groups protects those groups
on its Kafka cluster (its id, recorded in the policy's status.kafkaCluster) against every change the operator
or the CLI makes, whatever the change references and in whichever namespace it is written.

One Apache Kafka (the session's broker, emptied afterwards), two namespaces of the real kube-apiserver and one
operator (under Kopf, on the installed ServiceAccount's token, watching both: installed_api.py) serve the
module: team-b's policy `guard` protects `billing-*`; team-a (the install's test namespace) tries every way
around it. The policies use the SparkApplication engine without spark-operator: their runs fail after
recording the cluster, which is all protection needs (no Spark starts)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from installed_api import ADMIN, InstalledApi
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka, clean_after
from kube_cluster import ApiError
from operator_harness import GROUP_VERSION, Kube, Operators, condition
from waiting import wait_until

from kafka_offset_operator import cli
from kafka_offset_operator.model.backups import Action, BackupRecord, Requester, to_document
from kafka_offset_operator.model.offsets import Committed

pytestmark = pytest.mark.real_api
BILLING = {("invoices", 0): 5, ("invoices", 1): 7}
POLICIES = "consumergroupoffsetpolicies"


@dataclass
class World:
    broker: Kafka
    kube: Kube  # admin, in team-a's namespace
    kubeconfig: Path
    cluster_id: str
    team_b: str


def policy(name: str, namespace: str, bootstrap: str, protect: list[str]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"kafka": {"bootstrapServers": bootstrap}, "mode": "DryRun", "protect": {"groups": protect},
                     "schedule": {"interval": "1h"},
                     "analysis": {"engine": "SparkApplication", "brokerRetention": "7d",
                                  "sparkApplication": {"image": "example/koo:1"}}}}


def recorded_cluster(kube: Kube, name: str, namespace: str) -> str:
    def found() -> str | None:
        obj = kube.get(GROUP_VERSION, POLICIES, name, namespace)
        cluster = (obj.get("status") or {}).get("kafkaCluster") or {}
        return cluster.get("id") if cluster.get("observedGeneration") == obj["metadata"]["generation"] else None
    return wait_until(found, 60, f"{namespace}/{name}'s status.kafkaCluster")


@pytest.fixture(scope="module")
def world(real_kafka: Kafka, api: InstalledApi) -> Iterator[World]:
    team_a, team_b = api.namespace, f"{api.namespace}-b"
    api.plane.create_namespace(team_b)
    with clean_after(real_kafka) as broker:
        make_topics(broker, {"invoices": 2, "orders": 1})
        kube = api.kube
        operators = Operators(api.options(namespaces=(team_a, team_b)))
        try:
            operators.start()
            kube.create(POLICIES, policy("guard", team_b, broker.bootstrap_servers, ["billing-*"]))
            # team-a's own policy on the same cluster protects nothing of billing's
            kube.create(POLICIES, policy("ours", team_a, broker.bootstrap_servers, ["ours-*"]))
            cluster_id = recorded_cluster(kube, "guard", team_b)
            recorded_cluster(kube, "ours", team_a)
            yield World(broker, kube, api.plane.kubeconfig, cluster_id, team_b)
        finally:
            operators.close()
            for obj in kube.list(GROUP_VERSION, POLICIES, team_b):  # their finalizers: the operator is gone
                if obj["metadata"].get("finalizers"):
                    kube.patch(GROUP_VERSION, POLICIES, obj["metadata"]["name"], {"metadata": {"finalizers": None}},
                               namespace=team_b)
            try:
                api.plane.api.request("DELETE", f"/api/v1/namespaces/{team_b}")
            except ApiError as exc:
                if exc.status != 404:
                    raise


def final(kube: Kube, plural: str, name: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status = (kube.find(GROUP_VERSION, plural, name) or {}).get("status") or {}
        return status if status.get("phase") in ("Succeeded", "PartiallyFailed", "Failed") else None
    return wait_until(done, 30, f"{name} final")


def assert_protected(status: dict[str, Any], world: World, group: str) -> None:
    ready = condition(status, "Ready")
    assert (status["phase"], ready["reason"]) == ("Failed", "Protected"), status
    assert (f"group {group} is protected on Kafka cluster {world.cluster_id} by ConsumerGroupOffsetPolicy "
            f"{world.team_b}/guard (spec.protect.groups pattern 'billing-*')") in ready["message"], ready
    assert committed(world.broker.bootstrap_servers, group) == BILLING  # nothing changed


def deletion(name: str, group: str, **spec: Any) -> dict[str, Any]:
    """Approved by the admin (the admission policy checks approvedBy), in team-a's namespace."""
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": {"group": group, "topics": [{"name": "invoices"}], "approved": True, "approvedBy": ADMIN, **spec}}


def test_an_inline_offset_deletion_in_another_namespace_is_refused(world: World) -> None:
    admin_commit(world.broker.bootstrap_servers, "billing-inline", BILLING)
    world.kube.create("offsetdeletions", deletion("inline", "billing-inline",
                                                  kafka={"bootstrapServers": world.broker.bootstrap_servers}))
    assert_protected(final(world.kube, "offsetdeletions", "inline"), world, "billing-inline")


def test_an_offset_deletion_of_another_policy_and_its_delete_group_are_refused(world: World) -> None:
    admin_commit(world.broker.bootstrap_servers, "billing-ref", BILLING)
    world.kube.create("offsetdeletions", deletion("by-ref", "billing-ref", policyRef={"name": "ours"}))
    assert_protected(final(world.kube, "offsetdeletions", "by-ref"), world, "billing-ref")
    world.kube.create("offsetdeletions", deletion("whole", "billing-ref", policyRef={"name": "ours"}, deleteGroup=True))
    assert_protected(final(world.kube, "offsetdeletions", "whole"), world, "billing-ref")


def test_an_offset_reset_of_another_policy_is_refused(world: World) -> None:
    admin_commit(world.broker.bootstrap_servers, "billing-reset", BILLING)
    world.kube.create("offsetresets", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "rewind"},
        "spec": {"policyRef": {"name": "ours"}, "group": "billing-reset", "allTopics": True,
                 "target": {"earliest": True}, "approved": True, "approvedBy": ADMIN}})
    assert_protected(final(world.kube, "offsetresets", "rewind"), world, "billing-reset")


def test_a_group_nobody_protects_is_deleted_as_usual(world: World) -> None:
    """A space inside a group id is one Kafka takes (docs/offset-deletion.md): deleted like any other."""
    admin_commit(world.broker.bootstrap_servers, "team ledger", BILLING)
    world.kube.create("offsetdeletions", deletion("free", "team ledger", policyRef={"name": "ours"}))
    status = final(world.kube, "offsetdeletions", "free")
    assert (status["phase"], status["deleted"]) == ("Succeeded", 2), status
    assert committed(world.broker.bootstrap_servers, "team ledger") == {}


def test_a_policy_whose_cluster_is_not_known_yet_holds_the_change_back(world: World) -> None:
    """Its Kafka does not answer, so its run never records the cluster: its patterns may protect the group
    on any cluster, so the deletion waits (ProtectionUnknown, retried), and goes once the pattern is lifted."""
    world.kube.create(POLICIES, policy("unreachable", world.team_b, "127.0.0.1:1", ["audit-*"]))
    admin_commit(world.broker.bootstrap_servers, "audit-log", BILLING)
    world.kube.create("offsetdeletions", deletion("audit", "audit-log",
                                                  kafka={"bootstrapServers": world.broker.bootstrap_servers}))
    degraded = wait_until(lambda: (d := condition(world.kube.deletion("audit").get("status"), "Degraded"))
                          .get("reason") == "ProtectionUnknown" and d, 30, "ProtectionUnknown")
    assert f"ConsumerGroupOffsetPolicy {world.team_b}/unreachable protects 'audit-*'" in degraded["message"], degraded
    assert committed(world.broker.bootstrap_servers, "audit-log") == BILLING
    # an admin with rights in team-b lifts it deliberately: the deletion goes on
    world.kube.patch(GROUP_VERSION, POLICIES, "unreachable", {"spec": {"protect": {"groups": ["nothing-*"]}}},
                     namespace=world.team_b)
    assert final(world.kube, "offsetdeletions", "audit")["phase"] == "Succeeded"
    assert committed(world.broker.bootstrap_servers, "audit-log") == {}
    world.kube.delete(GROUP_VERSION, POLICIES, "unreachable", namespace=world.team_b)  # its retries end with it
    wait_until(lambda: world.kube.find(GROUP_VERSION, POLICIES, "unreachable", world.team_b) is None, 60, "it gone")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_reset_command_refuses_a_protected_group_unless_told_loudly(world: World,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    admin_commit(world.broker.bootstrap_servers, "billing-cli", BILLING)
    args = ("reset", "--bootstrap-server", world.broker.bootstrap_servers, "--group", "billing-cli", "--all-topics",
            "--to-earliest", "--kubeconfig", str(world.kubeconfig), "--execute")
    code, out, err = run_cli(capsys, *args)
    assert code == 2, (out, err)
    [line] = err.splitlines()
    assert line == (f"kafka-offset-operator: error: group billing-cli is protected on Kafka cluster {world.cluster_id} "
                    f"by ConsumerGroupOffsetPolicy {world.team_b}/guard (spec.protect.groups pattern 'billing-*'); nothing "
                    "changed (--ignore-protection overrides)")
    assert committed(world.broker.bootstrap_servers, "billing-cli") == BILLING
    code, out, err = run_cli(capsys, *args, "--ignore-protection")
    assert code == 0, (out, err)
    assert err.startswith("WARNING: --ignore-protection: ConsumerGroupOffsetPolicies' spec.protect.groups NOT "
                          "checked for group billing-cli"), err
    assert committed(world.broker.bootstrap_servers, "billing-cli") == {("invoices", 0): 0, ("invoices", 1): 0}


def test_the_restore_command_refuses_a_protected_group(world: World, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    backup = tmp_path / "backup.json"
    record = BackupRecord(name="hand-made", action=Action.DELETE, cluster_id=world.cluster_id,
                          bootstrap_servers=world.broker.bootstrap_servers, group="billing-restore",
                          offsets={("invoices", 0): Committed(3)},
                          requested_by=Requester("OffsetDeletion", world.kube.namespace, "x", "u", "test"),
                          taken_at="2026-01-01T00:00:00Z", expires_at="2036-01-01T00:00:00Z")
    backup.write_text(json.dumps(to_document(record)))
    code, out, err = run_cli(capsys, "restore", "--file", str(backup), "--kubeconfig", str(world.kubeconfig),
                             "--execute")
    assert code == 2, (out, err)
    assert "group billing-restore is protected on Kafka cluster" in err and len(err.splitlines()) == 1, err
    assert committed(world.broker.bootstrap_servers, "billing-restore") == {}
