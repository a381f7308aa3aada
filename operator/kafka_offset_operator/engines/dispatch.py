"""The two analysis engines behind one call, `run(job, cancel) -> Report`, blocking (reconcilers call it in
a thread) and cancellable (`cancel.is_set()` is polled; a deleted policy or a stopping operator sets it):

- Local: the process-wide warm Spark worker (engines/local.py);
- SparkApplication: a run on spark-operator in the cluster (engines/spark_application.py).
"""

from __future__ import annotations

from ..decisions.policy_spec import Engine
from ..model.report import Report
from .job import CancelFlag, Job
from .local import run_local
from .spark_application import SparkApplicationEngine


def run(job: Job, cancel: CancelFlag, spark: SparkApplicationEngine) -> Report:
    if job.spec.engine is Engine.SPARK_APPLICATION:
        return spark.run(job, cancel)
    return run_local(job, cancel)
