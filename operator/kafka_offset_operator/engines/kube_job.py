"""The Job engine: a `batch/v1` Job per run (or per shared run) that runs the Spark job image in local mode
in its own pod of the policy's namespace (decisions/kube_job.py), run by the in-cluster engines' common code
(engines/in_cluster.py): the same result hand-back, scan sharing and adoption after a restart as the
SparkApplication engine. The operator's memory does not grow with `__consumer_offsets`: the scan's does, in
the Job's pod, under its own limit."""

from __future__ import annotations

from ..adapters.kube import Kube
from ..decisions import kube_job
from ..model.reasons import Reason
from .in_cluster import InClusterEngine, InClusterWorkload


def workload(main_file: str) -> InClusterWorkload:
    return InClusterWorkload(
        kind="Job", group=kube_job.JOB_GROUP, version=kube_job.JOB_VERSION, plural=kube_job.JOB_PLURAL,
        image_field="spec.analysis.job.image", image_of=lambda spec: spec.job.image,
        manifest=lambda body, owner, spec, settings, run_id, image, retention_ms: kube_job.manifest(
            body, owner, spec, settings, run_id, image=image, main_file=main_file, retention_ms=retention_ms),
        batch_manifest=lambda runs, spec, settings, run_id, key, image: kube_job.batch_manifest(
            runs, spec, settings, run_id, key, image=image, main_file=main_file),
        batch_key=kube_job.batch_key, state_of=kube_job.state_of, failure=kube_job.failure,
        failed_reason=Reason.ANALYSIS_JOB_FAILED, propagation="Background",
    )


class JobEngine(InClusterEngine):
    def __init__(self, kube: Kube, default_image: str | None, main_file: str, poll_s: float) -> None:
        super().__init__(kube, workload(main_file), default_image, poll_s)
