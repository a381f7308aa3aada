"""Kafka's own command-line tools from the jars real_kafka resolves, as oracles: what
`kafka-consumer-groups.sh` (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand, artifact kafka-tools)
answers on the same cluster is what our commands must answer, or docs/offset-reset.md says why not."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from real_kafka import classpath, resolve

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


def kafka_tool(version: str, main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's tools as kafka-run-class.sh does (every jar of libs/), quietly (log4j at WARN)."""
    return subprocess.run(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dlog4j2.level=WARN",
         "-cp", classpath(resolve(version)), main, *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def reset_dry_run(version: str, bootstrap: str, group: str, *args: str, command_config: Path | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """`kafka-consumer-groups --reset-offsets --dry-run` of `group`, as it ran (exit code, stdout, stderr)."""
    extra = ["--command-config", str(command_config)] if command_config else []
    return kafka_tool(version, CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--group", group,
                      "--reset-offsets", "--dry-run", *args, *extra)


def reset_export(version: str, bootstrap: str, group: str, *args: str) -> list[str]:
    """`--reset-offsets --dry-run --export`: the CSV lines Kafka's tool prints instead of its table (its clamping
    warnings, "New offset (…) is higher than latest offset…", go to the same stdout and are left out)."""
    done = reset_dry_run(version, bootstrap, group, *args, "--export")
    if done.returncode != 0:
        raise AssertionError(f"ConsumerGroupCommand refused {args}: {(done.stdout + done.stderr).strip()[-800:]}")
    return [line for line in done.stdout.splitlines() if re.fullmatch(r"[^,\s]+(,[^,\s]+)?,\d+,-?\d+", line.strip())]


def reset_plan(version: str, bootstrap: str, group: str, *args: str, command_config: Path | None = None
               ) -> dict[tuple[str, int], int]:
    """`kafka-consumer-groups --reset-offsets --dry-run` of `group`: NEW-OFFSET per (topic, partition).
    Raises AssertionError with the tool's words when it refuses."""
    done = reset_dry_run(version, bootstrap, group, *args, command_config=command_config)
    if done.returncode != 0:
        raise AssertionError(f"ConsumerGroupCommand refused {args}: {(done.stdout + done.stderr).strip()[-800:]}")
    rows: dict[tuple[str, int], int] = {}
    for line in done.stdout.splitlines():
        cells = line.split()
        if len(cells) == 4 and cells[0] == group and cells[2].isdigit():
            rows[(cells[1], int(cells[2]))] = int(cells[3])
    return rows
