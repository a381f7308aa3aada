"""SIGKILL at every Kubernetes-visible step, on real `kafka-offset-operator run` processes (docs/safety.md,
"Kubernetes faults and restarts").

For each write an approved OffsetDeletion makes (kube_faults.DELETION_STEPS), the emulated API holds it; the
operator is SIGKILLed while it is held (the write is then dropped: it never applied) or just after it was
applied (its answer held); a fresh process finishes the job. The end state: each partition deleted exactly
once (the tombstones in `__consumer_offsets`), one stored backup holding the offsets from before, the
resource in its documented final phase, and, for the deletion's own removal, the object gone and its backup
kept. One sandbox broker serves the module (a group per case); each case has its own emulated API.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokers import make_topics, sandbox_broker
from kafka_clients import admin_commit, committed
from kube_faults import DELETION_STEPS, assert_deleted_once_with_a_backup, backups, deletion, step_criteria
from operator_harness import GROUP_VERSION, NAMESPACE, Kube, emulated_cluster
from operator_process import OperatorProcess
from waiting import wait_until

from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow

BEFORE = {("orders", 0): 3, ("orders", 1): 4}


def audit_lines(log: str, call: str, group: str) -> list[str]:
    """The audit lines (logger kafka_offset_operator.audit) of `call` on `group` in an operator's log."""
    return [line for line in log.splitlines() if "kafka_offset_operator.audit" in line
            and f" {call} " in f" {line} " and f"group={group} " in line]


@pytest.fixture(scope="module")
def broker() -> Iterator[SandboxBroker]:
    with sandbox_broker() as b:
        make_topics(b, {"orders": 2})
        yield b


@pytest.mark.parametrize("when", ["held", "applied"])
@pytest.mark.parametrize("step", list(DELETION_STEPS))
def test_sigkill_at_each_step_of_an_offset_deletion(broker: SandboxBroker, tmp_path: Path, step: str, when: str) -> None:
    group = f"kill-{step}-{when}"
    admin_commit(broker.bootstrap_servers, group, BEFORE)
    deleting = threading.Event()  # the last step is the deletion's own removal
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        extra = (deleting,) if step == "finalizer-removed-on-delete" else ()
        held = cluster.hold(*step_criteria(step, "d"), *extra, after=when == "applied")
        with OperatorProcess(kubeconfig, tmp_path) as first:
            kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
            if step == "finalizer-removed-on-delete":
                kube.wait_for_phase("d", "Succeeded", timeout=30)
                deleting.set()
                kube.delete(GROUP_VERSION, "offsetdeletions", "d")
            held.wait(30)
            assert first.kill() == -signal.SIGKILL
            first_log = first.log()
        held.release(apply=False)  # held before it applied: dropped with its client
        with OperatorProcess(kubeconfig, tmp_path) as second:
            if step == "finalizer-removed-on-delete":
                wait_until(lambda: kube.find(GROUP_VERSION, "offsetdeletions", "d") is None, 30, "the deletion gone")
            else:
                status = kube.wait_for_phase("d", "Succeeded", "PartiallyFailed", "Failed", timeout=30)
                assert status["phase"] == "Succeeded", status
                assert status["deleted"] == 2 and status["failed"] == 0, status
            assert "Traceback" not in second.log()
            second.kill()  # not a test of SIGTERM (test_run_command.py has that), and quicker
            # At least one audit line of the OffsetDelete, whichever process sent it (docs/safety.md).
            assert audit_lines(first_log + second.log(), "OffsetDelete", group), (first_log, second.log())
        assert committed(broker.bootstrap_servers, group) == {}
        assert_deleted_once_with_a_backup(broker.bootstrap_servers, kube, "d", group, BEFORE)
        assert backups(kube, "d")  # a removed deletion leaves its backup


@pytest.mark.parametrize("kind", ["OffsetDeletion", "OffsetReset"])
def test_sigkill_after_the_change_reached_kafka_and_before_its_audit_line(
        broker: SandboxBroker, tmp_path: Path, kind: str) -> None:
    """The one window a Kubernetes write cannot show: the OffsetDelete (an OffsetReset's OffsetCommit) is held
    at the broker, the process is SIGKILLed, then Kafka applies it. The dead process wrote no audit line; the
    next one confirms the change in Kafka and writes it, marked `confirmed=after-restart` (at-least-once)."""
    group = f"kill-audit-{kind.lower()}"
    admin_commit(broker.bootstrap_servers, group, BEFORE)
    call = "OffsetDelete" if kind == "OffsetDeletion" else "OffsetCommit"
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        held = broker.faults.hold(call, group=group)
        with OperatorProcess(kubeconfig, tmp_path) as first:
            if kind == "OffsetDeletion":
                kube.create("offsetdeletions", deletion("d", broker.bootstrap_servers, group))
            else:
                kube.create("offsetresets", {
                    "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "d", "namespace": NAMESPACE},
                    "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": group,
                             "topics": [{"name": "orders"}], "target": {"offset": 1}, "approved": True}})
            held.wait(30)
            assert first.kill() == -signal.SIGKILL
            first_log = first.log()
        held.release()  # applied; its answer goes to a dead client
        after = {} if kind == "OffsetDeletion" else {tp: 1 for tp in BEFORE}
        wait_until(lambda: committed(broker.bootstrap_servers, group) == after, 10, "the held request applied")
        assert not audit_lines(first_log, call, group), first_log
        with OperatorProcess(kubeconfig, tmp_path) as second:
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
