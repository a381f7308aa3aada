"""The bookkeeping an OffsetDeletion and an OffsetReset visit share (reconcilers/offset_deletion.py,
reconcilers/offset_reset.py): one visit at a time per object, an object whose every status write is refused
left alone until it changes, a visit cut short by the process stopping or by the object's deletion, the
check right before a call that changes offsets, and the status write with its fallback when the API server
refuses it. Each kind says its own words (`cancelled_text`, `stopping_text`) and does its own steps
(`_reconcile`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, ClassVar, NoReturn, Protocol, cast

import kopf

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy import Protection

from ..adapters import audit
from ..adapters.backup_store import BackupStore
from ..adapters.kube import KubeError, NotFound, Refused
from ..context import OperatorContext
from ..decisions import step_outcomes
from ..decisions.approval import approval_of, approval_problem, policy_wants_separate_approver
from ..decisions.conditions import generation_of
from ..decisions.kafka_answers import answer_lost
from ..decisions.protection import refusal
from ..decisions.status_patch import changes, merge_patch
from ..decisions.step_outcomes import Outcome, spec_problem, write_refused
from ..engines.job import CancelFlag
from ..model.api import POLICIES
from ..model.offsets import TP, Committed, KafkaFailure
from ..model.reasons import Reason
from ..model.times import now_iso
from .protection import ClusterProtection


def now() -> str:
    return now_iso()


def group_of(body: Mapping[str, Any]) -> Any:
    return (body.get("spec") or {}).get("group")


class ConnectionSpec(Protocol):
    """What both kinds' parsed specs say about the connection: spec.kafka or spec.policyRef."""

    @property
    def kafka(self) -> Mapping[str, Any] | None: ...

    @property
    def policy_ref(self) -> str | None: ...


class DeletedBeforeChange(Exception):
    """The resource was deleted before its change was sent: nothing more is started."""


class Stopping(Exception):
    """This process stops, or pauses for another operator process (peering): it starts no change of offsets;
    the process that acts next continues from the status."""


class ObjectVisits:
    """One kind's visits: a subclass names its `plural`, its logger and words, and implements `_reconcile`."""

    plural: ClassVar[str]
    log: ClassVar[logging.Logger]
    cancelled_text: ClassVar[str]  # the Event when deleted before its change was sent
    stopping_text: ClassVar[str]  # the log line when the process stops mid-visit (%s/%s: namespace, name)
    sent_text: ClassVar[str]  # what was sent, in the Event when deleted after it ("deleted after ...")

    @staticmethod
    def _answer_lost(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
                     after: Mapping[TP, Committed] | None, failure: KafkaFailure, backup: str | None,
                     then: str | None = None) -> NoReturn:
        """A request that changes offsets was sent and its answer lost: the audit line says it was sent (with
        no outcome), and the failure raised says neither success nor failure; the next attempt re-reads
        (`then`: what it does, when not the OffsetDeletion's words for `call`)."""
        audit.changed(call, body, group, before, after, {}, failure.code, backup)
        raise KafkaFailure(failure.code, answer_lost(call, len(before or after or {}), failure.message, then),
                           True) from None

    def __init__(self, ctx: OperatorContext) -> None:
        self.ctx = ctx
        self.kube = ctx.kube
        self.options = ctx.options
        self.store = BackupStore(ctx.kube)
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._refused: dict[tuple[str, str], str] = {}  # objects no status fits, by the version seen
        self.protection = ClusterProtection(ctx.kube, None if ctx.options.clusterwide else ctx.options.namespaces)

    def _lock(self, namespace: str, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault((namespace, name), threading.Lock())

    def _reconcile(self, body: dict[str, Any], stop: CancelFlag | None) -> None:
        raise NotImplementedError

    def reconcile(self, namespace: str, name: str, stop: CancelFlag | None = None) -> None:
        """One visit. `stop` (Kopf's timer flag) is set when this process stops or pauses for a peer: checked
        right before each call that changes offsets, so none starts after it."""
        with self._lock(namespace, name):
            try:
                body = self.kube.get_custom(self.plural, namespace, name)
            except NotFound:
                return
            if body["metadata"].get("deletionTimestamp"):
                return  # being deleted: cancel() says what happened; nothing more starts
            version = str(body["metadata"].get("resourceVersion") or "")
            if self._refused.get((namespace, name)) == version:
                return  # no status could be written for this object as it is: wait until it changes
            try:
                self._reconcile(body, stop)
            except Stopping:
                self.log.info(self.stopping_text, namespace, name)
            except DeletedBeforeChange:
                text = self.cancelled_text
                audit.log.info("Cancelled %s/%s group=%s: %s", namespace, name, group_of(body), text)
                kopf.event(cast(Any, body), type="Normal", reason=str(Reason.CANCELLED), message=text)
            except KubeError as exc:
                try:
                    self._apply(body, spec_problem(body.get("status") or {}, "kubernetes", str(exc),
                                                   Reason.KUBERNETES_API_ERROR, now(), generation_of(body)))
                except Refused as refused:  # not even a condition fits: say it once, visit again when it changes
                    self._refused[(namespace, name)] = version
                    self.log.error("%s/%s: the API server refuses every status write (%s); not visited again "
                                   "until the object changes", namespace, name, refused)
                    kopf.event(cast(Any, body), type="Warning", reason=str(Reason.WRITE_REFUSED),
                               message=str(refused)[:1000])

    def _change_sent(self, status: Mapping[str, Any], backup: str | None) -> bool:
        """Whether the kind's change may have reached Kafka (its start time is recorded, or it is final)."""
        raise NotImplementedError

    def _after_cancel(self, body: Mapping[str, Any], status: dict[str, Any]) -> None:
        """What the kind still undoes before Kopf's finalizer lets the object go (nothing by default)."""

    def cancel(self, namespace: str, name: str) -> None:
        """The resource is being deleted (Kopf's finalizer holds it until this returns). Waits for a step in
        flight, then says what happened: cancelled before any change, or deleted after it (the backup stays)."""
        with self._lock(namespace, name):
            try:
                body = self.kube.get_custom(self.plural, namespace, name)
            except NotFound:
                return
            status = body.get("status") or {}
            backup = (status.get("backup") or {}).get("name")
            kept = f"; its backup stays in ConfigMap {backup}" if backup else ""
            if self._change_sent(status, backup):
                reason, text = Reason.DELETED_AFTER_CHANGE, f"deleted after {self.sent_text}{kept}"
            else:
                reason, text = Reason.CANCELLED, f"cancelled: deleted before any change was sent to Kafka{kept}"
            audit.log.info("%s %s/%s group=%s: %s", reason.value, namespace, name, group_of(body), text)
            kopf.event(cast(Any, body), type="Normal", reason=str(reason), message=text)
            self._after_cancel(body, status)

    def _check_not_deleted(self, body: Mapping[str, Any], stop: CancelFlag | None) -> None:
        """Right before a call that changes offsets: a resource deleted meanwhile cancels it, and a process that
        stops or pauses for a peer leaves it to the process that acts next."""
        if stop is not None and stop.is_set():
            raise Stopping()
        meta = body["metadata"]
        try:
            current = self.kube.get_custom(self.plural, meta["namespace"], meta["name"])
        except NotFound:
            raise DeletedBeforeChange() from None
        if current["metadata"].get("deletionTimestamp"):
            raise DeletedBeforeChange()

    def _connection_spec(self, namespace: str, spec: ConnectionSpec, status: Mapping[str, Any]
                         ) -> tuple[Mapping[str, Any], tuple[str, Protection] | None]:
        """The connection to use (the one recorded at approval once there is one) and, for an object that
        references a policy, the policy's protection (None when the policy is gone after approval: what it
        protected was checked before the backup, and a started change finishes)."""
        recorded = (status.get("target") or {}).get("kafka")
        if spec.policy_ref is None:
            return (recorded or spec.kafka or {}), None
        try:
            policy = self.kube.get_custom(POLICIES, namespace, spec.policy_ref)
        except NotFound:
            if recorded:
                return recorded, None
            raise SpecError(
                "spec.policyRef.name", f"ConsumerGroupOffsetPolicy {spec.policy_ref!r} not found in namespace "
                f"{namespace!r}", Reason.POLICY_NOT_FOUND) from None
        policy_spec = policy.get("spec") or {}
        protect = tuple(str(g) for g in ((policy_spec.get("protect") or {}).get("groups") or ()))
        return (recorded or policy_spec.get("kafka") or {}), (spec.policy_ref, Protection(groups=protect))

    def _refused_by_protection(self, body: Mapping[str, Any], status: Mapping[str, Any], cluster_id: str | None,
                               group: str, counter: str, failed: str | None, generation: int | None
                               ) -> dict[str, Any] | None:
        """Right before a change to `group` on the cluster `cluster_id`: the status written when any policy
        this operator watches protects it there (Protected: final, phase `failed`; with `failed` None, as for a
        restore, the phase stays and it is retried), or may (ProtectionUnknown, retried); None when the change
        may go on. Protection belongs to the cluster, not to the policy an object references."""
        found = self.protection.check(cluster_id, group)
        if found.allowed:
            return None
        message, at = refusal(group, cluster_id, found), now()
        meta = body["metadata"]
        if found.by and failed is not None:
            outcome = step_outcomes.protected(status, message, counter, at, generation, failed)
        elif found.by:
            outcome = step_outcomes.protected_for_now(status, message, at, generation)
        else:
            outcome = step_outcomes.protection_unknown(status, message, at, generation)
        if found.by:
            audit.log.info("Refused %s/%s group=%s: %s", meta["namespace"], meta["name"], group, message)
        return self._apply(body, outcome, status)

    def _approval_refused(self, body: Mapping[str, Any], policy_ref: str | None, status: Mapping[str, Any]) -> bool:
        """Right before an approved request starts (its backup): whether its approval must not be acted on
        (decisions/approval.py). If so the condition says why, the audit log has a line, nothing changes."""
        meta = body["metadata"]
        policy_separate = False
        if policy_ref is not None:
            try:
                policy = self.kube.get_custom(POLICIES, meta["namespace"], policy_ref)
            except NotFound:
                policy = {}
            policy_separate = policy_wants_separate_approver(policy.get("spec"))
        problem = approval_problem(approval_of(body.get("spec")), verified=self.options.approvals_verified,
                                   policy_separate=policy_separate, policy=policy_ref)
        if problem is None:
            return False
        field, text = problem
        self._apply(body, spec_problem(status, field, text, Reason.APPROVAL_REFUSED, now(), generation_of(body)))
        audit.log.info("Refused %s/%s group=%s: approval not acted on: %s: %s", meta["namespace"], meta["name"],
                       group_of(body), field, text)
        return True

    def _shorten(self, patch: dict[str, Any]) -> dict[str, Any]:
        """A kind's own cut of a refused status patch, after write_refused's (none by default)."""
        return patch

    def _apply(self, body: Mapping[str, Any], outcome: Outcome, status: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write the status patch (only if it changes something), then post the events. Returns the status."""
        meta = body["metadata"]
        current = dict(status if status is not None else body.get("status") or {})
        if changes(current, outcome.status):
            patch = outcome.status
            try:
                self.kube.patch_status(self.plural, meta["namespace"], meta["name"], patch)
            except Refused as exc:  # too large or invalid: the same facts without the per-partition details
                self.log.warning("%s/%s: status write refused, writing it without per-partition details: %s",
                                 meta["namespace"], meta["name"], exc)
                patch = self._shorten(write_refused(current, patch, str(exc), now(), generation_of(body)))
                self.kube.patch_status(self.plural, meta["namespace"], meta["name"], patch)
            current = merge_patch(current, patch)
        for event in outcome.events:
            kopf.event(cast(Any, dict(body)), type=event.type, reason=str(event.reason), message=event.message)
        return current


def connection_where(policy_ref: str | None) -> str:
    """Where a connection that cannot be used comes from, for its condition: the object's own spec.kafka, or
    the spec.kafka of the policy it references (OffsetDeletion and OffsetReset alike)."""
    return "spec.kafka" if policy_ref is None else f"ConsumerGroupOffsetPolicy {policy_ref} spec.kafka"
