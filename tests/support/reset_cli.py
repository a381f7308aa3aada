"""What the `reset` CLI tests share: running it in-process against the sandbox broker with the emulated
cluster's kubeconfig, reading its printed plan, and the backups it stored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kafka_offset_operator import cli
from kafka_offset_operator.adapters.backup_store import BackupStore
from kafka_offset_operator.adapters.kube import Kube, load_config
from kafka_offset_operator.model.backups import BackupRecord
from kafka_sandbox import SandboxBroker

if TYPE_CHECKING:
    from kafka_under_test import Kafka

NAMESPACE = "kafka"  # the emulated kubeconfig's context namespace


def reset(capsys: pytest.CaptureFixture[str], broker: SandboxBroker | Kafka, kubeconfig: Path, *argv: str) -> tuple[int, str, str]:
    """`reset` of the group billing through cli.main: (exit code, stdout, stderr)."""
    code = cli.main(["reset", "--bootstrap-server", broker.bootstrap_servers, "--group", "billing",
                     "--kubeconfig", str(kubeconfig), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def plan_of(out: str) -> dict[tuple[str, int], int]:
    """NEW of each row of the printed table (GROUP TOPIC PARTITION CURRENT NEW [NOTE])."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP "))
    rows = {}
    for line in lines[start + 1:]:
        cells = line.split()
        if len(cells) < 5 or cells[0] != "billing":
            break
        rows[(cells[1], int(cells[2]))] = int(cells[4])
    return rows


def backups(kubeconfig: Path) -> list[BackupRecord]:
    kube = Kube(load_config(kubeconfig))
    try:
        return BackupStore(kube).find(NAMESPACE)
    finally:
        kube.close()
