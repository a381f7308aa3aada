"""The Spark job image, built here (scripts/images.sh; on a machine without a registry FROM the stand-in for
the Apache Spark Python image): `spark-submit` in local mode runs job.py from the path the SparkApplication
engine submits, against the sandbox broker, as Spark's user, and its report equals the reference analysis;
and the Job engine's own container command (decisions/kube_job.command: spark-submit with the pod's cores,
heap and start-up settings, then job.py) runs in the image against Apache Kafka (the session's broker, on
loopback: `buildah run --network host`) and writes a report that judges the groups made for it."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from analysis_reference import analyze_records
from brokers import sandbox_broker
from image_harness import Built, build, container, image_config, image_size, missing, run
from kafka_clients import admin_commit
from kafka_under_test import Kafka

from kafka_offset_operator.decisions import kube_job
from kafka_offset_operator.decisions.policy_spec import JobSettings
from kafka_offset_operator.decisions.spark_application import DEFAULT_MAIN_FILE
from kafka_offsets_model.policy import policy_from_yaml
from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox import SandboxBroker
from kafka_sandbox.synthetic import DAY_MS, generate

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

NOW = "2023-11-14T22:13:20Z"
SPARK_RUN_TIMEOUT = 1200  # one local Spark run: ~90 s on an idle 2-core machine, over 10 min at load 20
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
def spark_image() -> Built:
    return build("spark")


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[SandboxBroker, list[RawRecord]]]:
    topic = generate(4242, groups=40, partitions=2, commits=2, now_ms=NOW_MS)
    with sandbox_broker(offsets_retention="5d", offsets_partitions=2) as broker:
        for name in sorted(topic.existing_topics):
            broker.create_topic(name, 1)
        records = []
        for partition in range(2):
            rows = [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition]
            base = broker.append_records(OFFSETS_TOPIC, partition, rows)
            records += [RawRecord(partition, base + i, ts, k, v) for i, (k, v, ts) in enumerate(rows)]
        yield broker, records


def test_job_py_runs_from_the_image_in_local_mode(spark_image: Built, seeded: tuple[SandboxBroker, list[RawRecord]],
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broker, records = seeded
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(work, 0o777)  # Spark's user (185) writes the results here
    (work / "policy.yaml").write_text(POLICY)
    config = image_config(spark_image.image)
    assert config["User"] == "185"
    job = DEFAULT_MAIN_FILE.removeprefix("local://")
    with container(spark_image.image) as ctr:
        # The container's hostname resolves nowhere here (a Pod's does, through /etc/hosts): bind to loopback.
        out = run(ctr, ["env", "SPARK_LOCAL_IP=127.0.0.1", "SPARK_LOCAL_HOSTNAME=localhost", "/opt/spark/bin/spark-submit", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4",
                        job, "--bootstrap-server", broker.bootstrap_servers, "--policy", "/work/policy.yaml",
                        "--now", NOW, "--results", "/work/results.json"],
                  timeout=SPARK_RUN_TIMEOUT, volumes=[(work, "/work")])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    topics = set(broker.call(lambda: broker.ctx.topics.names()))
    snapshot = {p: max(r.offset for r in records if r.partition == p) + 1 for p in range(2)}
    expected = analyze_records(records, policy_from_yaml(POLICY), now_ms=NOW_MS, retention_ms=5 * DAY_MS,
                               existing_topics=topics, snapshot=snapshot)
    # The report says which now, broker retention and cleanup interval it used (as test_entry_points expects).
    used = {"now": NOW_MS, "brokerRetentionMs": 5 * DAY_MS, "brokerCheckIntervalMs": 600_000,
            "brokerCheckIntervalSource": "broker"}
    assert json.loads((work / "results.json").read_text()) == {**expected, "summary": {**expected["summary"], **used}}
    with capsys.disabled():
        print(f"\n{spark_image.image}: {image_size(spark_image.image)}, "
              f"built (or reused) in {spark_image.seconds:.0f} s")


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def test_the_job_engines_command_runs_in_the_image_against_kafka(spark_image: Built, kafka: Kafka, tmp_path: Path) -> None:
    """What a Job's pod runs (the engine's command, default resources: local[1], a 1g heap), with the policy
    and results as files instead of the engine's ConfigMap URLs (no API server in the container here). Two
    standalone groups committed a minute ago; three days on, the unprotected one is a candidate and the
    protected one is kept: a report about this broker, not an empty file."""
    suffix = uuid.uuid4().hex[:8]
    topic, stale, kept = f"img-{suffix}", f"img-stale-{suffix}", f"billing-img-{suffix}"
    kafka.create_topic(topic, 2)
    for group in (stale, kept):
        admin_commit(kafka.bootstrap_servers, group, {(topic, 0): 0, (topic, 1): 0})
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(work, 0o777)  # Spark's user (185) writes the results here
    (work / "policy.yaml").write_text(POLICY)
    # Three days and a minute on: `--now` has whole seconds (iso floors), so exactly three days on from a commit
    # made in the same second fell short of standaloneRetention (3d) by up to 999 ms (seen on a fast machine).
    now = iso(int(time.time() * 1000) + 3 * DAY_MS + 60_000)
    argv = kube_job.command(JobSettings(), DEFAULT_MAIN_FILE, [
        "--bootstrap-server", kafka.bootstrap_servers, "--policy", "/work/policy.yaml",
        "--results", "/work/results.json", "--now", now])
    assert argv[0] == "/opt/spark/bin/spark-submit" and DEFAULT_MAIN_FILE.removeprefix("local://") in argv
    with container(spark_image.image) as ctr:
        # A Pod's hostname resolves (its /etc/hosts); a buildah container's does not: Spark binds to loopback.
        out = run(ctr, ["env", "SPARK_LOCAL_IP=127.0.0.1", "SPARK_LOCAL_HOSTNAME=localhost", *argv],
                  timeout=SPARK_RUN_TIMEOUT, volumes=[(work, "/work")])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads((work / "results.json").read_text())
    ours = {(r["group"], r["partition"]): (r["candidate"], r["reason"]) for r in report["offsets"] if r["topic"] == topic}
    assert ours == {(stale, 0): (True, "Standalone"), (stale, 1): (True, "Standalone"),
                    (kept, 0): (False, "Protected"), (kept, 1): (False, "Protected")}, report
    assert report["summary"]["recordsScanned"] >= 2
