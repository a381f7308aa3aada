"""One visit of an OffsetDeletion: the I/O around decisions/deletion_steps.py (handlers/offset_deletion.py
says when a visit happens).

Each visit re-reads the object from the API under a per-object lock, so a visit never acts on a stale
status, and runs the next steps of the state machine, writing the status before every Kafka call that
changes offsets.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import kopf

from offset_expiry.errors import SpecError

from ..adapters import metrics
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.kube import KubeError, NotFound, owner_reference
from ..context import OperatorContext
from ..decisions import deletion_steps as steps
from ..decisions.connection_spec import connection_from_spec
from ..decisions.deletion_spec import DeletionSpec, parse_spec
from ..decisions.deletion_steps import Outcome, Step
from ..decisions.status_patch import changes, merge_patch
from ..model.api import DELETION_LABEL, DELETIONS, MANAGED_BY, POLICIES
from ..model.backups import BACKUP_KEY, decode_backup, encode_backup, parse_backup
from ..model.connection import ConnectionSettings
from ..model.offsets import TP, Committed, KafkaFailure
from ..model.reasons import Reason

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DeletionReconciler:
    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.kube = ctx.kube
        self.options = ctx.options
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _lock(self, namespace: str, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault((namespace, name), threading.Lock())

    # -- one visit

    def reconcile(self, namespace: str, name: str) -> None:
        with self._lock(namespace, name):
            try:
                body = self.kube.get_custom(DELETIONS, namespace, name)
            except NotFound:
                return
            try:
                self._reconcile(body)
            except KubeError as exc:
                self._apply(body, steps.spec_problem(body.get("status") or {}, "kubernetes", str(exc),
                                                    Reason.KUBERNETES_API_ERROR, _now(), _generation(body)))

    def _reconcile(self, body: dict[str, Any]) -> None:
        namespace = body["metadata"]["namespace"]
        status: dict[str, Any] = dict(body.get("status") or {})
        generation = _generation(body)
        try:
            spec = parse_spec(body.get("spec"))
            settings = self._connection(namespace, spec)
        except SpecError as exc:
            self._apply(body, steps.spec_problem(status, exc.field, exc.problem, Reason(exc.reason), _now(), generation))
            return
        step = steps.next_step(spec, status)
        if step is Step.AWAIT:
            self._apply(body, steps.awaiting_approval(status, _now(), generation))
            return
        if step is Step.DONE:
            self._apply(body, steps.settled(status, _now(), generation))
            return
        try:
            with KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
                if step is Step.BACKUP:
                    status = self._backup(body, spec, status, admin)
                    step = steps.next_step(spec, status)
                if step is Step.DELETE:
                    status = self._delete(body, spec, status, admin)
                    step = steps.next_step(spec, status)
                if step is Step.RESTORE:
                    self._restore(body, status, admin)
        except KafkaFailure as failure:
            metrics.kafka_error(failure.code)
            current = self.kube.get_custom(DELETIONS, namespace, body["metadata"]["name"]).get("status") or {}
            self._apply(body, steps.kafka_problem(current, failure.code, failure.message,
                                                 self.options.retry_interval, _now(), generation), current)

    # -- the steps

    def _backup(self, body: dict[str, Any], spec: DeletionSpec, status: dict[str, Any], admin: KafkaAdmin) -> dict[str, Any]:
        group = admin.describe_group(spec.group)
        committed = admin.committed_offsets(spec.group)
        name = body["metadata"]["name"]
        backup = steps.plan_backup(spec, status, group, committed, _now(), _generation(body),
                                  configmap_name=f"{name}-offset-backup", large=self.options.large_backup_partitions)
        if backup.in_configmap:
            self.kube.put_configmap_binary(
                body["metadata"]["namespace"], f"{name}-offset-backup", BACKUP_KEY, encode_backup(backup.offsets),
                owner_reference(body), {**MANAGED_BY, DELETION_LABEL: name},
            )
        status = self._apply(body, backup.outcome, status)
        if status.get("phase") == steps.FAILED:
            metrics.deletion_finished(steps.FAILED, 0, 0)
        return status

    def _delete(self, body: dict[str, Any], spec: DeletionSpec, status: dict[str, Any], admin: KafkaAdmin) -> dict[str, Any]:
        backup = self._load_backup(body, status)
        admin.describe_group(spec.group)  # the live re-check also proves the coordinator answers
        current = admin.committed_offsets(spec.group)
        todo = steps.plan_deletion(backup, current, started=bool(status.get("deleteStartTime")))
        answers: dict[TP, str | None] = {}
        top_error: str | None = None
        if todo.to_delete:
            status = self._apply(body, steps.deletion_started(status, _now()), status)
            started = time.monotonic()
            try:
                answers = admin.delete_offsets(spec.group, todo.to_delete)
            except KafkaFailure as failure:
                if failure.retriable:
                    raise
                top_error = failure.code
            metrics.observe_delete_request(time.monotonic() - started)
        for error in [top_error, *answers.values()]:
            if error is not None:
                metrics.kafka_error(error)
        outcome = steps.finish_deletion(spec, status, todo, answers, top_error, _now(), _generation(body))
        status = self._apply(body, outcome, status)
        metrics.deletion_finished(status.get("phase", ""), int(status.get("deleted", 0)), int(status.get("failed", 0)))
        return status

    def _restore(self, body: dict[str, Any], status: dict[str, Any], admin: KafkaAdmin) -> dict[str, Any]:
        spec = parse_spec(body.get("spec"))
        backup = self._load_backup(body, status)
        group = admin.describe_group(spec.group)
        now, generation, interval = _now(), _generation(body), self.options.retry_interval
        if group.active:
            metrics.restore_finished("Blocked")
            return self._apply(body, steps.restore_blocked(status, group, interval, now, generation), status)
        current = admin.committed_offsets(spec.group)
        todo = steps.plan_restore(backup, steps.deleted_partitions(status, backup), current)
        answers = admin.commit_offsets(spec.group, todo.to_commit) if todo.to_commit else {}
        for error in answers.values():
            if error is not None:
                metrics.kafka_error(error)
        outcome = steps.finish_restore(status, todo, answers, group, interval, now, generation)
        status = self._apply(body, outcome, status)
        if status.get("phase") == steps.RESTORED:
            metrics.restore_finished("Restored" if not status.get("restoreResults") or all(
                r["status"] != steps.FAILED_RESULT for r in status["restoreResults"]) else "Incomplete")
        return status

    # -- helpers

    def _connection(self, namespace: str, spec: DeletionSpec) -> ConnectionSettings:
        def read_secret(secret: str) -> Mapping[str, bytes]:
            return self.kube.secret_data(namespace, secret)

        if spec.policy_ref is None:
            return connection_from_spec(spec.kafka, read_secret)
        try:
            policy = self.kube.get_custom(POLICIES, namespace, spec.policy_ref)
        except NotFound:
            raise SpecError(
                "spec.policyRef.name", f"ConsumerGroupOffsetPolicy {spec.policy_ref!r} not found in namespace "
                f"{namespace!r}", Reason.POLICY_NOT_FOUND) from None
        where = f"ConsumerGroupOffsetPolicy {spec.policy_ref} spec.kafka"
        return connection_from_spec((policy.get("spec") or {}).get("kafka"), read_secret, where)

    def _load_backup(self, body: Mapping[str, Any], status: Mapping[str, Any]) -> dict[TP, Committed]:
        backup = status.get("backup") or {}
        ref = backup.get("configMapRef")
        if ref:
            data = self.kube.get_configmap_binary(body["metadata"]["namespace"], ref["name"], ref.get("key", BACKUP_KEY))
            return decode_backup(data)
        return parse_backup(backup.get("offsets") or [])

    def _apply(self, body: Mapping[str, Any], outcome: Outcome, status: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write the status patch (only if it changes something), then post the events. Returns the status."""
        meta = body["metadata"]
        current = dict(status if status is not None else body.get("status") or {})
        if changes(current, outcome.status):
            self.kube.patch_status(DELETIONS, meta["namespace"], meta["name"], outcome.status)
            current = merge_patch(current, outcome.status)
        for event in outcome.events:
            kopf.event(cast(Any, dict(body)), type=event.type, reason=str(event.reason), message=event.message)
        return current


def _generation(body: Mapping[str, Any]) -> int | None:
    value = (body.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None
