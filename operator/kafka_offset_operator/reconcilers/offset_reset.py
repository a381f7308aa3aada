"""One visit of an OffsetReset: the I/O around decisions/reset_steps.py (handlers/offset_reset.py says when a
visit happens). It mirrors reconcilers/offset_deletion.py: each visit re-reads the object under a
per-object lock and writes the status before every Kafka call that changes offsets.

The plan comes from decisions/reset_plan.py (the `reset` command's too), fed with what Kafka answers here:
the group's committed offsets (OffsetFetch), the partitions of the topics named (Metadata), each partition's
log range and, for datetime and duration, the offsets for a timestamp (ListOffsets), and the source of
fromBackup (the backup store) or fromGroup (that group's OffsetFetch).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import kopf

from kafka_offsets_model.errors import SpecError

from ..adapters import audit, metrics
from ..adapters.backup_store import BackupNotStored, backup_name
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.kube import Forbidden, KubeError, NotFound
from ..decisions import reset_steps as steps
from ..decisions import step_outcomes as outcomes
from ..decisions import workload_pause as pause
from ..decisions.approval import approval_of
from ..decisions.conditions import generation_of as _generation
from ..decisions.connection_spec import connection_from_spec
from ..decisions.fresh_verdict import rederive
from ..decisions.reset_plan import (
    ResetPlan,
    ResetRefused,
    ResetTarget,
    TargetKind,
    check_source,
    parse_target,
    uncommitted_partitions,
)
from ..decisions.reset_spec import ResetSpec, parse_reset_spec
from ..decisions.reset_steps import ResetStep
from ..decisions.step_outcomes import (
    backup_not_stored,
    frozen_fields,
    protecting_pattern,
    spec_problem,
    target_of,
)
from ..engines.job import CancelFlag
from ..model.api import BACKUPS_SELECTOR, RESET_KIND, RESETS
from ..model.backups import Action, BackupError, BackupRecord, Requester
from ..model.offsets import OUTCOME_UNKNOWN, TP, Committed, KafkaFailure
from ..model.reasons import Reason
from ..model.times import iso, parse_iso
from .fresh_facts import log_position, read_facts
from .reset_reads import read_plan
from .visits import ObjectVisits, connection_where
from .visits import now as _now

log = logging.getLogger(__name__)


class _WorkloadForbidden(Exception):
    """HTTP 403 on a paused workload's scale: the install did not opt in to the pause RBAC."""

    def __init__(self, workload: pause.Workload, verb: str, answer: str) -> None:
        super().__init__(f"{verb} {workload.describe()}: {answer}")
        self.workload, self.verb, self.answer = workload, verb, answer


class ResetReconciler(ObjectVisits):
    plural = RESETS
    log = log
    cancelled_text = "cancelled: deleted before its OffsetCommit was sent to Kafka"
    stopping_text = "%s/%s: not continued here: this operator process is stopping or paused for another"
    sent_text = "its OffsetCommit was sent to Kafka"

    def _shorten(self, patch: dict[str, Any]) -> dict[str, Any]:
        """A refused write also drops the plan's per-partition entries (the counts stay)."""
        if isinstance(patch.get("plan"), Mapping):
            patch["plan"] = {**patch["plan"], "entries": None}
        return patch

    def _change_sent(self, status: Mapping[str, Any], backup: str | None) -> bool:
        return steps.commit_sent(status)

    def _after_cancel(self, body: Mapping[str, Any], status: dict[str, Any]) -> None:
        """The finalizer holds the object until its paused workloads are scaled back."""
        if not pause.pending(status):
            return
        try:
            status = self._restore_workloads(body, status)
        except (KubeError, _WorkloadForbidden) as exc:
            raise kopf.TemporaryError(f"scaling the paused workloads back: {exc}",
                                      delay=self.options.retry_interval) from None
        if pause.pending(status):
            raise kopf.TemporaryError("paused workloads still to scale back", delay=self.options.retry_interval)

    def _reconcile(self, body: dict[str, Any], stop: CancelFlag | None) -> None:
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        status: dict[str, Any] = dict(body.get("status") or {})
        generation = _generation(body)
        raw_spec: Mapping[str, Any] = body.get("spec") or {}
        now = _now()
        if pause.recorded(status):
            done, status = self._unpause_first(body, status)
            if done:
                return
        try:
            spec = parse_reset_spec(raw_spec)
            kafka, protection = self._connection_spec(namespace, spec, status)
            where = "status.target.kafka" if status.get("target") else connection_where(spec.policy_ref)
            settings = connection_from_spec(kafka, lambda secret: self.kube.secret_data(namespace, secret), where,
                                            self.kube.strimzi_reader(namespace))
        except SpecError as exc:
            self._apply(body, spec_problem(status, exc.field, exc.problem, Reason(exc.reason), now, generation))
            return
        step = steps.next_step(spec.approved, status, generation)
        if step is not ResetStep.DONE and protection is not None:
            group = (status.get("target") or {}).get("group") or spec.group
            pattern = protecting_pattern(protection[1], group)
            if pattern is not None and not status.get("commitStartTime"):
                self._apply(body, steps.protected(status, group, protection[0], pattern, now, generation))
                audit.log.info("Refused %s/%s group=%s: protected by policy %s (%r)", namespace, name, group,
                               protection[0], pattern)
                return
        if step is ResetStep.BACKUP and self._approval_refused(body, spec.policy_ref, status):
            return
        changed = frozen_fields(raw_spec, status)
        status = self._apply(body, steps.spec_frozen(status, changed, now, generation) if changed
                             else steps.spec_unfrozen(status, now, generation), status)
        try:
            if step in (ResetStep.AWAIT, ResetStep.DONE):
                if step is ResetStep.DONE and pause.pending(status):
                    status = self._restore_workloads(body, status)
                self._apply(body, steps.settled(status, now, generation), status)
                return
            # the process-wide Kafka limit (context.kafka_gate), as an OffsetDeletion's visit and a policy's
            with self.ctx.kafka_gate, KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
                if step in (ResetStep.BACKUP, ResetStep.COMMIT) and not status.get("commitStartTime"):
                    # protect is the cluster's: any policy the operator watches, whichever this one references
                    refused = self._refused_by_protection(
                        body, status, admin.cluster_id(), str((status.get("target") or {}).get("group") or spec.group),
                        "reset", outcomes.FAILED, generation)
                    if refused is not None:
                        status, step = refused, ResetStep.DONE  # final: paused workloads are scaled back below
                if step is ResetStep.PLAN:
                    plan = self._plan(namespace, spec, admin)
                    self._apply(body, steps.plan_shown(status, plan, _now(), generation), status)
                    return
                if step is ResetStep.BACKUP:
                    if spec.pause_workloads or pause.recorded(status):
                        status, empty = self._pause(body, spec, status, admin)
                        if not empty:
                            if status.get("phase") in steps.FINAL:
                                self._restore_workloads(body, status)
                            return
                    status = self._backup(body, spec, kafka, status, admin)
                    step = steps.next_step(spec.approved, status, generation)
                if step is ResetStep.COMMIT:
                    status = self._commit(body, spec, status, admin, stop)
            if status.get("phase") in steps.FINAL and pause.pending(status):
                self._restore_workloads(body, status)
        except _WorkloadForbidden as exc:
            current = self.kube.get_custom(RESETS, namespace, name).get("status") or {}
            self._apply(body, pause.access_denied(current, exc.workload, exc.verb, namespace, exc.answer, _now(),
                                                  generation, self.options.retry_interval), current)
        except KafkaFailure as failure:
            metrics.kafka_error(failure.code)
            current = self.kube.get_custom(RESETS, namespace, name).get("status") or {}
            self._apply(body, steps.awaiting_kafka(current, failure.code, failure.message, self.options.retry_interval,
                                                   _now(), generation, approved=spec.approved), current)
        except BackupNotStored as exc:
            self._apply(body, backup_not_stored(status, str(exc), self.options.retry_interval, _now(), generation),
                        status)
        except SpecError as exc:  # found while planning: a backup or topic the spec names is not there
            if (spec.approved and Reason(exc.reason) is Reason.INVALID_SPEC and pause.pending(status)
                    and status.get("phase") not in (outcomes.RUNNING, *steps.FINAL)):
                # the approved spec is frozen: nothing can fix it, and the consumers are at zero
                status = self._apply(body, steps.invalid_while_paused(status, exc.field, exc.problem, _now(),
                                                                      generation), status)
                metrics.reset_finished(outcomes.FAILED, 0)
                try:
                    self._restore_workloads(body, status)
                except _WorkloadForbidden as denied:
                    current = self.kube.get_custom(RESETS, namespace, name).get("status") or {}
                    self._apply(body, pause.access_denied(current, denied.workload, denied.verb, namespace,
                                                          denied.answer, _now(), generation,
                                                          self.options.retry_interval), current)
                return
            self._apply(body, spec_problem(status, exc.field, exc.problem, Reason(exc.reason), _now(), generation),
                        status)

    # -- the steps

    def _plan(self, namespace: str, spec: ResetSpec, admin: KafkaAdmin) -> ResetPlan:
        """The plan now (reconcilers/reset_reads.py, the `reset` command's reads too); for fromBackup, from the
        backup of this namespace the spec names, refused if it is of another group or cluster. A source or
        scope that cannot be meant is a condition naming the field (`ResetRefused`)."""
        target = spec.target
        backup: dict[TP, Committed] | None = None
        added: list[TP] = []  # an undo: what the undone reset added (it stays: Kafka has no "uncommit")
        try:
            if target.kind is TargetKind.FROM_BACKUP:
                record = self._source_backup(namespace, str(target.backup))
                check_source(spec.group, target, admin.cluster_id(), record.group, record.cluster_id)
                backup = dict(record.offsets)
                added = uncommitted_partitions(record.extra)
            else:
                check_source(spec.group, target, None)
            return read_plan(admin, spec.group, target, spec.scope, int(time.time() * 1000), backup, added)
        except ResetRefused as exc:
            if exc.field.startswith("spec.target."):  # only a new spec can fix the source
                raise SpecError(exc.field, str(exc)) from None
            raise SpecError(exc.field, str(exc), Reason.PLAN_REFUSED) from None  # a topic may be created

    def _source_backup(self, namespace: str, name: str) -> BackupRecord:
        try:
            return self.store.read(namespace, name)
        except NotFound:
            raise SpecError("spec.target.fromBackup", f"no backup {name!r} in namespace {namespace!r} (kubectl get "
                            f"configmaps -l {BACKUPS_SELECTOR})") from None
        except BackupError as exc:
            raise SpecError("spec.target.fromBackup", f"ConfigMap {name!r} is not a readable backup: {exc}") from None

    def _backup(self, body: dict[str, Any], spec: ResetSpec, kafka: Mapping[str, Any], status: dict[str, Any],
                admin: KafkaAdmin) -> dict[str, Any]:
        """Approved: with the group empty, plan again and store the backup (the offsets before, and the plan
        to commit) before the status may say Running."""
        meta, generation = body["metadata"], _generation(body)
        group = admin.describe_group(spec.group)
        if group.active:
            return self._apply(body, steps.members_present(status, group, self.options.retry_interval, _now(),
                                                           generation), status)
        offsets_log = log_position(admin, spec.group, self.options.kafka_timeout_ms)  # before the plan's OffsetFetch
        plan = self._plan(meta["namespace"], spec, admin)
        now = _now()
        if plan.refusal is not None:
            metrics.reset_finished(outcomes.FAILED, 0)
            return self._apply(body, steps.plan_refused(status, plan, now, generation), status)
        cluster_id = admin.cluster_id()
        who = approval_of(body.get("spec"))
        expires = iso((parse_iso(now) or 0) + int(self.options.backup_retention_s * 1000))
        record = BackupRecord(
            name=backup_name("offsetreset", meta["name"], Action.RESET, str(meta.get("uid") or meta["name"])),
            action=Action.RESET, cluster_id=cluster_id, bootstrap_servers=admin.settings.bootstrap_servers,
            group=spec.group, offsets=plan.before,  # with leader epochs and metadata: an undo restores them
            requested_by=Requester(RESET_KIND, meta["namespace"], meta["name"], str(meta.get("uid") or ""),
                                   "approved OffsetReset", who.requested_by, who.approved_by),
            taken_at=now, expires_at=expires,
            extra={steps.RESET_TO: steps.reset_to(plan), "target": plan.target.describe(),
                   "uncommitted": steps.uncommitted(plan), "offsetsLog": offsets_log})
        stored = self.store.write(record)
        target = target_of(body.get("spec") or {}, kafka, cluster_id, admin.settings.bootstrap_servers)
        undo = steps.undo_of(meta["namespace"], meta["name"], target["spec"], stored.name,
                             admin.settings.bootstrap_servers, steps.added_offsets(plan))
        audit.log.info("BackedUp %s/%s group=%s cluster=%s partitions=%d backup=%s", meta["namespace"], meta["name"],
                       stored.group, cluster_id, stored.partitions, stored.name)
        return self._apply(body, steps.backup_taken(status, stored, plan, target, undo, now, generation, offsets_log),
                           status)

    def _commit(self, body: dict[str, Any], spec: ResetSpec, status: dict[str, Any], admin: KafkaAdmin,
                stop: CancelFlag | None) -> dict[str, Any]:
        """Commit the plan stored with the backup into the group recorded at approval, once it is empty, and
        only partitions still as backed up."""
        record = self._load_backup(body, status)
        reset = steps.parse_reset_to(record.extra.get(steps.RESET_TO) or ())
        recorded = status.get("target") or {}
        group_id = str(recorded.get("group") or spec.group)
        target = _approved_target(recorded, spec)
        now, generation, interval = _now(), _generation(body), self.options.retry_interval
        group = admin.describe_group(group_id)
        if group.active:
            if pause.applies(status) and pause.expired(status, spec.pause_timeout_ms, int(time.time() * 1000)):
                outcome = pause.timed_out(status, group, None, spec.pause_timeout, now, generation)
                metrics.reset_finished(outcomes.FAILED, 0)
                return self._apply(body, outcome, status)  # the caller scales them back
            return self._apply(body, steps.members_present(status, group, interval, now, generation), status)
        current = admin.committed_offsets(group_id)
        todo = steps.plan_commit(record.offsets, reset, current, started=bool(status.get("commitStartTime")))
        done = [(r["topic"], r["partition"]) for r in todo.results if r["status"] == steps.RESET]
        audit.confirmed("OffsetCommit", body, group_id, {tp: record.offsets[tp] for tp in done if tp in record.offsets},
                        {tp: reset[tp] for tp in done}, record.name)  # sent by an earlier attempt: at-least-once
        if todo.to_commit:  # committed again since the backup, the same offset included: in use, left as is
            facts = read_facts(admin, group_id, group, None, status.get("backup") or {}, self.options.kafka_timeout_ms)
            verdict = rederive(todo.to_commit, facts, {}, proposed=False)
            if verdict.partitions:
                audit.log.info("Changed group=%s since %s: %s", group_id, facts.since_what, "; ".join(
                    f"{t}-{p}: {w}" for (t, p), w in sorted(verdict.partitions.items())))
            todo = steps.skip_changed(todo, verdict, record.offsets, current)
        answers: dict[TP, str | None] = {}
        if todo.to_commit:
            self._check_not_deleted(body, stop)
            status = self._apply(body, steps.commit_started(status, _now()), status)
            before = {tp: record.offsets[tp] for tp in todo.to_commit if tp in record.offsets}
            try:
                answers = admin.commit_offsets(group_id, todo.to_commit)
            except KafkaFailure as failure:
                if failure.code in OUTCOME_UNKNOWN:
                    self._answer_lost("OffsetCommit", body, group_id, before, todo.to_commit, failure, record.name,
                                      then="commits only partitions still at their backed-up offset")
                raise
            audit.changed("OffsetCommit", body, group_id, before, todo.to_commit, answers, None, record.name)
        for error in answers.values():
            if error is not None:
                metrics.kafka_error(error)
        after = admin.committed_offsets(group_id)
        outcome = steps.finish_reset(status, group, target, todo, record.offsets, answers, after, interval, _now(),
                                     generation)
        status = self._apply(body, outcome, status)
        if status.get("phase") in steps.FINAL:
            metrics.reset_finished(str(status["phase"]), int(status.get("reset", 0)))
        return status

    # -- spec.pauseWorkloads (decisions/workload_pause.py)

    def _pause(self, body: dict[str, Any], spec: ResetSpec, status: dict[str, Any], admin: KafkaAdmin
               ) -> tuple[dict[str, Any], bool]:
        """Approved, not yet backed up: record the workloads' replicas (once: the status is the safe point),
        scale them to zero, and say whether the group is Empty. Past pauseTimeout: Failed (the caller then
        scales them back)."""
        namespace, generation = body["metadata"]["namespace"], _generation(body)
        if not pause.recorded(status):
            replicas: dict[pause.Workload, int] = {}
            for index, workload in enumerate(spec.pause_workloads):
                try:
                    replicas[workload] = self.kube.get_replicas(workload.kind, namespace, workload.name)
                except NotFound:
                    outcome = pause.missing(status, index, workload, namespace, _now(), generation)
                    return self._apply(body, outcome, status), False
                except Forbidden as exc:
                    raise _WorkloadForbidden(workload, "get", str(exc)) from None
            status = self._apply(body, pause.record(status, spec.pause_workloads, replicas, spec.group, _now(),
                                                    generation), status)
            audit.log.info("Paused %s/%s group=%s workloads=%s", namespace, body["metadata"]["name"], spec.group,
                           ",".join(f"{w.kind}/{w.name}={n}" for w, n in replicas.items()))
        to_scale = [p for p in pause.recorded(status) if p.state == pause.RECORDED]
        for paused in to_scale:
            if paused.replicas == 0:
                continue
            try:
                self.kube.scale(paused.kind, namespace, paused.name, 0)
            except NotFound:
                pass  # deleted since it was recorded: its scale back says so
            except Forbidden as exc:
                raise _WorkloadForbidden(paused.workload, "patch", str(exc)) from None
        if to_scale:
            status = self._apply(body, pause.scaled_down(status), status)
        now_ms = int(time.time() * 1000)
        deadline = iso(pause.deadline_ms(status, spec.pause_timeout_ms) or now_ms)
        expired = pause.expired(status, spec.pause_timeout_ms, now_ms)
        try:
            group = admin.describe_group(spec.group)
        except KafkaFailure as failure:
            if not expired:
                raise
            outcome = pause.timed_out(status, None, f"{failure.code}: {failure.message}", spec.pause_timeout, _now(),
                                      generation)
            return self._apply(body, outcome, status), False
        if expired:  # members still there, or the reset kept failing to start (Kafka, a topic gone)
            outcome = pause.timed_out(status, group, pause.last_problem(status), spec.pause_timeout, _now(), generation)
            return self._apply(body, outcome, status), False
        if not group.active:
            return status, True
        return self._apply(body, pause.waiting(status, group, deadline, _now(), generation), status), False

    def _unpause_first(self, body: dict[str, Any], status: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Paused workloads come back whatever else is wrong (a Secret or the spec no longer readable, Kafka
        gone): a final reset scales them back here, and one still waiting past pauseTimeout (its spec read as
        well as it can be) times out. (True when the visit is over, the status now): the visit goes on from the
        status written here, so a scale back is not done (and said) twice."""
        namespace, generation = body["metadata"]["namespace"], _generation(body)
        try:
            if status.get("phase") in steps.FINAL:
                if pause.pending(status):
                    status = self._restore_workloads(body, status)
                return False, status  # then settle conditions as usual
            if not pause.applies(status):  # Running with commitStartTime: finish first, then scale back
                return False, status
            try:
                spec = parse_reset_spec(body.get("spec") or {})
                timeout_ms, timeout = spec.pause_timeout_ms, spec.pause_timeout
            except SpecError:
                timeout_ms, timeout = pause.DEFAULT_TIMEOUT_MS, "5m"
            problem = pause.last_problem(status)  # none: waiting for members, which _pause names at its deadline
            if problem is None or not pause.expired(status, timeout_ms, int(time.time() * 1000)):
                return False, status
            outcome = pause.timed_out(status, None, problem, timeout, _now(), generation)
            return True, self._restore_workloads(body, self._apply(body, outcome, status))
        except _WorkloadForbidden as exc:
            current = self.kube.get_custom(RESETS, namespace, body["metadata"]["name"]).get("status") or {}
            return True, self._apply(body, pause.access_denied(current, exc.workload, exc.verb, namespace, exc.answer,
                                                               _now(), generation, self.options.retry_interval),
                                     current)

    def _restore_workloads(self, body: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Scale each paused workload back to its recorded replicas, unless someone scaled it meanwhile; the
        status says what was done with each."""
        namespace = body["metadata"]["namespace"]
        entries: list[pause.Paused] = []
        for paused in pause.recorded(status):
            if not paused.pending:
                entries.append(paused)
                continue
            current: int | None = None
            try:
                current = self.kube.get_replicas(paused.kind, namespace, paused.name)
            except NotFound:
                pass
            except Forbidden as exc:
                raise _WorkloadForbidden(paused.workload, "get", str(exc)) from None
            replicas, after = pause.restore_action(paused, current)
            if replicas is not None:
                try:
                    self.kube.scale(paused.kind, namespace, paused.name, replicas)
                except NotFound:
                    _, after = pause.restore_action(paused, None)
                except Forbidden as exc:
                    raise _WorkloadForbidden(paused.workload, "patch", str(exc)) from None
            entries.append(after)
        status = self._apply(body, pause.restored(status, entries), status)
        audit.log.info("Unpaused %s/%s workloads=%s", namespace, body["metadata"]["name"],
                       ",".join(f"{p.kind}/{p.name}:{p.state}" for p in entries))
        return status

    # -- helpers

    def _load_backup(self, body: Mapping[str, Any], status: Mapping[str, Any]) -> BackupRecord:
        """The stored backup: the offsets before, and the plan to commit (no copy of it is in the status)."""
        name = str((status.get("backup") or {}).get("name") or "")
        try:
            return self.store.read(body["metadata"]["namespace"], name)
        except (NotFound, BackupError) as exc:
            raise BackupNotStored(f"backup {name} cannot be read ({exc}); it holds the plan to commit") from None


def _approved_target(recorded: Mapping[str, Any], spec: ResetSpec) -> ResetTarget:
    """The target as approved (status.target.spec), for messages; the spec's if none was recorded."""
    raw = (recorded.get("spec") or {}).get("target")
    try:
        return parse_target(raw) if isinstance(raw, Mapping) else spec.target
    except SpecError:
        return spec.target

