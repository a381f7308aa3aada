"""The three analysis engines behind one call, `run(job, cancel) -> Report`, blocking (reconcilers call it
in a thread) and cancellable (`cancel.is_set()` is polled; a deleted policy or a stopping operator sets it):

- Local: the process-wide warm Spark worker (engines/local.py), imported only when a policy uses it (the
  operator image has no Spark: `pip install kafka-offset-operator[spark]` brings it);
- Job: a Kubernetes Job running the Spark job image in local mode (engines/kube_job.py);
- SparkApplication: a run on spark-operator in the cluster (engines/spark_application.py).
"""

from __future__ import annotations

import importlib.util

from ..decisions.policy_spec import Engine
from ..model.reasons import Reason
from ..model.report import Report
from .in_cluster import InClusterEngine
from .job import AnalysisFailed, CancelFlag, Job


def run(job: Job, cancel: CancelFlag, spark: InClusterEngine, kube_job: InClusterEngine) -> Report:
    if job.spec.engine is Engine.SPARK_APPLICATION:
        return spark.run(job, cancel)
    if job.spec.engine is Engine.JOB:
        return kube_job.run(job, cancel)
    if not spark_installed():
        raise AnalysisFailed(Reason.INVALID_SPEC, "spec.analysis.engine: Local runs PySpark inside the operator, and this "
                             "operator has none (its image is the operator only; pip install "
                             "'kafka-offset-operator[spark]' adds it): use Job or SparkApplication")
    from .local import run_local  # Spark only where the Local engine runs

    return run_local(job, cancel)


def spark_installed() -> bool:
    """Whether the Local engine can run here: PySpark installed (the `spark` extra), and importable."""
    try:
        return importlib.util.find_spec("pyspark") is not None
    except ImportError:  # a broken install (or a finder that refuses it)
        return False
