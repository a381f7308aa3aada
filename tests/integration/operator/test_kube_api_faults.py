"""API faults injected by the emulated API while an OffsetDeletion runs (docs/safety.md, "Kubernetes faults
and restarts"): a 409 Conflict on a status write, a 500 on the backup's ConfigMap, watch streams cut. Each
is retried; the end state is the same as without the fault (Succeeded, each partition deleted once, one
stored backup); and no offset changes before its backup is stored."""

from __future__ import annotations

from typing import Any

import kmock
import pytest
from brokers import make_topics
from kafka_clients import admin_commit, committed
from kube_faults import assert_deleted_once_with_a_backup, deletion, status_write
from operator_harness import EmulatedCluster, Kube, condition
from waiting import wait_until

from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow

BEFORE = {("orders", 0): 3, ("orders", 1): 4}


@pytest.fixture
def group(broker: SandboxBroker) -> str:
    """Group "api" (orders/0 at 3, orders/1 at 4) on the test's own broker."""
    make_topics(broker, {"orders": 2})
    admin_commit(broker.bootstrap_servers, "api", BEFORE)
    return "api"


def finished(kube: Kube, name: str) -> dict[str, Any]:
    status = kube.wait_for_phase(name, "Succeeded", "PartiallyFailed", "Failed", timeout=30)
    assert status["phase"] == "Succeeded", status
    return status


def test_a_conflict_on_the_backed_up_status_is_retried(cluster: EmulatedCluster, kube: Kube, broker: SandboxBroker,
                                                       group: str, start_operator: Any) -> None:
    fault = cluster.fail(*status_write(phase="Running"), kmock.name("d"), status=409, times=2)
    start_operator()
    kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
    status = finished(kube, "d")
    assert len(fault.taken) == 2  # both refused, then the write went through
    assert status["deleted"] == 2
    assert committed(broker.bootstrap_servers, group) == {}
    assert_deleted_once_with_a_backup(broker.bootstrap_servers, kube, "d", group, BEFORE)


def test_a_server_error_on_the_backup_configmap_changes_nothing_until_it_is_stored(
        cluster: EmulatedCluster, kube: Kube, broker: SandboxBroker, group: str, start_operator: Any) -> None:
    fault = cluster.fail("create configmaps", status=500, times=3, message="etcdserver: request timed out")
    start_operator()
    kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
    wait_until(lambda: len(fault.taken) >= 1, 20, "the refused backup")
    # Meanwhile no offset was touched: nothing is deleted without a stored backup.
    assert committed(broker.bootstrap_servers, group) == BEFORE
    status = finished(kube, "d")
    assert len(fault.taken) == 3
    assert status["deleted"] == 2
    assert_deleted_once_with_a_backup(broker.bootstrap_servers, kube, "d", group, BEFORE)
    reasons = {e["reason"] for e in kube.events_for("d")}
    assert "KubernetesApiError" in reasons or "BackupNotStored" in reasons, reasons


def test_a_cut_watch_stream_is_resumed(cluster: EmulatedCluster, kube: Kube, broker: SandboxBroker, group: str,
                                       start_operator: Any) -> None:
    start_operator()
    wait_until(lambda: cluster.requests("watch offsetdeletions"), 20, "the operator's watch")
    cut = wait_until(lambda: cluster.cut_watches("watch offsetdeletions"), 20, "a watch to cut")
    assert cut >= 1
    kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
    status = finished(kube, "d")
    assert condition(status, "Ready")["reason"] == "Succeeded"
    assert len(cluster.requests("watch offsetdeletions")) >= 2  # Kopf watched again
    assert_deleted_once_with_a_backup(broker.bootstrap_servers, kube, "d", group, BEFORE)
