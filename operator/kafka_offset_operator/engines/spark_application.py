"""The SparkApplication engine: a `sparkoperator.k8s.io/v1beta2` SparkApplication per run (or per shared run)
on kubeflow spark-operator (decisions/spark_application.py), run by the in-cluster engines' common code
(engines/in_cluster.py)."""

from __future__ import annotations

from ..adapters.kube import Kube
from ..decisions import spark_application as sparkapp
from ..model.reasons import Reason
from .in_cluster import DEFAULT_IMAGE_ENV, InClusterEngine, InClusterWorkload, operator_leaving, shared_owner

__all__ = ["DEFAULT_IMAGE_ENV", "SparkApplicationEngine", "operator_leaving", "shared_owner", "workload"]


def _failure(name: str, state: sparkapp.AppState, _spec: object) -> tuple[Reason, str]:
    return Reason.SPARK_APPLICATION_FAILED, f"SparkApplication {name} {state.state}: {state.message}"


def workload(main_file: str) -> InClusterWorkload:
    return InClusterWorkload(
        kind="SparkApplication", group=sparkapp.SPARK_GROUP, version=sparkapp.SPARK_VERSION,
        plural=sparkapp.SPARK_PLURAL, image_field="spec.analysis.sparkApplication.image",
        image_of=lambda spec: spec.spark.image,
        manifest=lambda body, owner, spec, settings, run_id, image, retention_ms: sparkapp.manifest(
            body, owner, spec, settings, run_id, image=image, main_file=main_file, retention_ms=retention_ms),
        batch_manifest=lambda runs, spec, settings, run_id, key, image: sparkapp.batch_manifest(
            runs, spec, settings, run_id, key, image=image, main_file=main_file),
        batch_key=sparkapp.batch_key, state_of=sparkapp.state_of, failure=_failure,
        failed_reason=Reason.SPARK_APPLICATION_FAILED,
    )


class SparkApplicationEngine(InClusterEngine):
    def __init__(self, kube: Kube, default_image: str | None, main_file: str, poll_s: float) -> None:
        super().__init__(kube, workload(main_file), default_image, poll_s)
