"""`kafka-offset-operator analyze` and `dump` as a new user runs them, in their own processes (issue 11):
bad arguments and unreachable brokers fail fast in one line, and a real analysis is quiet (no JVM or Spark
noise on stderr), shows its progress in records, warns about regex-looking and unmatched group patterns,
accepts a `spec:`-wrapped policy, and prints a table with a KIND column and a summary saying its `now` and
retention. One Spark run checks all of the latter, on Apache Kafka's own `__consumer_offsets` (the `kafka`
fixture: groups made by kafka-python, the records written by Kafka's group coordinator; the sandbox with
KOO_KAFKA_VERSIONS=sandbox)."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from brokers import make_topics
from kafka import KafkaConsumer, TopicPartition
from kafka_clients import admin_commit, empty_group
from kafka_under_test import Kafka

from kafka_offsets_model.raw import OFFSETS_TOPIC

CLI = str(Path(sys.executable).parent / "kafka-offset-operator")
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
    # under the bootstrap timeout it used to wait out (kafka-python's 30 s); a loaded CI worker took 14 s
    assert dump_s < 25 and analyze_s < 25


def test_a_bad_output_path_fails_before_kafka_and_spark() -> None:
    done, took = cli(
        "analyze", "--bootstrap-server", "127.0.0.1:1", "--format", "json", "--output", "/nonexistent-dir/report.json"
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "kafka-offset-operator: error: --output: directory /nonexistent-dir does not exist\n"
    assert took < 25  # the message says Kafka was not reached (it is refused there); no Spark start either


POLICY = """\
spec:
  groups:
    exclude: ["^simple-1.*$", "nobody-*"]
  rules: {emptyGroupRetention: 2d}
"""


def offsets_topic_records(bootstrap: str) -> int:
    """How many records `__consumer_offsets` holds now (log end - log start of each partition, as Kafka's
    ListOffsets says): what a snapshot of it reads."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(OFFSETS_TOPIC, p) for p in consumer.partitions_for_topic(OFFSETS_TOPIC) or ()]
        starts, ends = consumer.beginning_offsets(partitions), consumer.end_offsets(partitions)
        return sum(ends[tp] - starts[tp] for tp in partitions)
    finally:
        consumer.close()


@pytest.mark.slow
def test_a_real_run_is_quiet_counts_records_and_says_what_it_used(kafka: Kafka, tmp_path: Path) -> None:
    make_topics(kafka, {"orders": 2, "payments": 1})
    for group in ("reporting-1", "reporting-2"):  # classic groups that joined, committed and left
        empty_group(kafka.bootstrap_servers, group, {("orders", 0): 3, ("orders", 1): 4})
    for group in ("simple-10", "simple-2"):  # standalone commits: simple groups
        admin_commit(kafka.bootstrap_servers, group, {("payments", 0): 2})
    (tmp_path / "policy.yaml").write_text(POLICY)
    now = (datetime.now(UTC) + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")  # the empty groups are due
    total = offsets_topic_records(kafka.bootstrap_servers)
    done, _ = cli(
        "analyze",
        "--bootstrap-server",
        kafka.bootstrap_servers,
        "--policy",
        str(tmp_path / "policy.yaml"),
        "--now",
        now,
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
    assert any(line.startswith("[analyze") and f"/{total} records read" in line for line in stderr), stderr
    assert all(line.startswith(("[analyze", "kafka-offset-operator: warning: ")) for line in stderr), stderr
    table = done.stdout.splitlines()
    assert table[0].split()[:3] == ["GROUP", "KIND", "TOPIC"]
    kinds = {line.split()[1] for line in table[1:] if line and not line[0].isdigit() and " " in line}
    assert "simple" in kinds and "classic" in kinds, kinds
    assert f"as of {now}, with a broker offset retention of 7d" in done.stdout  # Kafka's default, asked
    assert f"scanned {total} records" in done.stdout
    assert " 1 groups" not in done.stdout
