"""The two entry points as users run them, in their own processes: `kafka-offset-operator analyze` and
`spark-submit spark/offset_expiry/job.py`, against the sandbox broker. Their JSON equals the reference
analysis of the same records; a run killed mid-way leaves no results file, and a rerun writes it whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from analysis_reference import analyze_records
from brokers import sandbox_broker

from kafka_offsets_model.policy import policy_from_yaml
from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox import SandboxBroker
from kafka_sandbox.synthetic import DAY_MS, generate

BIN = Path(sys.executable).parent
CLI = str(BIN / "kafka-offset-operator")
SPARK_SUBMIT = str(BIN / "spark-submit")
JOB = str(Path(__file__).parents[3] / "spark" / "offset_expiry" / "job.py")
NOW = "2023-11-14T22:13:20Z"
NOW_MS = 1_700_000_000_000
POLICY = """\
apiVersion: kafkaoffsets.dev/v1alpha1
kind: ConsumerGroupOffsetPolicy
metadata: {name: nightly}
spec:
  groups: {exclude: ["simple-1*"]}
  rules: {emptyGroupRetention: 2d, unsubscribedTopicRetention: 1d, standaloneRetention: 3d, deletedTopics: Delete}
  protect: {groups: ["billing-*"]}
"""


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[SandboxBroker, list[RawRecord]]]:
    topic = generate(4242, groups=80, partitions=3, commits=2, now_ms=NOW_MS)
    with sandbox_broker(offsets_retention="5d", offsets_partitions=3) as broker:
        for name in sorted(topic.existing_topics):
            broker.create_topic(name, 1)
        records = []
        for partition in range(3):
            rows = [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition]
            base = broker.append_records(OFFSETS_TOPIC, partition, rows)
            records += [RawRecord(partition, base + i, ts, k, v) for i, (k, v, ts) in enumerate(rows)]
        yield broker, records


def expected(broker: SandboxBroker, records: list[RawRecord]) -> dict[str, Any]:
    topics = set(broker.call(lambda: broker.ctx.topics.names()))
    snapshot = {p: max(r.offset for r in records if r.partition == p) + 1 for p in range(3)}
    report = analyze_records(
        records,
        policy_from_yaml(POLICY),
        now_ms=NOW_MS,
        retention_ms=5 * DAY_MS,  # from the broker's offsets.retention.minutes
        existing_topics=topics,
        snapshot=snapshot,
    )
    # The report says which now, broker retention and cleanup interval it used.
    used = {
        "now": NOW_MS,
        "brokerRetentionMs": 5 * DAY_MS,
        "brokerCheckIntervalMs": 600_000,  # the sandbox's offsets.retention.check.interval.ms
        "brokerCheckIntervalSource": "broker",
    }
    return {**report, "summary": {**report["summary"], **used}}


@pytest.mark.slow
def test_cli_json_report(seeded: tuple[SandboxBroker, list[RawRecord]], tmp_path: Path) -> None:
    broker, records = seeded
    (tmp_path / "policy.yaml").write_text(POLICY)
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            CLI,
            "analyze",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--policy",
            str(tmp_path / "policy.yaml"),
            "--now",
            NOW,
            "--format",
            "json",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert json.loads(out.read_text()) == expected(broker, records)
    assert sorted(os.listdir(tmp_path)) == ["policy.yaml", "report.json"]


@dataclass
class Interrupted:
    command: list[str]  # spark-submit with job.py and its arguments
    env: dict[str, str]
    results: Path  # where the job writes its results
    left_behind: list[str]  # the files in the job's directory once the killed job is gone


@pytest.fixture(scope="module")
def interrupted(
    seeded: tuple[SandboxBroker, list[RawRecord]], tmp_path_factory: pytest.TempPathFactory
) -> Interrupted:
    """`spark-submit job.py` killed while Spark works (its progress shows records being read). Under spark-submit
    the Python driver's stderr reaches us through the JVM's stdout."""
    broker, _ = seeded
    workdir = tmp_path_factory.mktemp("job")
    (workdir / "policy.yaml").write_text(POLICY)
    results = workdir / "results.json"
    command = [
        SPARK_SUBMIT,
        "--master",
        "local[2]",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        JOB,
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--policy",
        str(workdir / "policy.yaml"),
        "--now",
        NOW,
        "--results",
        str(results),
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    job = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True
    )
    try:
        assert job.stdout is not None
        for line in job.stdout:
            if line.startswith("[analyze") and " records read" in line:
                break
        assert job.poll() is None, "the job ended before it could be interrupted"
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=60)
    return Interrupted(command, env, results, sorted(os.listdir(workdir)))


@pytest.mark.slow
def test_a_killed_spark_submit_job_leaves_no_results(interrupted: Interrupted) -> None:
    assert interrupted.left_behind == ["policy.yaml"]


@pytest.mark.slow
def test_spark_submit_job_rerun_after_a_kill_writes_the_whole_report(
    interrupted: Interrupted, seeded: tuple[SandboxBroker, list[RawRecord]]
) -> None:
    broker, records = seeded
    done = subprocess.run(interrupted.command, capture_output=True, text=True, timeout=600, env=interrupted.env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(interrupted.results.read_text()) == expected(broker, records)
    table = [line for line in done.stdout.splitlines() if not line.startswith("[analyze")]
    assert table[0].startswith("GROUP ")  # the table for people
    assert "deletion candidates among" in done.stdout


@pytest.mark.slow  # six processes
def test_cli_errors_are_one_line(seeded: tuple[SandboxBroker, list[RawRecord]], tmp_path: Path) -> None:
    broker, _ = seeded
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  standaloneRetention: two days\n")
    cases = [
        (["--bootstrap-server", "127.0.0.1:1"], "cannot connect to Kafka at 127.0.0.1:1"),
        (
            ["--bootstrap-server", broker.bootstrap_servers, "--policy", str(bad)],
            "spec.rules.standaloneRetention: 'two days' is not a duration",
        ),
        (
            ["--bootstrap-server", broker.bootstrap_servers, "--policy", str(tmp_path / "missing.yaml")],
            "--policy: cannot read",
        ),
        (["--bootstrap-server", broker.bootstrap_servers, "--now", "tomorrow"], "--now: 'tomorrow' is not"),
        (
            ["--bootstrap-server", broker.bootstrap_servers, "--broker-retention", "7 days"],
            "--broker-retention: '7 days' is not a duration",
        ),
        (["--bootstrap-server", broker.bootstrap_servers, "--format", "xml"], "invalid choice: 'xml'"),
    ]
    for args, message in cases:
        done = subprocess.run([CLI, "analyze", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, done.stderr)
