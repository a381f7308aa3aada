"""The two entry points as users run them, in their own processes: `kafka-offset-operator analyze` and
`spark-submit spark/offset_expiry/job.py`, against Apache Kafka's `__consumer_offsets` seeded with every kind of
record (the `seeded_kafka` fixture, tests/support/seeded_kafka.py). Their JSON equals the reference analysis of the same records; a
run killed mid-way leaves no results file, and a rerun writes it whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from analysis_reference import analyze_records
from seeded_kafka import CHECK_INTERVAL_MS, NOW_MS, RETENTION_MS, Seeded

from kafka_offsets_model.policy import policy_from_yaml

BIN = Path(sys.executable).parent
CLI = str(BIN / "kafka-offset-operator")
SPARK_SUBMIT = str(BIN / "spark-submit")
JOB = str(Path(__file__).parents[3] / "spark" / "offset_expiry" / "job.py")
NOW = "2023-11-14T22:13:20Z"
POLICY = """\
apiVersion: kafkaoffsets.dev/v1alpha1
kind: ConsumerGroupOffsetPolicy
metadata: {name: nightly}
spec:
  groups: {exclude: ["simple-1*"]}
  rules: {emptyGroupRetention: 2d, unsubscribedTopicRetention: 1d, standaloneRetention: 3d, deletedTopics: Delete}
  protect: {groups: ["billing-*"]}
"""


def expected(seeded: Seeded) -> dict[str, Any]:
    report = analyze_records(
        seeded.records,
        policy_from_yaml(POLICY),
        now_ms=NOW_MS,
        retention_ms=RETENTION_MS,  # from the broker's offsets.retention.minutes
        existing_topics=seeded.topics(),
        snapshot=seeded.end_offsets(seeded.records),
    )
    # The report says which now, broker retention and cleanup interval it used.
    used = {
        "now": NOW_MS,
        "brokerRetentionMs": RETENTION_MS,
        "brokerCheckIntervalMs": CHECK_INTERVAL_MS,  # the broker's offsets.retention.check.interval.ms
        "brokerCheckIntervalSource": "broker",
    }
    return {**report, "summary": {**report["summary"], **used}}


@pytest.mark.slow
def test_cli_json_report(seeded_kafka: Seeded, tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            CLI,
            "analyze",
            "--bootstrap-server",
            seeded_kafka.bootstrap_servers,
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
    assert json.loads(out.read_text()) == expected(seeded_kafka)
    assert sorted(os.listdir(tmp_path)) == ["policy.yaml", "report.json"]


@dataclass
class Interrupted:
    command: list[str]  # spark-submit with job.py and its arguments
    env: dict[str, str]
    results: Path  # where the job writes its results
    left_behind: list[str]  # the files in the job's directory once the killed job is gone


@pytest.fixture(scope="module")
def interrupted(seeded_kafka: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Interrupted:
    """`spark-submit job.py` killed while Spark works (its progress shows records being read). Under spark-submit
    the Python driver's stderr reaches us through the JVM's stdout."""
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
        seeded_kafka.bootstrap_servers,
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
    interrupted: Interrupted, seeded_kafka: Seeded
) -> None:
    done = subprocess.run(interrupted.command, capture_output=True, text=True, timeout=600, env=interrupted.env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(interrupted.results.read_text()) == expected(seeded_kafka)
    table = [line for line in done.stdout.splitlines() if not line.startswith("[analyze")]
    assert table[0].startswith("GROUP ")  # the table for people
    assert "deletion candidates among" in done.stdout


@pytest.mark.slow  # six processes
def test_cli_errors_are_one_line(seeded_kafka: Seeded, tmp_path: Path) -> None:
    bootstrap = seeded_kafka.bootstrap_servers
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  standaloneRetention: two days\n")
    cases = [
        (["--bootstrap-server", "127.0.0.1:1"], "cannot connect to Kafka at 127.0.0.1:1"),
        (
            ["--bootstrap-server", bootstrap, "--policy", str(bad)],
            "spec.rules.standaloneRetention: 'two days' is not a duration",
        ),
        (
            ["--bootstrap-server", bootstrap, "--policy", str(tmp_path / "missing.yaml")],
            "--policy: cannot read",
        ),
        (["--bootstrap-server", bootstrap, "--now", "tomorrow"], "--now: 'tomorrow' is not"),
        (
            ["--bootstrap-server", bootstrap, "--broker-retention", "7 days"],
            "--broker-retention: '7 days' is not a duration",
        ),
        (["--bootstrap-server", bootstrap, "--format", "xml"], "invalid choice: 'xml'"),
    ]
    for args, message in cases:
        done = subprocess.run([CLI, "analyze", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, done.stderr)
