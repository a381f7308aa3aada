"""`kafka-offset-operator analyze` and `dump` as a new user runs them, in their own processes (issue 11):
bad arguments and unreachable brokers fail fast in one line, and a real analysis is quiet (no JVM or Spark
noise on stderr), shows its progress in records, warns about regex-looking and unmatched group patterns,
accepts a `spec:`-wrapped policy, and prints a table with a KIND column and a summary saying its `now` and
retention. One Spark run checks all of the latter."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from brokers import sandbox_broker

from kafka_sandbox.synthetic import generate
from offset_expiry.raw import OFFSETS_TOPIC

CLI = str(Path(sys.executable).parent / "kafka-offset-operator")
NOW_MS = 1_700_000_000_000
JVM_NOISE = ("Using incubator modules", "Setting default log level", "To adjust logging level", "log4j", " WARN ", " INFO ")


def cli(*argv: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def test_dump_and_analyze_share_one_connect_check() -> None:
    dumped, dump_s = cli("dump", "--bootstrap-server", "127.0.0.1:1", "--no-follow")
    analyzed, analyze_s = cli("analyze", "--bootstrap-server", "127.0.0.1:1")
    line = "kafka-offset-operator: error: cannot connect to Kafka at 127.0.0.1:1: Connection refused\n"
    assert (dumped.returncode, dumped.stdout, dumped.stderr) == (2, "", line)
    assert (analyzed.returncode, analyzed.stdout, analyzed.stderr) == (2, "", line)
    assert dump_s < 10 and analyze_s < 10  # was 30 s for dump (kafka-python's bootstrap timeout)


def test_a_bad_output_path_fails_before_kafka_and_spark() -> None:
    done, took = cli(
        "analyze", "--bootstrap-server", "127.0.0.1:1", "--format", "json", "--output", "/nonexistent-dir/report.json"
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "kafka-offset-operator: error: --output: directory /nonexistent-dir does not exist\n"
    assert took < 10


POLICY = """\
spec:
  groups:
    exclude: ["^simple-1.*$", "nobody-*"]
  rules: {emptyGroupRetention: 2d}
"""


@pytest.mark.slow
def test_a_real_run_is_quiet_counts_records_and_says_what_it_used(tmp_path: Path) -> None:
    topic = generate(7, groups=30, partitions=2, commits=2, now_ms=NOW_MS)
    (tmp_path / "policy.yaml").write_text(POLICY)
    with sandbox_broker(offsets_retention="5d", offsets_partitions=2) as broker:
        for name in sorted(topic.existing_topics):
            broker.create_topic(name, 1)
        for partition in range(2):
            rows = [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition]
            broker.append_records(OFFSETS_TOPIC, partition, rows)
        done, _ = cli(
            "analyze",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--policy",
            str(tmp_path / "policy.yaml"),
            "--now",
            "2023-11-14T22:13:20Z",
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    stderr = done.stderr.splitlines()
    assert [line for line in stderr if any(noise in line for noise in JVM_NOISE)] == []
    assert "kafka-offset-operator: warning: spec.groups.exclude: '^simple-1.*$' looks like a regular " in done.stderr
    assert "did you mean 'simple-1*'?" in done.stderr
    assert (
        "kafka-offset-operator: warning: spec.groups.exclude: 'nobody-*' matches none of the " in done.stderr
    )
    # stderr is not a terminal here: plain progress lines, in records of the snapshot
    total = len(topic.records)
    assert any(line.startswith("[analyze") and f"/{total} records read" in line for line in stderr), stderr
    assert all(line.startswith(("[analyze", "kafka-offset-operator: warning: ")) for line in stderr), stderr
    table = done.stdout.splitlines()
    assert table[0].split()[:3] == ["GROUP", "KIND", "TOPIC"]
    kinds = {line.split()[1] for line in table[1:] if line and not line[0].isdigit() and " " in line}
    assert "simple" in kinds and "classic" in kinds, kinds
    assert "as of 2023-11-14T22:13:20Z, with a broker offset retention of 5d" in done.stdout
    assert " 1 groups" not in done.stdout
