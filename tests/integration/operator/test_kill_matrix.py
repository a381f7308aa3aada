"""SIGKILL at every Kubernetes-visible step, on real `kafka-offset-operator run` processes (docs/safety.md,
"Kubernetes faults and restarts").

For each write an approved OffsetDeletion makes (kube_faults.DELETION_STEPS), the emulated API holds it; the
operator is SIGKILLed while it is held (the write is then dropped: it never applied) or just after it was
applied (its answer held); a fresh process finishes the job. The end state: each partition deleted exactly
once (the tombstones in `__consumer_offsets`), one stored backup holding the offsets from before, the
resource in its documented final phase, and, for the deletion's own removal, the object gone and its backup
kept. Apache Kafka (the session's real broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox) serves the module
(a group per case); each case has its own emulated API. The tombstones are read from Kafka's own
`__consumer_offsets` over the wire, as any consumer of it would.

The one cell whose fault is at the broker (an OffsetDelete or OffsetCommit held until the process is dead)
is test_kill_matrix_sandbox_faults.py: only the sandbox can hold a request.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokers import make_topics
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka, clean_after
from kube_faults import DELETION_STEPS, assert_deleted_once_with_a_backup, backups, deletion, step_criteria
from operator_harness import GROUP_VERSION, Kube, emulated_cluster
from operator_process import OperatorProcess
from waiting import wait_until

pytestmark = pytest.mark.slow

BEFORE = {("orders", 0): 3, ("orders", 1): 4}


def audit_lines(log: str, call: str, group: str) -> list[str]:
    """The audit lines (logger kafka_offset_operator.audit) of `call` on `group` in an operator's log."""
    return [line for line in log.splitlines() if "kafka_offset_operator.audit" in line
            and f" {call} " in f" {line} " and f"group={group} " in line]


@pytest.fixture(scope="module")
def broker(real_kafka: Kafka) -> Iterator[Kafka]:
    with clean_after(real_kafka) as kafka:
        make_topics(kafka, {"orders": 2})
        yield kafka


@pytest.mark.parametrize("when", ["held", "applied"])
@pytest.mark.parametrize("step", list(DELETION_STEPS))
def test_sigkill_at_each_step_of_an_offset_deletion(broker: Kafka, tmp_path: Path, step: str, when: str) -> None:
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
