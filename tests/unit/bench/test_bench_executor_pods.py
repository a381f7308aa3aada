"""bench/analyze.py's `--executor-pod-memory` (issue 22): each executor of the standalone cluster, with its
Python workers, under the memory limit its pod would have, in a memory cgroup of its own
(tests/support/spark_standalone.py's ExecutorPods). If the figures misread the kernel's files,
docs/performance.md would state a kill or a peak that no run had. The cgroup here is a plain directory laid out
as cgroup v1's memory controller lays it out; the workers' `java`, which moves an executor into its cgroup,
starts processes and is held in tests/integration/spark/test_executor_pods.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "support"))

from spark_standalone import ExecutorPods, own_memory_cgroup

from analyze import pod_memory
from kafka_offset_operator.decisions import spark_memory


@pytest.fixture
def pods(tmp_path: Path) -> ExecutorPods:
    root = tmp_path / "cgroup" / "koo-executors-test"
    root.mkdir(parents=True)
    return ExecutorPods(root, 1433, tmp_path / "java-home")


def test_the_figures_are_the_kernels_and_the_sampled_peaks(pods: ExecutorPods) -> None:
    pod = pods.root / "executor-42"
    pod.mkdir()
    mib = 2**20

    def charge(usage: int, inactive_file: int, rss: int) -> None:
        (pod / "memory.usage_in_bytes").write_text(f"{usage * mib}\n")
        (pod / "memory.stat").write_text(f"cache 0\nrss {rss * mib}\ntotal_rss {rss * mib}\n"
                                         f"total_inactive_file {inactive_file * mib}\n")

    charge(1000, 100, 800)
    pods.sample()
    charge(1400, 500, 850)  # more charged, but most of it page cache the kernel can take back
    pods.sample()
    (pod / "memory.max_usage_in_bytes").write_text(f"{1433 * mib}\n")
    (pod / "memory.failcnt").write_text("37\n")
    (pod / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert pods.figures() == [{"pod": "executor-42", "limit_mib": 1433, "max_usage_mib": 1433.0,
                               "working_set_peak_mib": 900.0, "rss_peak_mib": 850.0, "failcnt": 37, "oom_kills": 1}]


def test_this_process_memory_cgroup_is_found_under_the_mount(tmp_path: Path) -> None:
    found = own_memory_cgroup(tmp_path)
    assert found == tmp_path or tmp_path in found.parents


def test_pod_sizes_by_name_or_number() -> None:
    assert pod_memory("spark", 1024) == 1433  # Spark's own: 1024 + max(384, int(0.4 x 1024))
    assert pod_memory("operator", 1024) == spark_memory.executor_pod_mib("1g", 1)
    assert pod_memory("2048", 1024) == 2048
    for bad in ("1024", "-5", "lots"):
        with pytest.raises(ValueError, match="--executor-pod-memory"):
            pod_memory(bad, 1024)


def test_the_pods_and_their_root_are_removed_once_empty(pods: ExecutorPods) -> None:
    (pods.root / "executor-7").mkdir()
    pods.remove(timeout_s=1)
    assert not pods.root.exists()
    assert os.listdir(pods.root.parent) == []
