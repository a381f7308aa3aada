"""The distributed path (issue 22): `job.py` through `spark-submit --master spark://...` on a Spark standalone
cluster of two workers on loopback (tests/support/spark_standalone.py), against the same seeded
`__consumer_offsets` as local mode. Outside local mode the job takes its other code paths (the report sorted
across partitions sized by the report and streamed to the driver a partition at a time, the assembled rows
cached: docs/performance.md); the report must be the same, byte for byte, and both workers must have run
executors. The report's partition budget (pipeline.REPORT_PARTITION_BYTES_CONF) is set to 16 KiB so that this
small report spans a dozen partitions, as a million records span dozens of 8 MB ones: their order across
partitions is the report's.

The broker is Apache Kafka with `__consumer_offsets` seeded once and then only read (the `seeded_kafka` fixture,
tests/support/seeded_kafka.py), so both runs read the same records; the job reads them over Kafka's wire protocol.
The arguments are those the SparkApplication engine gives
(spark_application.run_arguments: --bootstrap-server, --policy, --results, --broker-retention, --now), with
files where the engine names ConfigMaps.

The local report is job.py's `main` with the same arguments in this process, on the suite's warm local session
(the `spark` fixture: local[2], four shuffle partitions, what `spark-submit --master local[2]` ran before): the
same entry point's code and local mode's code paths, without a second cold Spark of its own (a minute or more of
CPU on CI). The cluster run stays a real `spark-submit` of job.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from seeded_kafka import Seeded
from spark_standalone import Standalone, daemon_env, standalone_cluster

from offset_expiry.pipeline import LINE_BYTES_BESIDES_NAMES, REPORT_PARTITION_BYTES_CONF

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JOB = str(Path(__file__).parents[3] / "spark" / "offset_expiry" / "job.py")
NOW = "2023-11-14T22:13:20Z"
BUDGET = 16 << 10  # the report's partitions: about 50 rows each, several for this report
POLICY = """\
apiVersion: kafkaoffsets.dev/v1alpha1
kind: ConsumerGroupOffsetPolicy
metadata: {name: distributed}
spec:
  groups: {exclude: ["simple-1*"]}
  rules: {emptyGroupRetention: 2d, unsubscribedTopicRetention: 1d, standaloneRetention: 3d, deletedTopics: Delete}
  protect: {groups: ["billing-*"]}
"""


def _arguments(broker: Seeded, workdir: Path, results: Path) -> list[str]:
    (workdir / "policy.yaml").write_text(POLICY)
    return ["--bootstrap-server", broker.bootstrap_servers, "--policy", str(workdir / "policy.yaml"),
            "--results", str(results), "--broker-retention", "5d", "--now", NOW]


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=daemon_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def _rows(report: Path) -> list[str]:
    """The report's offset rows, one JSON object each, in the report's order."""
    return [line.strip().rstrip(",") for line in report.read_text().splitlines() if line.startswith('  {"group":')]


@pytest.fixture(scope="module")
def local_report(seeded_kafka: Seeded, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from offset_expiry.job import main  # its SparkSession.builder.getOrCreate() gives `spark`, already active

    workdir = tmp_path_factory.mktemp("local")
    results = workdir / "results.json"
    assert main(_arguments(seeded_kafka, workdir, results)) == 0
    assert spark.sparkContext.master == "local[2]"
    return results


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=2) as c:
        yield c


@pytest.mark.slow
def test_a_standalone_cluster_of_two_workers_writes_the_local_report(
    seeded_kafka: Seeded, local_report: Path, cluster: Standalone, tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    budget = {REPORT_PARTITION_BYTES_CONF: str(BUDGET)}
    _run(cluster.submit_command(JOB, _arguments(seeded_kafka, tmp_path, results), conf=budget))
    assert results.read_bytes() == local_report.read_bytes()
    rows = _rows(results)
    # Rows, not only a summary, and (by the estimate write_rows sizes them with) more than a few partitions.
    assert len(rows) * LINE_BYTES_BESIDES_NAMES > 8 * BUDGET, len(rows)
    # Both workers ran executors of the application (the work directory of each holds one).
    ran = [sorted(p.name for p in (cluster.logs / f"worker-{i}").iterdir()) for i in range(cluster.workers)]
    assert all(any(name.startswith("app-") for name in names) for names in ran), ran
