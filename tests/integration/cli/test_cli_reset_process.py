"""`kafka-offset-operator reset` as a user runs it, a child process (`python -m kafka_offset_operator`), on Apache
Kafka (the `kafka` fixture; the sandbox with KOO_KAFKA_VERSIONS=sandbox) and the emulated Kubernetes API (the
backup store): the plan, --execute with its backup first, and a bad argument. Every target over the wire is
test_cli_reset_scenarios.py (in-process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka

from kafka_offset_operator.adapters.backup_store import BackupStore
from kafka_offset_operator.adapters.kube import Kube, load_config
from kafka_offset_operator.model.offsets import Committed


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_offset_operator", "reset", *argv], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow  # three child processes, each loading kafka-python and the kubernetes client: 3-10 s
def test_the_plan_then_execute_with_the_backup_first(kafka: Kafka, kubeconfig: Path) -> None:
    kafka.create_topic("orders", 2)
    for p in (0, 1):
        kafka.append_records("orders", p, [(None, b"r", 1_767_225_600_000 + i) for i in range(6)])
    admin_commit(kafka.bootstrap_servers, "billing", {("orders", 0): 4, ("orders", 1): 2})
    args = ["--bootstrap-server", kafka.bootstrap_servers, "--group", "billing", "--topic", "orders:1",
            "--shift-by", "-5", "--kubeconfig", str(kubeconfig)]

    dry = cli(*args)
    assert (dry.returncode, dry.stderr) == (0, "")
    assert dry.stdout.splitlines()[1:] == [
        "GROUP    TOPIC   PARTITION  CURRENT  NEW  NOTE",
        "billing  orders  1          2        0    clamped to the log start offset 0 (asked -3)",
        "dry run: 1 offsets would be committed (1 of them change); add --execute to commit them",
    ]
    assert committed(kafka.bootstrap_servers, "billing") == {("orders", 0): 4, ("orders", 1): 2}

    done = cli(*args, "--execute")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "billing  orders  1          2       0      committed" in done.stdout
    assert committed(kafka.bootstrap_servers, "billing") == {("orders", 0): 4, ("orders", 1): 0}
    kube = Kube(load_config(kubeconfig))
    try:
        [backup] = BackupStore(kube).find("kafka")
    finally:
        kube.close()
    assert backup.offsets == {("orders", 1): Committed(2)} and f"backup kafka/{backup.name} written" in done.stdout
    assert done.stdout.index("written") < done.stdout.index("RESULT")  # the backup, then the OffsetCommit

    bad = cli(*args[:-4], "--to-datetime", "tomorrow")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == ("kafka-offset-operator: error: --to-datetime: 'tomorrow' is not an RFC 3339 time like "
                          "2026-01-31T12:00:00Z\n")
