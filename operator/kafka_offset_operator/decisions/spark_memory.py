"""The memory of the pods an analysis runs in (issue 22): Spark's own rule for a PySpark pod, and what the
analysis' Python workers need beside it. No I/O.

Spark sizes a PySpark pod on Kubernetes as the JVM's heap plus an overhead of max(384 MiB, 0.4 x heap)
(Spark 4.3: BasicDriverFeatureStep and BasicExecutorFeatureStep take the factor 0.4 for a non-JVM application,
ResourceProfile.getResourcesForClusterManager adds max(spark.executor.minMemoryOverhead = 384 MiB, factor x
heap)): 1433 MiB for a 1g executor. That overhead is meant for everything outside the heap, but the JVM alone
uses about 300 MiB of it once its heap is used up (metaspace, code, threads, direct buffers), leaving the
executor's Python workers next to nothing, while ours hold a `__consumer_offsets` partition's assembly or a
batch: at 5M records a 1g executor in a 1433 MiB pod was OOM-killed eight times in a row, and held in a 1945
MiB one and in the 2201 MiB one this rule gives (its processes' anonymous memory at most 1627 and 1644 MiB:
docs/performance.md, "An executor under its pod's limit"). So the operator asks for Spark's overhead plus
PYTHON_WORKER_MIB per core, unless the policy names the overhead itself (`memoryOverhead` of
spec.analysis.sparkApplication.executor or of spec.analysis.job: a bigger topic's Python workers need more, and a
bigger heap need not).
"""

from __future__ import annotations

import re

MIN_OVERHEAD_MIB = 384  # Spark's spark.{driver,executor}.minMemoryOverhead default
NON_JVM_OVERHEAD_FACTOR = 0.4  # Spark's NON_JVM_MEMORY_OVERHEAD_FACTOR (Kubernetes, PySpark and SparkR)
# Per core, beside Spark's overhead: at 5M records a core's Python processes peaked at about 490 MiB (a worker at
# 344, a second one at 56, two daemons at 46 each); a worker grows about 30 MiB per million records up to the
# 12.5M where the readers stop assembling (spark.offsetExpiry.assembleRecords), about 715 MiB by then.
PYTHON_WORKER_MIB = 768
DRIVER_PYTHON_MIB = 256  # the Job engine's pod also holds job.py's Python process (the driver)

_MEMORY = re.compile(r"^([0-9]+)([kmgtKMGT]?)$")
_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024, "": 1}  # Spark: no suffix means MiB


def memory_mib(memory: str) -> int:
    """Spark's notation (512m, 2g; no suffix: MiB) in MiB, at least 1."""
    match = _MEMORY.match(memory)
    if match is None:
        raise ValueError(f"not a Spark memory size: {memory!r}")
    return max(1, int(int(match.group(1)) * _MIB[match.group(2).lower()]))


def spark_overhead_mib(heap_mib: int) -> int:
    """Spark's own overhead for a PySpark pod of this heap."""
    return max(MIN_OVERHEAD_MIB, int(NON_JVM_OVERHEAD_FACTOR * heap_mib))


def executor_overhead_mib(memory: str, cores: int, overhead: str | None = None) -> int:
    """spark.executor.memoryOverhead for a SparkApplication executor of `memory` heap and `cores` cores: the
    policy's `overhead`, else Spark's own and a Python worker's share per core."""
    if overhead is not None:
        return memory_mib(overhead)
    return spark_overhead_mib(memory_mib(memory)) + cores * PYTHON_WORKER_MIB


def executor_pod_mib(memory: str, cores: int, overhead: str | None = None) -> int:
    """An executor pod's memory limit: the heap and executor_overhead_mib (as Spark sizes the pod from them)."""
    return memory_mib(memory) + executor_overhead_mib(memory, cores, overhead)


def job_pod_mib(memory: str, cores: int, overhead: str | None = None) -> int:
    """The Job engine's pod (spark-submit in local mode: driver, executor and `cores` Python workers in one
    pod): the heap and the policy's `overhead`, else Spark's overhead for a PySpark driver, the Python workers
    and job.py's own process."""
    heap = memory_mib(memory)
    if overhead is not None:
        return heap + memory_mib(overhead)
    return heap + spark_overhead_mib(heap) + cores * PYTHON_WORKER_MIB + DRIVER_PYTHON_MIB
