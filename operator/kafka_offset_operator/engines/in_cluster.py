"""The in-cluster engines' common run: a workload object per run (a SparkApplication on spark-operator, or a
Kubernetes Job: `InClusterWorkload` says which, and how to build it and read its state) that runs job.py, the policy
in a ConfigMap, results handed back in ConfigMaps (offset_expiry/results_sink.py). The engine creates the
policy ConfigMap and the object, watches its state, reads the result ConfigMaps, and cleans up. A deleted
policy deletes its running object; a stopping operator leaves it running, and the next operator adopts it
(a run found in the cluster when a policy's worker starts is watched, not started again). Blocking
(reconcilers call it in a thread) and cancellable (`cancel.is_set()` is polled).

Shared runs (issue 12), for runs given a `share_key`: they wait in a queue, and a dispatcher thread starts
one object per batch (decisions/scan_sharing.next_scan, keyed by the workload's batch key: one namespace,
one cluster and credentials, one object shape), the same window as the Local engine. A batch of one is a
policy's own object, as without sharing. Each member then follows the shared object on its own: reads its
own results once it completed, deletes them, and the object goes (with its ConfigMaps) once no live member
needs it (`batch_disposal`). Nothing is kept in memory that a restart would lose: the members are in the
object's annotation, "read" means "its results ConfigMaps are gone", so the next operator adopts the batch
for each member and finishes what is left. A deleted member only leaves the batch: the others' run goes on.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import kopf
import yaml

from offset_expiry import results_sink

from ..adapters import metrics
from ..adapters.kube import Kube, NotFound, owner_reference
from ..decisions import spark_application as sparkapp
from ..decisions.policy_spec import PolicySpec
from ..decisions.scan_sharing import Waiting, next_scan
from ..model.api import MANAGED_BY, POLICIES, POLICY_LABEL
from ..model.connection import ConnectionSettings
from ..model.reasons import Reason
from ..model.report import Report, ReportError, from_rows
from .job import AnalysisCancelled, AnalysisFailed, CancelFlag, Job, new_run_id

log = logging.getLogger(__name__)

DEFAULT_IMAGE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"


@dataclass(frozen=True)
class InClusterWorkload:
    """What runs job.py in the cluster, and the pure decisions about it (decisions/spark_application.py,
    decisions/kube_job.py)."""

    kind: str  # "SparkApplication", "Job": metrics, logs and messages
    group: str
    version: str
    plural: str
    image_field: str  # the spec field naming the image, for the condition when none is set
    image_of: Callable[[PolicySpec], str | None]
    # (policy body, owner reference, spec, settings, run id, image, retention) -> the object
    manifest: Callable[[Mapping[str, Any], Mapping[str, Any], PolicySpec, ConnectionSettings, str, str, int],
                       dict[str, Any]]
    # (members, the first member's spec, its settings, run id, batch key, image) -> the shared object
    batch_manifest: Callable[[list[sparkapp.BatchRun], PolicySpec, ConnectionSettings, str, str, str], dict[str, Any]]
    batch_key: Callable[[str, str, PolicySpec, str], str]
    state_of: Callable[[Mapping[str, Any]], sparkapp.AppState]
    # (object name, its failed state, the member's spec) -> the condition's reason and message
    failure: Callable[[str, sparkapp.AppState, PolicySpec], tuple[Reason, str]]
    failed_reason: Reason  # deleted while it ran, results missing or unusable
    propagation: str | None = None  # how a delete treats the object's dependents (a Job's pods)


@dataclass(eq=False)
class _SharedRun:
    """A shared run waiting for its application; `done` is set once `app` (or `error`) is."""

    number: int
    job: Job
    image: str
    key: str
    arrived_ms: int
    done: threading.Event = field(default_factory=threading.Event)
    app: str | None = None
    shared: bool = False
    error: BaseException | None = None


class InClusterEngine:
    def __init__(self, kube: Kube, workload: InClusterWorkload, default_image: str | None, poll_s: float) -> None:
        self.kube = kube
        self.w = workload
        self.default_image = default_image
        self.poll_s = poll_s
        self._cond = threading.Condition()  # guards the queue and the dispatcher
        self._waiting: dict[int, _SharedRun] = {}
        self._numbers = itertools.count(1)
        self._dispatcher: threading.Thread | None = None

    def run(self, job: Job, cancel: CancelFlag) -> Report:
        meta = job.policy_body["metadata"]
        namespace, policy = meta["namespace"], meta["name"]
        if job.share_key is not None:
            return self._run_shared(job, cancel)
        self._leave_batches(namespace, str(meta.get("uid") or ""))
        app = self._adopt(namespace, policy) or self._submit(job)
        return self._follow(namespace, app["metadata"]["name"], job.spec, cancel)

    def _get(self, namespace: str, name: str) -> dict[str, Any]:
        return self.kube.get_object(self.w.group, self.w.version, self.w.plural, namespace, name)

    def _delete(self, namespace: str, name: str) -> None:
        self.kube.delete_object(self.w.group, self.w.version, self.w.plural, namespace, name,
                                propagation=self.w.propagation)

    def _follow(self, namespace: str, name: str, spec: PolicySpec, cancel: CancelFlag) -> Report:
        """A policy's own application, until it ends."""
        while True:
            if cancel.is_set():
                if not operator_leaving(cancel):  # the policy is gone: so is its run
                    self._cleanup(namespace, name)
                raise AnalysisCancelled()  # an operator restart adopts the run still going (see _adopt)
            try:
                app = self._get(namespace, name)
            except NotFound:
                raise AnalysisFailed(self.w.failed_reason, f"{self.w.kind} {name} was deleted while it ran") from None
            state = self.w.state_of(app)
            if state.phase is sparkapp.Phase.COMPLETED:
                try:
                    return self._results(namespace, name)
                finally:
                    self._cleanup(namespace, name)
            if state.phase is sparkapp.Phase.FAILED:
                self._cleanup_configmaps(namespace, name)  # the object stays for its logs until the next run
                raise AnalysisFailed(*self.w.failure(name, state, spec))
            time.sleep(self.poll_s)

    def _adopt(self, namespace: str, policy: str) -> dict[str, Any] | None:
        """A run of this policy still going (the operator restarted); finished leftovers are removed."""
        apps = self.kube.list_objects(self.w.group, self.w.version, self.w.plural, namespace, {POLICY_LABEL: policy})
        found = None
        for app in sorted(apps, key=lambda a: a["metadata"].get("creationTimestamp") or ""):
            if self.w.state_of(app).phase is sparkapp.Phase.RUNNING and found is None:
                found = app
            else:
                self._cleanup(namespace, app["metadata"]["name"])
        return found

    def _image(self, job: Job) -> str:
        image = self.w.image_of(job.spec) or self.default_image
        if not image:
            raise AnalysisFailed(Reason.INVALID_SPEC, f"{self.w.image_field}: is required (the operator has "
                                 f"no default image: set {DEFAULT_IMAGE_ENV})")
        return image

    def _submit(self, job: Job) -> dict[str, Any]:
        image = self._image(job)
        run_id = new_run_id()
        body = self.w.manifest(job.policy_body, owner_reference(job.policy_body), job.spec, job.settings, run_id, image,
                               job.retention_ms)
        meta = body["metadata"]
        policy_text = yaml.safe_dump(dict(job.spec.analysis_spec), sort_keys=False).encode()
        self.kube.put_configmap_binary(meta["namespace"], sparkapp.policy_configmap_name(meta["name"]),
                                       results_sink.POLICY_KEY, policy_text, owner_reference(job.policy_body),
                                       meta["labels"])
        created = self.kube.create_object(self.w.group, self.w.version, self.w.plural, meta["namespace"], body)
        metrics.scan_started(self.w.kind, 1)
        return created or body

    def _results(self, namespace: str, app: str, results: str | None = None) -> Report:
        name = results or sparkapp.results_configmap_name(app)
        try:
            manifest = json.loads(self.kube.get_configmap_binary(namespace, name, results_sink.MANIFEST_KEY))
            parts = [self.kube.get_configmap_binary(namespace, f"{name}-part-{i}", results_sink.PART_KEY)
                     for i in range(int(manifest["parts"]))]
            doc = results_sink.assemble(manifest, parts)
            return from_rows(doc.get("summary") or {}, doc.get("offsets") or [])
        except (NotFound, ValueError, KeyError, ReportError) as exc:
            raise AnalysisFailed(self.w.failed_reason, f"{self.w.kind} {app} completed without usable results "
                                 f"in ConfigMap {name}: {exc}") from None

    def _cleanup_configmaps(self, namespace: str, app: str) -> None:
        """The run's ConfigMaps, by name (no `list` permission needed): the parts are numbered from 0."""
        self.kube.delete_configmap(namespace, sparkapp.policy_configmap_name(app))
        self._delete_results(namespace, sparkapp.results_configmap_name(app))

    def _delete_results(self, namespace: str, results: str) -> None:
        """The manifest first (so the results read as absent at once), then the parts."""
        self.kube.delete_configmap(namespace, results)
        part = 0
        while self.kube.delete_configmap(namespace, f"{results}-part-{part}"):
            part += 1

    # -- shared runs (issue 12)

    def _run_shared(self, job: Job, cancel: CancelFlag) -> Report:
        """A run that may share an application with other policies' runs of the same batch key: a run of this
        policy still going (its own, or a batch it is a member of) is adopted; otherwise it waits for the
        dispatcher to start an application for its batch, then follows it."""
        assert job.share_key is not None
        meta = job.policy_body["metadata"]
        namespace, policy, uid = meta["namespace"], meta["name"], str(meta.get("uid") or "")
        own = self._adopt(namespace, policy)
        if own is not None:
            return self._follow(namespace, own["metadata"]["name"], job.spec, cancel)
        batch = self._adopt_batch(namespace, uid)
        if batch is not None:
            return self._follow_batch(namespace, batch, uid, job.spec, cancel)
        image = self._image(job)
        with self._cond:
            ticket = _SharedRun(next(self._numbers), job, image,
                             self.w.batch_key(namespace, job.share_key, job.spec, image), _now_ms())
            self._waiting[ticket.number] = ticket
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._dispatch, daemon=True, name=f"{self.w.kind}-batches")
                self._dispatcher.start()
            self._cond.notify_all()
        while not ticket.done.wait(self.poll_s):
            if cancel.is_set():
                with self._cond:
                    if self._waiting.pop(ticket.number, None) is not None:  # not submitted yet: just leave
                        self._cond.notify_all()
                        raise AnalysisCancelled()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.app is not None
        if not ticket.shared:
            return self._follow(namespace, ticket.app, job.spec, cancel)
        return self._follow_batch(namespace, ticket.app, uid, job.spec, cancel)

    def _dispatch(self) -> None:
        """Starts an application per batch once its window has passed (not one at a time: they run in the
        cluster)."""
        while True:
            with self._cond:
                if not self._waiting:
                    self._dispatcher = None
                    return
                waiting = [Waiting(t.number, t.key, t.arrived_ms, t.job.share_window_ms) for t in self._waiting.values()]
                plan = next_scan(waiting, _now_ms(), sparkapp.MAX_SHARE)
                if not plan.start:
                    self._cond.wait(None if plan.wait_ms is None else max(plan.wait_ms, 1) / 1000)
                    continue
                tickets = [self._waiting.pop(n) for n in plan.start]
            try:
                if len(tickets) == 1:
                    app = self._submit(tickets[0].job)["metadata"]["name"]
                else:
                    app = self._submit_batch(tickets)
            except Exception as exc:  # said to each member: its visit turns it into a condition
                for t in tickets:
                    t.error = exc
                    t.done.set()
                continue
            for t in tickets:
                t.app, t.shared = app, len(tickets) > 1
                t.done.set()

    def _submit_batch(self, tickets: list[_SharedRun]) -> str:
        first = tickets[0]
        runs = [sparkapp.BatchRun(t.job.policy_body, shared_owner(t.job.policy_body), t.job.retention_ms)
                for t in tickets]
        run_id = new_run_id()
        body = self.w.batch_manifest(runs, first.job.spec, first.job.settings, run_id, first.key, first.image)
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        policies = {sparkapp.member_policy_key(i): base64.b64encode(
            yaml.safe_dump(dict(t.job.spec.analysis_spec), sort_keys=False).encode()).decode()
            for i, t in enumerate(tickets)}
        self.kube.create_configmap(namespace, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": sparkapp.policy_configmap_name(name), "namespace": namespace,
                         "labels": dict(meta["labels"]), "ownerReferences": [dict(r.owner) for r in runs]},
            "binaryData": policies,
        })
        try:
            self.kube.create_object(self.w.group, self.w.version, self.w.plural, namespace, body)
        except Exception:
            with contextlib.suppress(Exception):  # no application lists it: nobody else would delete it
                self.kube.delete_configmap(namespace, sparkapp.policy_configmap_name(name))
            raise
        metrics.scan_started(self.w.kind, len(tickets))
        log.info("%s %s/%s: one scan of __consumer_offsets for %d policies: %s", self.w.kind, namespace, name,
                 len(tickets), ", ".join(t.job.policy_body["metadata"]["name"] for t in tickets))
        return str(name)

    def _follow_batch(self, namespace: str, name: str, uid: str, spec: PolicySpec, cancel: CancelFlag) -> Report:
        """A shared application, for one of its members, until it ends."""
        while True:
            if cancel.is_set():
                if not operator_leaving(cancel):  # this policy is gone: it leaves the batch, the others' run goes on
                    self._release(namespace, name)
                raise AnalysisCancelled()
            try:
                app = self._get(namespace, name)
            except NotFound:
                raise AnalysisFailed(self.w.failed_reason, f"{self.w.kind} {name} was deleted while it ran") from None
            member = sparkapp.member_of(app, uid)
            if member is None:
                raise AnalysisFailed(self.w.failed_reason, f"{self.w.kind} {name} does not list this policy")
            state = self.w.state_of(app)
            if state.phase is sparkapp.Phase.COMPLETED:
                try:
                    return self._results(namespace, name, member.results)
                finally:
                    self._delete_results(namespace, member.results)  # read: what tells a restart it is done
                    self._release(namespace, name)
            if state.phase is sparkapp.Phase.FAILED:  # the object stays for its logs until a member's next run
                raise AnalysisFailed(*self.w.failure(name, state, spec))
            time.sleep(self.poll_s)

    def _batches(self, namespace: str) -> list[dict[str, Any]]:
        apps = self.kube.list_objects(self.w.group, self.w.version, self.w.plural, namespace, MANAGED_BY)
        batches = [a for a in apps if sparkapp.BATCH_LABEL in (a["metadata"].get("labels") or {})]
        return sorted(batches, key=lambda a: a["metadata"].get("creationTimestamp") or "")

    def _adopt_batch(self, namespace: str, uid: str) -> str | None:
        """A shared application this policy is a member of and still needs (the operator restarted): running,
        or completed with its results unread. Before that, shared applications nobody needs any more go
        (`_dispose`)."""
        found = None
        for app in self._batches(namespace):
            if self._dispose(namespace, app, keep_failed=False):
                continue
            member = sparkapp.member_of(app, uid)
            if member is None or found is not None:
                continue
            phase = self.w.state_of(app).phase
            if phase is sparkapp.Phase.RUNNING or (phase is sparkapp.Phase.COMPLETED and self._unread(namespace, member)):
                found = str(app["metadata"]["name"])
        return found

    def _leave_batches(self, namespace: str, uid: str) -> None:
        """A run that does not share (sharing turned off) reads no shared results any more: its unread ones
        in finished shared applications go, so they do not keep those applications; then the sweep."""
        for app in self._batches(namespace):
            member = sparkapp.member_of(app, uid)
            if member is not None and self.w.state_of(app).phase is not sparkapp.Phase.RUNNING:
                self._delete_results(namespace, member.results)
            self._dispose(namespace, app, keep_failed=False)

    def _release(self, namespace: str, name: str) -> None:
        """A member is done with a shared application (read its results, or its policy is deleted): the
        application goes if no live member needs it any more."""
        try:
            app = self._get(namespace, name)
        except NotFound:
            return
        self._dispose(namespace, app, keep_failed=True)

    def _dispose(self, namespace: str, app: dict[str, Any], *, keep_failed: bool) -> bool:
        members = sparkapp.members_of(app)
        alive = {m.uid for m in members if self._alive(namespace, m)}
        unread = {m.uid for m in members if m.uid in alive and self._unread(namespace, m)}
        if not sparkapp.batch_disposal(self.w.state_of(app).phase, {m.uid for m in members}, alive, unread,
                                       keep_failed=keep_failed):
            return False
        name = str(app["metadata"]["name"])
        with contextlib.suppress(NotFound):
            self._delete(namespace, name)
        self.kube.delete_configmap(namespace, sparkapp.policy_configmap_name(name))
        for m in members:
            self._delete_results(namespace, m.results)
        return True

    def _alive(self, namespace: str, member: sparkapp.BatchMember) -> bool:
        """The member's policy exists (the same one: its uid) and is not being deleted."""
        try:
            body = self.kube.get_custom(POLICIES, namespace, member.name)
        except NotFound:
            return False
        meta = body.get("metadata") or {}
        return str(meta.get("uid") or "") == member.uid and not meta.get("deletionTimestamp")

    def _unread(self, namespace: str, member: sparkapp.BatchMember) -> bool:
        try:
            self.kube.get_configmap(namespace, member.results)
        except NotFound:
            return False
        return True

    def _cleanup(self, namespace: str, app: str) -> None:
        with contextlib.suppress(NotFound):
            self._delete(namespace, app)
        self._cleanup_configmaps(namespace, app)


def shared_owner(body: Mapping[str, Any]) -> dict[str, Any]:
    """An ownerReference that is not a controller's: an object has at most one controller, and a shared
    application has one owner per member (Kubernetes deletes it once every owner is gone)."""
    return dict(kopf.build_owner_reference(cast(Any, body), controller=False, block_owner_deletion=False))


def _now_ms() -> int:
    return int(time.time() * 1000)


def operator_leaving(cancel: CancelFlag) -> bool:
    """Whether the operator stops or pauses (rather than the policy being deleted): Kopf's daemon flag says."""
    reason = getattr(cancel, "reason", None)
    if reason is None:
        return False
    leaving = kopf.DaemonStoppingReason.OPERATOR_EXITING | kopf.DaemonStoppingReason.OPERATOR_PAUSING
    return bool(reason & leaving) and not reason & kopf.DaemonStoppingReason.RESOURCE_DELETED
