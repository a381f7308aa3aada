"""The SparkApplication engine: creates the policy ConfigMap and the SparkApplication
(decisions/spark_application.py), watches `status.applicationState.state`, reads the result ConfigMaps, and
cleans up. A deleted policy deletes its running application; a stopping operator leaves it running, and the
next operator adopts it (a run found in the cluster when a policy's worker starts is watched, not started
again). Blocking (reconcilers call it in a thread) and cancellable (`cancel.is_set()` is polled).
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import kopf
import yaml

from offset_expiry import results_sink

from ..adapters.kube import Kube, NotFound, owner_reference
from ..decisions import spark_application as sparkapp
from ..model.api import POLICY_LABEL
from ..model.reasons import Reason
from ..model.report import Report, ReportError, from_rows
from .job import AnalysisFailed, CancelFlag, Cancelled, Job, new_run_id

DEFAULT_IMAGE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"


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
                raise AnalysisFailed(Reason.SPARK_APPLICATION_FAILED, f"SparkApplication {name} was deleted while it ran") from None
            state = sparkapp.state_of(app)
            if state.phase is sparkapp.Phase.COMPLETED:
                try:
                    return self._results(namespace, name)
                finally:
                    self._cleanup(namespace, name)
            if state.phase is sparkapp.Phase.FAILED:
                self._cleanup_configmaps(namespace, name)  # the app stays for its logs until the next run
                raise AnalysisFailed(Reason.SPARK_APPLICATION_FAILED, f"SparkApplication {name} {state.state}: {state.message}")
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
            raise AnalysisFailed(Reason.INVALID_SPEC, "spec.analysis.sparkApplication.image: is required (the operator has "
                                 f"no default image: set {DEFAULT_IMAGE_ENV})")
        run_id = new_run_id()
        body = sparkapp.manifest(job.policy_body, owner_reference(job.policy_body), job.spec, job.settings, run_id, image=image,
                                 main_file=self.main_file, retention_ms=job.retention_ms)
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
            raise AnalysisFailed(Reason.SPARK_APPLICATION_FAILED, f"SparkApplication {app} completed without usable results "
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
