"""The two analysis engines behind one call, `run(job, cancel) -> Report`, blocking (handlers call it in a
thread) and cancellable (`cancel.is_set()` is polled; a deleted policy or a stopping operator sets it).

- Local: the process-wide warm Spark worker (policy/local_engine.py).
- SparkApplication: creates the policy ConfigMap and the SparkApplication (policy/spark_application.py),
  watches `status.applicationState.state`, reads the result ConfigMaps, and cleans up. A deleted policy
  deletes its running application; a stopping operator leaves it running, and the next operator adopts it
  (a run found in the cluster when a policy's worker starts is watched, not started again).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kopf
import yaml

from offset_expiry import results_sink

from ..kafka_admin import ConnectionSettings, write_private_files
from ..policy import spark_application as sparkapp
from ..policy.local_engine import AnalysisFailed, CancelFlag, Cancelled, LocalRequest, shared_engine
from ..policy.plan import POLICY_LABEL, owner_reference
from ..policy.results import Report, ReportError, from_rows
from ..policy.spec import Engine, PolicySpec
from .kube import Kube, NotFound

DEFAULT_IMAGE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"
MAIN_FILE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_MAIN_FILE"


@dataclass(frozen=True)
class Job:
    """One analysis run of one policy."""

    policy_body: Mapping[str, Any]
    spec: PolicySpec
    settings: ConnectionSettings
    retention_ms: int
    now_ms: int | None  # None: the time the snapshot is taken


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def client_settings(settings: ConnectionSettings, tls_paths: Mapping[str, str]) -> dict[str, str]:
    """kafka-python settings for the analysis' own clients (secrets included: for the worker's stdin only)."""
    out = {"security_protocol": settings.security_protocol}
    if settings.sasl_mechanism:
        out["sasl_mechanism"] = settings.sasl_mechanism
        out["sasl_plain_username"] = settings.username or ""
        out["sasl_plain_password"] = str.__str__(settings.password) if settings.password else ""
    out.update(tls_paths)
    return out


def run_local(job: Job, cancel: CancelFlag) -> Report:
    tmpdir, paths = (None, {}) if job.settings.tls is None else write_private_files(job.settings.tls)
    try:
        request = LocalRequest(
            run_id=new_run_id(),
            bootstrap_servers=job.settings.bootstrap_servers,
            policy=job.spec.analysis_spec,
            client_settings=client_settings(job.settings, paths),
            now_ms=job.now_ms,
            retention_ms=job.retention_ms,
        )
        return shared_engine().run(request, cancel)
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


class SparkApplicationEngine:
    def __init__(self, kube: Kube, default_image: str | None, main_file: str, poll_s: float) -> None:
        self.kube = kube
        self.default_image = default_image
        self.main_file = main_file
        self.poll_s = poll_s

    def run(self, job: Job, cancel: CancelFlag) -> Report:
        meta = job.policy_body["metadata"]
        namespace, policy = meta["namespace"], meta["name"]
        app = self._adopt(namespace, policy) or self._submit(job)
        name = app["metadata"]["name"]
        while True:
            if cancel.is_set():
                if not operator_leaving(cancel):  # the policy is gone: so is its run
                    self._cleanup(namespace, name)
                raise Cancelled()  # an operator restart adopts the run still going (see _adopt)
            try:
                app = self.kube.get_object(sparkapp.SPARK_GROUP, sparkapp.SPARK_VERSION, sparkapp.SPARK_PLURAL, namespace, name)
            except NotFound:
                raise AnalysisFailed("SparkApplicationFailed", f"SparkApplication {name} was deleted while it ran") from None
            state = sparkapp.state_of(app)
            if state.phase is sparkapp.Phase.COMPLETED:
                try:
                    return self._results(namespace, name)
                finally:
                    self._cleanup(namespace, name)
            if state.phase is sparkapp.Phase.FAILED:
                self._cleanup_configmaps(namespace, name)  # the app stays for its logs until the next run
                raise AnalysisFailed("SparkApplicationFailed", f"SparkApplication {name} {state.state}: {state.message}")
            time.sleep(self.poll_s)

    def _adopt(self, namespace: str, policy: str) -> dict[str, Any] | None:
        """A run of this policy still going (the operator restarted); finished leftovers are removed."""
        apps = self.kube.list_objects(sparkapp.SPARK_GROUP, sparkapp.SPARK_VERSION, sparkapp.SPARK_PLURAL, namespace,
                                      {POLICY_LABEL: policy})
        found = None
        for app in sorted(apps, key=lambda a: a["metadata"].get("creationTimestamp") or ""):
            if sparkapp.state_of(app).phase is sparkapp.Phase.RUNNING and found is None:
                found = app
            else:
                self._cleanup(namespace, app["metadata"]["name"])
        return found

    def _submit(self, job: Job) -> dict[str, Any]:
        image = job.spec.spark.image or self.default_image
        if not image:
            raise AnalysisFailed("InvalidSpec", "spec.analysis.sparkApplication.image: is required (the operator has "
                                 f"no default image: set {DEFAULT_IMAGE_ENV})")
        run_id = new_run_id()
        body = sparkapp.manifest(job.policy_body, job.spec, run_id, image=image, main_file=self.main_file,
                                 retention_ms=job.retention_ms, now_ms=job.now_ms)
        meta = body["metadata"]
        policy_text = yaml.safe_dump(dict(job.spec.analysis_spec), sort_keys=False).encode()
        self.kube.put_configmap_binary(meta["namespace"], sparkapp.policy_configmap_name(meta["name"]),
                                       results_sink.POLICY_KEY, policy_text, owner_reference(job.policy_body),
                                       meta["labels"])
        created = self.kube.create_object(sparkapp.SPARK_GROUP, sparkapp.SPARK_VERSION, sparkapp.SPARK_PLURAL,
                                          meta["namespace"], body)
        return created or body

    def _results(self, namespace: str, app: str) -> Report:
        name = sparkapp.results_configmap_name(app)
        try:
            manifest = json.loads(self.kube.get_configmap_binary(namespace, name, results_sink.MANIFEST_KEY))
            parts = [self.kube.get_configmap_binary(namespace, f"{name}-part-{i}", results_sink.PART_KEY)
                     for i in range(int(manifest["parts"]))]
            doc = results_sink.assemble(manifest, parts)
            return from_rows(doc.get("summary") or {}, doc.get("offsets") or [])
        except (NotFound, ValueError, KeyError, ReportError) as exc:
            raise AnalysisFailed("SparkApplicationFailed", f"SparkApplication {app} completed without usable results "
                                 f"in ConfigMap {name}: {exc}") from None

    def _cleanup_configmaps(self, namespace: str, app: str) -> None:
        """The run's ConfigMaps, by name (no `list` permission needed): the parts are numbered from 0."""
        self.kube.delete_configmap(namespace, sparkapp.policy_configmap_name(app))
        results = sparkapp.results_configmap_name(app)
        part = 0
        while self.kube.delete_configmap(namespace, f"{results}-part-{part}"):
            part += 1
        self.kube.delete_configmap(namespace, results)

    def _cleanup(self, namespace: str, app: str) -> None:
        with contextlib.suppress(NotFound):
            self.kube.delete_object(sparkapp.SPARK_GROUP, sparkapp.SPARK_VERSION, sparkapp.SPARK_PLURAL, namespace, app)
        self._cleanup_configmaps(namespace, app)


def operator_leaving(cancel: CancelFlag) -> bool:
    """Whether the operator stops or pauses (rather than the policy being deleted): Kopf's daemon flag says."""
    reason = getattr(cancel, "reason", None)
    if reason is None:
        return False
    leaving = kopf.DaemonStoppingReason.OPERATOR_EXITING | kopf.DaemonStoppingReason.OPERATOR_PAUSING
    return bool(reason & leaving) and not reason & kopf.DaemonStoppingReason.RESOURCE_DELETED


def run(job: Job, cancel: CancelFlag, spark: SparkApplicationEngine) -> Report:
    if job.spec.engine is Engine.SPARK_APPLICATION:
        return spark.run(job, cancel)
    return run_local(job, cancel)
