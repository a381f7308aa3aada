"""The SIGKILL matrix's cells whose fault is at the broker (docs/safety.md, "Kubernetes faults and
restarts"): the OffsetDelete (an OffsetReset's OffsetCommit, keep-alive's re-commit of unchanged offsets) is
held at the broker, the process is SIGKILLed, then Kafka applies it. They stay on the sandbox broker because
only the sandbox can hold a request (`faults.hold`); every other cell runs on Apache Kafka in
test_kill_matrix.py. Their Kubernetes side needs no fault: it is the real kube-apiserver (the `real_api`
marker: the install applied, each process on the installed ServiceAccount's token, a namespace per test).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokers import make_topics, sandbox_broker
from installed_api import ADMIN, InstalledApi
from kafka_clients import admin_commit, committed
from keepalive_step import keep_alive_pass
from operator_harness import GROUP_VERSION, Kube
from operator_process import OperatorProcess
from test_kill_matrix import BEFORE, audit_lines
from test_offset_deletion import deletion
from test_policy_keepalive import audit_lines as captured_audit_lines
from test_policy_keepalive import lines_of
from waiting import wait_until

from kafka_offset_operator.adapters.backup_store import SELECTOR, BackupStore
from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.adapters.kube import Kube as ProductKube
from kafka_offset_operator.adapters.kube import load_config
from kafka_offset_operator.model.api import BACKUP_ACTION_LABEL
from kafka_offset_operator.model.backups import Action, BackupRecord, intents_of
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.offsets import Committed
from kafka_offset_operator.reconcilers.fresh_facts import log_position
from kafka_sandbox import SandboxBroker

pytestmark = [pytest.mark.slow, pytest.mark.real_api]


@pytest.fixture(scope="module")
def broker() -> Iterator[SandboxBroker]:
    with sandbox_broker() as b:
        make_topics(b, {"orders": 2})
        yield b


@pytest.mark.parametrize("kind", ["OffsetDeletion", "OffsetReset"])
def test_sigkill_after_the_change_reached_kafka_and_before_its_audit_line(
        broker: SandboxBroker, api: InstalledApi, kube: Kube, tmp_path: Path, kind: str) -> None:
    """The one window a Kubernetes write cannot show: the OffsetDelete (an OffsetReset's OffsetCommit) is held
    at the broker, the process is SIGKILLed, then Kafka applies it. The dead process wrote no audit line; the
    next one confirms the change in Kafka and writes it, marked `confirmed=after-restart` (at-least-once)."""
    group = f"kill-audit-{kind.lower()}"
    admin_commit(broker.bootstrap_servers, group, BEFORE)
    call = "OffsetDelete" if kind == "OffsetDeletion" else "OffsetCommit"
    kubeconfig, namespace = api.token_kubeconfig, kube.namespace
    held = broker.faults.hold(call, group=group)
    with OperatorProcess(kubeconfig, tmp_path, namespace=namespace) as first:
        if kind == "OffsetDeletion":
            kube.create("offsetdeletions", deletion("d", group, [{"name": "orders"}],
                                                    kafka={"bootstrapServers": broker.bootstrap_servers}))
        else:
            kube.create("offsetresets", {
                "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "d"},
                "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": group,
                         "topics": [{"name": "orders"}], "target": {"offset": 1}, "approved": True,
                         "approvedBy": ADMIN}})
        held.wait(30)
        assert first.kill() == -signal.SIGKILL
        first_log = first.log()
    held.release()  # applied; its answer goes to a dead client
    after = {} if kind == "OffsetDeletion" else {tp: 1 for tp in BEFORE}
    wait_until(lambda: committed(broker.bootstrap_servers, group) == after, 10, "the held request applied")
    assert not audit_lines(first_log, call, group), first_log
    with OperatorProcess(kubeconfig, tmp_path, namespace=namespace) as second:
        plural = "offsetdeletions" if kind == "OffsetDeletion" else "offsetresets"
        status = wait_until(lambda: (s := (kube.find(GROUP_VERSION, plural, "d") or {}).get("status") or {})
                            .get("phase") in ("Succeeded", "PartiallyFailed", "Failed") and s, 30, "a final phase")
        assert status["phase"] == "Succeeded", status
        [line] = audit_lines(second.log(), call, group)
        second.kill()
    assert line.endswith("confirmed=after-restart"), line
    assert "partitions=2 ok=2" in line, line
    assert ("before=[orders:0=3,orders:1=4] after=[none]" if kind == "OffsetDeletion"
            else "before=[orders:0=3,orders:1=4] after=[orders:0=1,orders:1=1]") in line, line
    assert committed(broker.bootstrap_servers, group) == after


def intent_records(kubeconfig: Path, namespace: str) -> list[BackupRecord]:
    """The keep-alive intent records in the backup store, read back through the API server; each is a
    ConfigMap owned by nothing (it outlives the policy, as every backup)."""
    kube = ProductKube(load_config(kubeconfig))
    try:
        labels = {BACKUP_ACTION_LABEL: Action.RECOMMIT.value}
        for configmap in kube.list_configmaps(namespace, {**SELECTOR, **labels}):
            assert "ownerReferences" not in configmap["metadata"], configmap
        return BackupStore(kube).find(namespace, labels)
    finally:
        kube.close()


def test_sigkill_after_keep_alive_re_committed_unchanged_offsets_and_before_its_audit_line(
        broker: SandboxBroker, api: InstalledApi, kube: Kube, tmp_path: Path) -> None:
    """Keep-alive's re-commit of unchanged offsets (only the commit time changes: OffsetFetch looks the same
    before and after) is preceded by its intent record. The OffsetCommit is held at the broker, the process
    SIGKILLed, then Kafka applies it: the dead process wrote no line; the next one finds the intent still
    open, finds the commit's records in the group's __consumer_offsets partition since the intent's position,
    and writes the line marked `confirmed=after-restart`, re-committing nothing itself."""
    group = "kill-audit-keepalive"
    admin_commit(broker.bootstrap_servers, group, BEFORE)  # a simple group: keep-alive re-commits it
    with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers), timeout_ms=10_000) as admin:
        start = log_position(admin, group, 10_000)
    kubeconfig, namespace = api.token_kubeconfig, kube.namespace  # the pass as the operator: its token
    held = broker.faults.hold("OffsetCommit", group=group)
    with (tmp_path / "first.log").open("wb") as out:
        first = subprocess.Popen([sys.executable, str(Path(__file__).with_name("keepalive_step.py")),
                                  str(kubeconfig), broker.bootstrap_servers, group, namespace],
                                 stdout=out, stderr=subprocess.STDOUT)
    try:
        held.wait(60)
        first.kill()
        assert first.wait(10) == -signal.SIGKILL
    finally:
        first.kill()
    first_log = (tmp_path / "first.log").read_text()
    assert not audit_lines(first_log, "OffsetCommit", group), first_log
    [record] = intent_records(kubeconfig, namespace)  # stored before the request was sent, still open
    assert record.state == "Taken", record
    assert [(i.group, dict(i.offsets)) for i in intents_of(record)] == [
        (group, {tp: Committed(o, -1, "") for tp, o in BEFORE.items()})]
    held.release()  # applied; its answer goes to a dead client

    def applied() -> bool:
        with KafkaAdmin(ConnectionSettings(broker.bootstrap_servers), timeout_ms=10_000) as admin:
            return log_position(admin, group, 10_000)["offset"] >= start["offset"] + len(BEFORE)

    wait_until(applied, 30, "the held OffsetCommit's records in __consumer_offsets")
    commits = broker.faults.count("OffsetCommit", group=group)
    with captured_audit_lines() as lines:  # the next process: this one
        keep_alive_pass(str(kubeconfig), broker.bootstrap_servers, group, recommit=False, namespace=namespace)
    [line] = lines_of(lines, "OffsetCommit", group)
    assert line.endswith("confirmed=after-restart"), line
    assert "partitions=2 ok=2 errors=none before=[orders:0=3,orders:1=4] after=[orders:0=3,orders:1=4]" in line, line
    assert commits.hits == 0, "the resumed run re-committed on its own"
    [record] = intent_records(kubeconfig, namespace)
    assert record.state == "Done", record
    # A pass that is not interrupted: its own intent, closed after its line; the settled one stays settled.
    with captured_audit_lines() as lines:
        keep_alive_pass(str(kubeconfig), broker.bootstrap_servers, group, recommit=True, namespace=namespace)
    [line] = lines_of(lines, "OffsetCommit", group)
    assert "ok=2" in line and "after-restart" not in line, line
    assert [r.state for r in intent_records(kubeconfig, namespace)] == ["Done", "Done"]
    assert committed(broker.bootstrap_servers, group) == BEFORE
