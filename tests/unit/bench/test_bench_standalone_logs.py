"""bench/analyze.py reads the distributed path's memory and the report's partitions from the JVMs' own logs
(issue 22): if it misread them, docs/performance.md would state an executor's heap or a task result's size
that no run had. These pin its reading on lines as JDK 17's `-Xlog:gc` and Spark's executors write them (taken
from a bench run's logs)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from analyze import executor_log_figures, gc_figures

GC_LOG = """\
[0.003s][info][gc] Using G1
[0.835s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 31M->25M(380M) 48.389ms
[5.275s][info][gc] GC(5) Pause Remark 32M->32M(114M) 19.921ms
[9.100s][info][gc] GC(7) Pause Young (Concurrent Start) (G1 Humongous Allocation) 610M->402M(1024M) 30.1ms
[9.300s][info][gc] GC(8) Concurrent Mark Cycle 120.3ms
[12.00s][info][gc] GC(9) Pause Full (G1 Compaction Pause) 1001M->700M(1024M) 812.0ms
"""

EXECUTOR_LOG = """\
26/11/28 04:21:41 INFO Executor: Finished task 0.0 in stage 0.0 (TID 0). 1956 bytes result sent to driver
26/11/28 04:22:50 INFO Executor: Finished task 3.0 in stage 14.0 (TID 40). 5412230 bytes result sent via BlockManager
26/11/28 04:22:51 INFO Executor: Finished task 4.0 in stage 14.0 (TID 41). 7301004 bytes result sent via BlockManager
26/11/28 04:23:02 INFO Executor: Finished task 0.0 in stage 26.0 (TID 80). 6000000 bytes result sent via BlockManager
26/11/28 04:23:05 ERROR Executor: Exception in task 1.0 in stage 26.0 (TID 81): java.lang.OutOfMemoryError: Java heap space
26/11/28 04:23:11 ERROR CoarseGrainedExecutorBackend: RECEIVED SIGNAL TERM
"""


def test_gc_figures_take_the_peaks_of_every_pause(tmp_path: Path) -> None:
    log = tmp_path / "gc.log"
    log.write_text(GC_LOG)
    assert gc_figures(log) == {"heap_before_mb": 1001.0, "heap_after_mb": 700.0, "heap_committed_mb": 1024.0,
                               "gc_pauses": 4, "full_gcs": 1}


def test_gc_figures_of_a_missing_log_are_zero(tmp_path: Path) -> None:
    assert gc_figures(tmp_path / "absent.log")["gc_pauses"] == 0


def test_executor_logs_give_the_block_manager_results_per_stage_and_the_trouble(tmp_path: Path) -> None:
    executor = tmp_path / "worker-0" / "app-20261128042104-0000" / "0"
    executor.mkdir(parents=True)
    (executor / "stdout").write_text(GC_LOG)
    (executor / "stderr").write_text(EXECUTOR_LOG)
    (tmp_path / "worker-0.log").write_text("the worker's own log: not an executor's\n")
    figures = executor_log_figures(tmp_path)
    assert figures["result_stages"] == {"14.0": [5412230, 7301004], "26.0": [6000000]}
    assert [e["heap_after_mb"] for e in figures["executors"]] == [700.0]
    assert len(figures["executor_trouble"]) == 1  # the OutOfMemoryError; the shutdown's SIGTERM is not trouble
    assert "OutOfMemoryError" in figures["executor_trouble"][0]
