"""One visit of an OffsetDeletion: the I/O around decisions/deletion_steps.py (handlers/offset_deletion.py
says when a visit happens).

Each visit re-reads the object from the API under a per-object lock, so a visit never acts on a stale
status, and runs the next steps of the state machine, writing the status before every Kafka call that
changes offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kafka_offsets_model.errors import SpecError

from ..adapters import audit, metrics
from ..adapters.backup_store import BackupNotStored, backup_name
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.kube import NotFound
from ..decisions import deletion_steps as steps
from ..decisions import step_outcomes as outcomes
from ..decisions.approval import approval_of
from ..decisions.conditions import generation_of as _generation
from ..decisions.connection_spec import connection_from_spec
from ..decisions.deletion_spec import parse_spec
from ..decisions.deletion_steps import DeletionStep
from ..decisions.fresh_verdict import FreshVerdict, rederive
from ..engines.job import CancelFlag
from ..model.api import DELETION_KIND, DELETIONS
from ..model.backups import Action, BackupError, BackupRecord, Requester, parse_backup
from ..model.kinds.offset_deletion import DeletionSpec
from ..model.offsets import OUTCOME_UNKNOWN, TP, Committed, GroupInfo, KafkaFailure
from ..model.reasons import Reason
from ..model.times import iso, parse_iso
from .fresh_facts import log_position, read_facts
from .visits import ObjectVisits, connection_where
from .visits import now as _now

log = logging.getLogger(__name__)


class DeletionReconciler(ObjectVisits):
    plural = DELETIONS
    log = log
    cancelled_text = "cancelled: deleted before its change was sent to Kafka"
    stopping_text = ("%s/%s: not continued here: this operator process is stopping or paused for another "
                     "(the one that acts next continues)")
    sent_text = "its change was sent to Kafka"

    def _change_sent(self, status: Mapping[str, Any], backup: str | None) -> bool:
        return bool(status.get("deleteStartTime")) or status.get("phase") in (
            outcomes.SUCCEEDED, outcomes.PARTIALLY_FAILED, steps.RESTORED, outcomes.FAILED)

    def _reconcile(self, body: dict[str, Any], stop: CancelFlag | None) -> None:
        namespace = body["metadata"]["namespace"]
        status: dict[str, Any] = dict(body.get("status") or {})
        generation = _generation(body)
        raw_spec: Mapping[str, Any] = body.get("spec") or {}
        try:
            spec = parse_spec(raw_spec)
            kafka, protection = self._connection_spec(namespace, spec, status)
            settings = connection_from_spec(kafka, lambda secret: self.kube.secret_data(namespace, secret),
                                            "status.target.kafka" if status.get("target") else connection_where(spec.policy_ref),
                                            self.kube.strimzi_reader(namespace))
        except SpecError as exc:
            self._apply(body, outcomes.spec_problem(status, exc.field, exc.problem, Reason(exc.reason), _now(), generation))
            return
        step = steps.next_step(spec, status)
        if step is DeletionStep.AWAIT:
            self._apply(body, steps.awaiting_approval(status, _now(), generation, steps.rebase_plan(spec)))
            return
        # A keep-alive rebase (spec.rebase) removes nothing for good: it is how protection keeps the group.
        if step in (DeletionStep.BACKUP, DeletionStep.DELETE) and protection is not None and not spec.rebase:
            group = (status.get("target") or {}).get("group") or spec.group
            pattern = outcomes.protecting_pattern(protection[1], group)
            if pattern is not None:
                self._apply(body, steps.protected(status, group, protection[0], pattern, _now(), generation))
                audit.log.info("Refused %s/%s group=%s: protected by policy %s (%r)", namespace,
                               body["metadata"]["name"], group, protection[0], pattern)
                return
        if step is DeletionStep.BACKUP and self._approval_refused(body, spec.policy_ref, status):
            return
        changed = steps.frozen_fields(raw_spec, status)
        status = self._apply(body, steps.spec_frozen(status, changed, _now(), generation) if changed
                             else steps.spec_unfrozen(status, _now(), generation), status)
        if step is DeletionStep.DONE:
            self._apply(body, steps.settled(status, _now(), generation))
            return
        try:
            with self.ctx.kafka_gate, KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
                # protect is the cluster's: any policy the operator watches, whichever this one references; but
                # a keep-alive rebase of a group its own policy protects is how that protection keeps the group
                target = status.get("target") or {}
                group = str(target.get("group") or spec.group)
                own_keep_alive = (spec.rebase and protection is not None
                                  and outcomes.protecting_pattern(protection[1], group) is not None)
                if not own_keep_alive and self._refused_by_protection(
                        body, status, target.get("clusterId") or admin.cluster_id(), group, "deleted",
                        None if step is DeletionStep.RESTORE else outcomes.FAILED, generation) is not None:
                    return
                if step is DeletionStep.BACKUP:
                    status = self._backup(body, spec, kafka, status, admin)
                    step = steps.next_step(spec, status)
                if step is DeletionStep.DELETE:
                    status = self._delete(body, spec, status, admin, stop)
                    step = steps.next_step(spec, status)
                if step is DeletionStep.RESTORE:
                    self._restore(body, spec, status, admin, stop)
        except KafkaFailure as failure:
            metrics.kafka_error(failure.code)
            current = self.kube.get_custom(DELETIONS, namespace, body["metadata"]["name"]).get("status") or {}
            self._apply(body, steps.kafka_problem(current, failure.code, failure.message, self.options.retry_interval,
                                                  _now(), generation, approved=spec.approved), current)
        except BackupNotStored as exc:
            self._apply(body, outcomes.backup_not_stored(status, str(exc), self.options.retry_interval, _now(),
                                                      generation), status)

    # -- the steps

    def _backup(self, body: dict[str, Any], spec: DeletionSpec, kafka: Mapping[str, Any], status: dict[str, Any],
                admin: KafkaAdmin) -> dict[str, Any]:
        # Where the group's __consumer_offsets partition ends BEFORE the offsets are read: the re-check right
        # before the change reads every record of the group from here, so nothing committed after it is missed.
        offsets_log = log_position(admin, spec.group, self.options.kafka_timeout_ms)
        group = admin.describe_group(spec.group)
        committed = admin.committed_offsets(spec.group)
        now = _now()
        if spec.delete_group:  # the whole group: every offset it has is backed up
            topics = admin.topic_names() if spec.require_topics_deleted else None
            plan = steps.plan_group_backup(spec, status, group, committed, topics, now, _generation(body))
        else:
            plan = steps.plan_backup(spec, status, group, committed, now, _generation(body))
        if plan.group_missing is not None:
            status = self._apply(body, plan.group_missing, status)
            metrics.deletion_finished(outcomes.FAILED, 0, 0)
            return status
        cluster_id = admin.cluster_id()
        stored = self.store.write(self._record(body, Action.DELETE, cluster_id, admin, spec.group, plan.offsets,
                                               "approved OffsetDeletion", now, extra={"offsetsLog": offsets_log}))
        target = outcomes.target_of(body.get("spec") or {}, kafka, cluster_id, admin.settings.bootstrap_servers)
        audit.log.info("BackedUp %s/%s group=%s cluster=%s partitions=%d backup=%s", body["metadata"]["namespace"],
                       body["metadata"]["name"], stored.group, cluster_id, stored.partitions, stored.name)
        return self._apply(body, steps.backup_taken(status, stored, plan, target, now, _generation(body),
                                                    inline_limit=self.options.large_backup_partitions,
                                                    offsets_log=offsets_log), status)

    def _delete(self, body: dict[str, Any], spec: DeletionSpec, status: dict[str, Any], admin: KafkaAdmin,
                stop: CancelFlag | None) -> dict[str, Any]:
        if spec.delete_group:
            return self._delete_group(body, spec, status, admin, stop)
        backup = self._load_backup(body, status)
        group_id = status["target"]["group"] if status.get("target") else spec.group
        live = admin.describe_group(group_id)  # the live re-check also proves the coordinator answers
        current = admin.committed_offsets(group_id)
        todo = steps.plan_deletion(backup, current, started=bool(status.get("deleteStartTime")))
        gone = [(r["topic"], r["partition"]) for r in todo.results if r["status"] == steps.DELETED]
        audit.confirmed("OffsetDelete", body, group_id, {tp: backup[tp] for tp in gone}, None,
                        (status.get("backup") or {}).get("name"))  # sent by an earlier attempt: at-least-once
        if todo.to_delete:
            verdict = self._rederive(admin, spec, status, group_id, live, todo.to_delete, whole_group=False)
            todo = steps.apply_verdict(todo, verdict)
        answers: dict[TP, str | None] = {}
        top_error: str | None = None
        if todo.to_delete:
            self._check_not_deleted(body, stop)
            status = self._apply(body, steps.deletion_started(status, _now()), status)
            started = time.monotonic()
            try:
                answers = admin.delete_offsets(group_id, todo.to_delete)
            except KafkaFailure as failure:
                if failure.code in OUTCOME_UNKNOWN:
                    self._answer_lost("OffsetDelete", body, group_id, {tp: backup[tp] for tp in todo.to_delete},
                                      None, failure, (status.get("backup") or {}).get("name"))
                if failure.retriable:
                    raise
                top_error = failure.code
            metrics.observe_delete_request(time.monotonic() - started)
            audit.changed("OffsetDelete", body, group_id, {tp: backup[tp] for tp in todo.to_delete}, None, answers,
                          top_error, (status.get("backup") or {}).get("name"))
        for error in [top_error, *answers.values()]:
            if error is not None:
                metrics.kafka_error(error)
        outcome = steps.finish_deletion(spec, status, todo, answers, top_error, _now(), _generation(body))
        status = self._apply(body, outcome, status)
        metrics.deletion_finished(status.get("phase", ""), int(status.get("deleted", 0)), int(status.get("failed", 0)))
        return status

    def _delete_group(self, body: dict[str, Any], spec: DeletionSpec, status: dict[str, Any], admin: KafkaAdmin,
                      stop: CancelFlag | None) -> dict[str, Any]:
        """spec.deleteGroup: the live re-check (no members, exactly the backed-up offsets, all of listed topics;
        with spec.requireTopicsDeleted none of a topic that exists), then DeleteGroups."""
        backup = self._load_backup(body, status)
        group_id = status["target"]["group"] if status.get("target") else spec.group
        backup_name_ = (status.get("backup") or {}).get("name")
        live = admin.describe_group(group_id)
        current = admin.committed_offsets(group_id)
        now, generation = _now(), _generation(body)
        if status.get("deleteStartTime") and not current and not live.exists:
            # An earlier attempt sent DeleteGroups and its answer was lost (or this process stopped): done.
            audit.confirmed("DeleteGroups", body, group_id, backup, None, backup_name_)
            outcome = steps.finish_group_deletion(spec, status, backup, None, now, generation)
        else:
            topics = admin.topic_names() if spec.require_topics_deleted else None
            problem = steps.group_deletion_problem(spec, live, current, backup, topics)
            if problem is None:
                problem = self._rederive(admin, spec, status, group_id, live, sorted(current), whole_group=True).group
            if problem is not None:
                outcome = steps.group_not_deleted(spec, status, current, problem, now, generation)
                audit.log.info("NotDeleted %s/%s group=%s: %s", body["metadata"]["namespace"],
                               body["metadata"]["name"], group_id, problem)
            else:
                self._check_not_deleted(body, stop)
                status = self._apply(body, steps.deletion_started(status, _now()), status)
                started = time.monotonic()
                try:
                    error = admin.delete_group(group_id, raise_retriable=True)
                except KafkaFailure as failure:
                    if failure.code in OUTCOME_UNKNOWN:
                        self._answer_lost("DeleteGroups", body, group_id, backup, None, failure, backup_name_)
                    if failure.retriable:
                        raise
                    error = failure.code
                metrics.observe_delete_request(time.monotonic() - started)
                audit.changed("DeleteGroups", body, group_id, backup, None, {tp: error for tp in backup}, error,
                              backup_name_)
                if error is not None:
                    metrics.kafka_error(error)
                outcome = steps.finish_group_deletion(spec, status, backup, error, _now(), generation)
        status = self._apply(body, outcome, status)
        metrics.deletion_finished(status.get("phase", ""), int(status.get("deleted", 0)), int(status.get("failed", 0)))
        return status

    def _restore(self, body: dict[str, Any], spec: DeletionSpec, status: dict[str, Any], admin: KafkaAdmin,
                 stop: CancelFlag | None) -> dict[str, Any]:
        """Restore what this deletion deleted: from its stored backup, into the group and cluster recorded at
        approval (status.target), never into what the spec names now."""
        backup = self._load_backup(body, status)
        target = status.get("target") or {}
        group_id = str(target.get("group") or spec.group)
        now, generation, interval = _now(), _generation(body), self.options.retry_interval
        if target.get("clusterId"):
            found = admin.cluster_id()
            if found != target["clusterId"]:
                return self._apply(body, steps.cluster_mismatch(status, target["clusterId"], found, interval, now,
                                                                generation), status)
        group = admin.describe_group(group_id)
        if group.active:
            metrics.restore_finished("Blocked")
            return self._apply(body, steps.restore_blocked(status, group, interval, now, generation), status)
        current = admin.committed_offsets(group_id)
        todo = steps.plan_restore(backup, steps.deleted_partitions(status, backup), current)
        again = [(r["topic"], r["partition"]) for r in todo.results if r["status"] == steps.RESTORED]
        audit.confirmed("OffsetCommit", body, group_id, None, {tp: backup[tp] for tp in again}, None)
        answers: dict[TP, str | None] = {}
        if todo.to_commit:
            stored = self.store.write(self._record(body, Action.RESTORE, target.get("clusterId"), admin, group_id,
                                                   {tp: c for tp, c in current.items() if tp in todo.to_commit},
                                                   "spec.restore of an OffsetDeletion", now,
                                                   extra={"restores": (status.get("backup") or {}).get("name"),
                                                          "partitions": [list(tp) for tp in sorted(todo.to_commit)]}))
            self._check_not_deleted(body, stop)
            try:
                answers = admin.commit_offsets(group_id, todo.to_commit)
            except KafkaFailure as failure:
                if failure.code in OUTCOME_UNKNOWN:
                    self._answer_lost("OffsetCommit", body, group_id, None, todo.to_commit, failure, stored.name)
                raise
            audit.changed("OffsetCommit", body, group_id, None, todo.to_commit, answers, None, stored.name)
        for error in answers.values():
            if error is not None:
                metrics.kafka_error(error)
        outcome = steps.finish_restore(status, todo, answers, group, interval, now, generation)
        status = self._apply(body, outcome, status)
        if status.get("phase") == steps.RESTORED:
            metrics.restore_finished("Restored" if not status.get("restoreResults") or all(
                r["status"] != steps.FAILED_RESULT for r in status["restoreResults"]) else "Incomplete")
        return status

    # -- the verdict from fresh facts (decisions/fresh_verdict.py)

    def _rederive(self, admin: KafkaAdmin, spec: DeletionSpec, status: Mapping[str, Any], group: str,
                  live: GroupInfo, partitions: list[TP] | tuple[TP, ...], *, whole_group: bool) -> FreshVerdict:
        """Right before the change: the group's records since the scan (or since the backup was read) and its
        state now, and what they say must not be touched. A failure to read them raises KafkaFailure
        (retried): nothing is changed on facts that could not be read."""
        facts = read_facts(admin, group, live, spec.scan, status.get("backup") or {}, self.options.kafka_timeout_ms)
        if spec.scan is not None and spec.scan.group_type in ("consumer", "streams") and not live.exists:
            # DescribeGroups shows KIP-848 and streams groups as Dead: their own describe API tells
            facts = replace(facts, modern=admin.describe_modern_group(group, spec.scan.group_type))
        verdict = rederive(partitions, facts, spec.reasons, proposed=spec.scan is not None, whole_group=whole_group)
        if verdict.group is not None or verdict.partitions:
            audit.log.info("Changed group=%s since %s: %s", group, facts.since_what, verdict.group or "; ".join(
                f"{t}-{p}: {w}" for (t, p), w in sorted(verdict.partitions.items())))
        return verdict

    # -- helpers

    def _record(self, body: Mapping[str, Any], action: Action, cluster_id: str | None, admin: KafkaAdmin,
                group: str, offsets: Mapping[TP, Committed], reason: str, now: str,
                extra: Mapping[str, Any] | None = None) -> BackupRecord:
        meta = body["metadata"]
        who = approval_of(body.get("spec"))
        expires = iso((parse_iso(now) or 0) + int(self.options.backup_retention_s * 1000))
        return BackupRecord(
            name=backup_name("offsetdeletion", meta["name"], action, str(meta.get("uid") or meta["name"])),
            action=action, cluster_id=cluster_id, bootstrap_servers=admin.settings.bootstrap_servers,
            group=group, offsets=dict(offsets),
            requested_by=Requester(DELETION_KIND, meta["namespace"], meta["name"], str(meta.get("uid") or ""), reason,
                                   who.requested_by, who.approved_by),
            taken_at=now, expires_at=expires, extra=dict(extra or {}))

    def _load_backup(self, body: Mapping[str, Any], status: Mapping[str, Any]) -> dict[TP, Committed]:
        """The stored backup (the one that outlives this resource); the status' copy if the store lost it."""
        backup = status.get("backup") or {}
        if backup.get("name"):
            try:
                return dict(self.store.read(body["metadata"]["namespace"], backup["name"]).offsets)
            except (NotFound, BackupError):
                if backup.get("offsets") is None:
                    raise
                log.warning("backup %s unreadable; using the status' copy", backup["name"])
        return parse_backup(backup.get("offsets") or [])

