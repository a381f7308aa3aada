"""The Spark job image, built here (scripts/images.sh; on a machine without a registry FROM the stand-in for
the Apache Spark Python image): `spark-submit` in local mode runs job.py from the path the SparkApplication
engine submits, against the sandbox broker, as Spark's user, and its report equals the reference analysis."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from analysis_reference import analyze_records
from brokers import sandbox_broker
from image_harness import Built, build, container, image_config, image_size, missing, run

from kafka_offset_operator.decisions.spark_application import DEFAULT_MAIN_FILE
from kafka_offsets_model.policy import policy_from_yaml
from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox import SandboxBroker
from kafka_sandbox.synthetic import DAY_MS, generate

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

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
                  timeout=600, volumes=[(work, "/work")])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    topics = set(broker.call(lambda: broker.ctx.topics.names()))
    snapshot = {p: max(r.offset for r in records if r.partition == p) + 1 for p in range(2)}
    expected = analyze_records(records, policy_from_yaml(POLICY), now_ms=NOW_MS, retention_ms=5 * DAY_MS,
                               existing_topics=topics, snapshot=snapshot)
    assert json.loads((work / "results.json").read_text()) == expected
    with capsys.disabled():
        print(f"\n{spark_image.image}: {image_size(spark_image.image)}, "
              f"built (or reused) in {spark_image.seconds:.0f} s")
