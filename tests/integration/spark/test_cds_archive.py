"""A cold Spark start maps the class-data-sharing archive of Spark's classpath (issue 22, offset_expiry.jvm_cds):
the first process that finds none writes it at its JVM's exit, the next one's driver JVM loads Spark's classes
from it (the JVM's own class-loading log says where each class came from), and a run with an unusable archive
still runs. Each process is a real `local_session`, as the CLI starts it, and no more: the archive is written and
mapped by the driver JVM's start (Spark's classpath, SparkContext and the session), so a job would add the cost
of Python workers and a plan and prove nothing more about the archive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN = """\
from offset_expiry.session import local_session
spark = local_session("cds-test", cores=1)
assert spark.sparkContext.defaultParallelism == 1 and spark.version  # the JVM is up and answers
print("ran")
"""


def _run(cache: Path, logs: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KOO_SPARK_CDS_DIR": str(cache), "KOO_SPARK_CDS": "1", "PYSPARK_PYTHON": sys.executable}
    if logs is not None:  # every JVM started (Spark's launcher, the driver) logs its class loading, one file each
        env["JDK_JAVA_OPTIONS"] = f"-Xlog:class+load=info:file={logs}/classes.%p.log"
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ran", done.stderr[-3000:]
    return done


def _spark_context_source(logs: Path) -> str:
    for log in logs.glob("classes.*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if " org.apache.spark.SparkContext source: " in line:
                return line.split(" source: ", 1)[1]
    raise AssertionError(f"no driver JVM class-loading log in {sorted(os.listdir(logs))}")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive the first cold run wrote into an empty cache."""
    cache = tmp_path_factory.mktemp("cds")
    _run(cache)
    [archive] = list(cache.iterdir())
    return archive


@pytest.mark.slow
def test_the_first_run_writes_the_archive_and_the_next_maps_it(written: Path, tmp_path: Path) -> None:
    assert written.suffix == ".jsa" and written.stat().st_size > 10_000_000  # Spark's classes, not a stub
    _run(written.parent, tmp_path)
    assert _spark_context_source(tmp_path) == "shared objects file (top)"  # the dynamic archive, over the JDK's
    assert sorted(p.name for p in written.parent.iterdir()) == [written.name]  # used, not written again


@pytest.mark.slow
def test_an_archive_the_jvm_refuses_leaves_the_run_alone(written: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cds"
    cache.mkdir()
    (cache / written.name).write_bytes(b"not an archive" * 1000)
    logs = tmp_path / "logs"
    logs.mkdir()
    _run(cache, logs)
    assert _spark_context_source(logs) != "shared objects file (top)"
