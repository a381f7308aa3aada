"""A ConsumerGroupOffsetPolicy's worker: the I/O around the policy decisions (decisions/) and the analysis
engines (engines/). handlers/consumer_group_offset_policy.py runs one worker per policy as a Kopf daemon.

The worker wakes every few seconds (or when stopped), re-reads the policy and, when a
run is due (a new spec generation, or spec.schedule.interval since the last run, or the backoff after a
failure: decisions/schedule.py), runs one visit:

    spec + Secrets -> Kafka preflight (retention) -> analysis (Local | SparkApplication)
    -> live re-check (DescribeGroups, OffsetFetch) -> OffsetDeletions per mode -> keep-alive -> status
    -> history (the oldest finished OffsetDeletions beyond spec.history.finishedDeletionsLimit go)

Everything blocking runs in a thread, off the event loop; a deleted policy (or a stopping operator) sets
the daemon's `stopped` flag, which cancels a running analysis. A visit never raises: every failure ends in
a status condition naming its reason (and, for a bad spec, the field), so nothing crash-loops.

The policy's OffsetDeletions carry no ownerReference to it (decisions/proposals.py says why): when the
policy is deleted, `deleted` (a Kopf deletion handler, so the policy waits behind Kopf's finalizer) first
waits for a visit under way to end, then deletes the children that never started and leaves the others.
DryRun writes nothing to Kafka: keep-alive only reports what it would do there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import kopf

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.rules import CANDIDATE_REASONS
from kafka_offsets_model.rules import Reason as Verdict

from ..adapters import metrics
from ..adapters.backup_store import BackupStore
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.keepalive_store import RebaseBackups, RecommitIntents
from ..adapters.kube import Conflict, KubeError, NotFound, Refused
from ..context import OperatorContext
from ..decisions import keepalive, policy_status, proposals, schedule
from ..decisions.connection_spec import connection_from_spec
from ..decisions.policy_spec import Engine, Mode, PolicySpec, parse_policy_spec
from ..decisions.scan_sharing import share_key
from ..decisions.spark_application import DEFAULT_MAIN_FILE
from ..engines.dispatch import run as run_analysis
from ..engines.job import AnalysisCancelled, AnalysisFailed, CancelFlag, Job
from ..engines.kube_job import JobEngine
from ..engines.spark_application import DEFAULT_IMAGE_ENV, SparkApplicationEngine
from ..model.api import DELETIONS, GROUP, POLICIES, POLICY_LABEL, VERSION
from ..model.connection import ConnectionSettings
from ..model.offsets import TP, Committed, KafkaFailure
from ..model.reasons import Reason
from ..model.report import Report
from ..model.times import parse_iso
from .keepalive import BLOCKED, PROPOSED, KeepAliveResult, Proposer, audit_body, run_pass

log = logging.getLogger(__name__)

RETENTION_CONFIG = "offsets.retention.minutes"
MAIN_FILE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_MAIN_FILE"
# Visits under way at once when runs share scans (either engine): each waits in its own thread for its report,
# so this bounds how many policies one scan can serve in one go (the others join the next scan).
SHARED_VISITS = 128
# Lists and deletes of one history trim: a child changed since its list is judged again on the next list.
_TRIM_ATTEMPTS = 3


class PolicyRunner:
    def __init__(self, ctx: OperatorContext) -> None:
        self.kube = ctx.kube
        self.options = ctx.options
        self.tick_s = max(0.2, min(5.0, ctx.options.retry_interval))
        self.retry_ms = int(ctx.options.retry_interval * 1000)
        image = ctx.options.spark_image or os.environ.get(DEFAULT_IMAGE_ENV)
        main_file = os.environ.get(MAIN_FILE_ENV) or DEFAULT_MAIN_FILE
        self.spark = SparkApplicationEngine(ctx.kube, image, main_file, poll_s=min(2.0, self.tick_s))
        self.kube_job = JobEngine(ctx.kube, image, main_file, poll_s=min(2.0, self.tick_s))
        self.default_engine = ctx.options.default_engine
        self.failures: dict[tuple[str, str], int] = {}
        # One analysis at a time in this operator when scans are not shared. Shared runs do not take it: the
        # engines queue them themselves (Local: one scan at a time in the operator; SparkApplication: one
        # application per batch, in the cluster), and policies of one cluster due together must be in the
        # engine's queue together to share a scan (issue 12).
        self.slot = asyncio.Lock()
        self.sharing = ctx.options.scan_share_window_s is not None
        self.kafka_gate = ctx.kafka_gate
        self.visits = ThreadPoolExecutor(SHARED_VISITS, thread_name_prefix="policy-visit") if self.sharing else None
        self.visiting: dict[tuple[str, str], asyncio.Event] = {}  # a visit under way; set when it ends

    def close(self) -> None:
        """The operator stops: no new visit threads (those under way end on their `stopped` flag)."""
        if self.visits is not None:
            self.visits.shutdown(wait=False)

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    # -- the daemon's loop

    async def serve(self, namespace: str, name: str, stopped: kopf.DaemonStopped) -> None:
        try:
            while not stopped:
                try:
                    body = await asyncio.to_thread(self._read, namespace, name)
                except KubeError as exc:  # transient: the daemon must outlive an API server hiccup
                    log.warning("cannot read policy %s/%s: %s", namespace, name, exc)
                    await stopped.wait(timeout=self.tick_s)
                    continue
                if body is None or body["metadata"].get("deletionTimestamp"):
                    return
                status = body.get("status") or {}
                if schedule.due(_generation(body), status, self.now_ms()):
                    if await asyncio.to_thread(self._can_run, body):
                        async with self._slot(body):
                            await self._visit_marked(namespace, name, stopped)
                    else:  # no analysis can start: say why at once, not behind other policies' runs
                        await self._visit_marked(namespace, name, stopped)
                    continue  # re-read: the status now says when the next run is due
                wait = schedule.wait_ms(parse_iso(status.get("nextRunTime")), self.now_ms(), int(self.tick_s * 1000))
                await stopped.wait(timeout=max(0.05, wait / 1000))
        finally:
            self.failures.pop((namespace, name), None)
            if stopped:
                metrics.forget_policy(namespace, name, list(CANDIDATE_REASONS))

    def _slot(self, body: Mapping[str, Any]) -> contextlib.AbstractAsyncContextManager[Any]:
        """The operator-wide slot, unless this run may share its scan (either engine)."""
        if self.sharing and _engine(body) is not None:
            return contextlib.nullcontext()
        return self.slot

    def _can_run(self, body: Mapping[str, Any]) -> bool:
        """Whether a visit may start an analysis: its spec and Secrets are usable. One that cannot (an invalid
        spec, a missing Secret) needs no slot, so its condition is written at once even while other policies'
        analyses (or their waits for an unreachable Kafka) hold it."""
        namespace = body["metadata"]["namespace"]
        try:
            spec = parse_policy_spec(body.get("spec"), self.default_engine)
            connection_from_spec(spec.kafka, lambda secret: self.kube.secret_data(namespace, secret))
        except (SpecError, KubeError):
            return False
        return True

    async def _visit_marked(self, namespace: str, name: str, stopped: kopf.DaemonStopped) -> None:
        """One visit, marked as under way so that the deletion handler can wait for it (`quiesce`). The mark
        is set before the visit re-reads the policy, so a visit that could have missed the deletionTimestamp
        is always waited for, and one that starts later sees it and does nothing."""
        key = (namespace, name)
        done = self.visiting[key] = asyncio.Event()
        loop = asyncio.get_running_loop()

        def ended() -> None:
            if self.visiting.get(key) is done:
                del self.visiting[key]
            done.set()

        def run() -> None:
            # The end is signalled by the thread itself: a daemon cancelled by Kopf (cancellation_timeout)
            # stops awaiting, but the visit's thread runs on until it sees `stopped`.
            try:
                self.visit(namespace, name, stopped)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is gone: the operator has stopped
                    loop.call_soon_threadsafe(ended)

        if self.visits is None:
            await asyncio.to_thread(run)
        else:
            # In a copy of the daemon's context (as asyncio.to_thread does): Kopf finds its event queue and
            # settings there, so kopf.event() from the visit's thread reaches its poster on the loop.
            await loop.run_in_executor(self.visits, contextvars.copy_context().run, run)

    async def quiesce(self, namespace: str, name: str) -> None:
        """Wait until no visit of this policy is under way (the deleted policy's daemon is told to stop at
        the same time, which cancels its analysis and the proposals not yet made)."""
        done = self.visiting.get((namespace, name))
        if done is not None:
            await done.wait()

    # -- the policy's deletion (a Kopf deletion handler, in a thread)

    def deleted(self, body: Mapping[str, Any]) -> None:
        """Delete the policy's OffsetDeletions that never started; release the rest from an ownerReference
        an older operator set, so garbage collection does not take them with the policy. A Kubernetes error
        is raised: Kopf retries, and the policy stays (behind its finalizer) until this has succeeded."""
        meta = body["metadata"]
        plan = proposals.on_policy_deleted(self._children(body), body)
        deleted, kept = self._apply_cleanup(meta["namespace"], plan)
        log.info("policy %s/%s deleted: deleted %d unstarted OffsetDeletions%s; started and finished ones stay",
                 meta["namespace"], meta["name"], len(deleted), f" ({', '.join(deleted)})" if deleted else "")
        if kept:
            log.info("policy %s/%s: kept %s: changed since read (approved and started, say)", meta["namespace"],
                     meta["name"], ", ".join(kept))

    def _children(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """OffsetDeletions labelled with the policy's name; proposals.belongs_to then checks the uid."""
        meta = body["metadata"]
        return self.kube.list_objects(GROUP, VERSION, DELETIONS, meta["namespace"], {POLICY_LABEL: meta["name"]})

    def _apply_cleanup(self, namespace: str, plan: proposals.Cleanup) -> tuple[list[str], list[str]]:
        """Deletes (each only as it was read) and releases; returns what was deleted, and what changed since
        it was read and so was kept."""
        deleted: list[str] = []
        kept: list[str] = []
        for child, version in plan.delete:
            try:
                self.kube.delete_object(GROUP, VERSION, DELETIONS, namespace, child, resource_version=version)
            except Conflict:
                kept.append(child)
                continue
            deleted.append(child)
        for child, patch in plan.release:
            with contextlib.suppress(NotFound):
                self.kube.patch_object(GROUP, VERSION, DELETIONS, namespace, child, patch)
        return deleted, kept

    def _trim_history(self, body: Mapping[str, Any], spec: PolicySpec) -> None:
        """After a run: the oldest finished OffsetDeletions beyond the limit go (their backups stay). Best
        effort: a Kubernetes error here is logged and the next run tries again."""
        meta = body["metadata"]
        deleted: list[str] = []
        try:
            # A child that changed between the list and the delete (Kopf's own finalizer or annotation on
            # it, say) is kept by the precondition; it is judged again on a fresh list, a few times at most.
            for _ in range(_TRIM_ATTEMPTS):
                plan = proposals.history_overflow(self._children(body), body, spec.finished_deletions_limit)
                gone, kept = self._apply_cleanup(meta["namespace"], plan)
                deleted += gone
                if not kept:
                    break
        except KubeError as exc:
            log.warning("policy %s/%s: history not trimmed: %s", meta["namespace"], meta["name"], exc)
            return
        if deleted:
            log.info("policy %s/%s: deleted %d finished OffsetDeletions beyond spec.history.finishedDeletionsLimit "
                     "(%d): %s", meta["namespace"], meta["name"], len(deleted), spec.finished_deletions_limit,
                     ", ".join(deleted))

    def _read(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The policy, or None once it is gone; other API errors are raised."""
        try:
            return self.kube.get_custom(POLICIES, namespace, name)
        except NotFound:
            return None

    def _get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._read(namespace, name)
        except KubeError as exc:
            log.warning("cannot read policy %s/%s: %s", namespace, name, exc)
            return None

    # -- one visit (in a thread)

    def visit(self, namespace: str, name: str, cancel: CancelFlag) -> None:
        body = self._get(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            return  # a deleted policy proposes nothing more: its deletion handler is tidying up
        try:
            self._visit(body, cancel)
        except KubeError as exc:
            self._failed(body, Reason.KUBERNETES_API_ERROR, str(exc))
        except Exception as exc:  # a bug must not stop the policy's daemon: say it, retry with backoff
            log.exception("policy %s/%s: unexpected failure", namespace, name)
            with contextlib.suppress(Exception):
                self._failed(body, Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    def _visit(self, body: dict[str, Any], cancel: CancelFlag) -> None:
        namespace = body["metadata"]["namespace"]
        started = self.now_ms()
        refused: list[str] = []
        try:
            spec = parse_policy_spec(body.get("spec"), self.default_engine)
            settings = connection_from_spec(spec.kafka, lambda secret: self.kube.secret_data(namespace, secret),
                                            read_resource=self.kube.strimzi_reader(namespace))
        except SpecError as exc:
            if exc.reason in (Reason.SECRET_NOT_FOUND, Reason.STRIMZI_NOT_READY):  # may appear: retried with backoff
                self._failed(body, Reason(exc.reason), str(exc))
            else:  # waits for a new spec
                self._patch(body, policy_status.spec_invalid(_status(body), exc.field, exc.problem, Reason(exc.reason),
                                                    started, _generation(body)))
            return
        self._patch(body, policy_status.running(_status(body), spec.engine.value, started, _generation(body)))
        try:
            retention_ms, cluster_id = self._preflight(spec, settings)
            self._record_cluster(body, cluster_id)
            shared = self.sharing
            window_ms = int((self.options.scan_share_window_s or 0) * 1000)
            report = run_analysis(Job(body, spec, settings, retention_ms,
                                      share_key=share_key(settings, cluster_id) if shared else None,
                                      share_window_ms=window_ms if shared else 0),
                                  cancel, self.spark, self.kube_job)
            metrics.analysis_finished(spec.engine.value, "Succeeded", (self.now_ms() - started) / 1000)
            with KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
                kept, skipped = self._recheck(admin, spec, report)
                created, existing = self._propose(body, spec, kept, started, cancel, refused,
                                                  report.summary.get("snapshot"))
                # A stopping (or, for a peer, pausing) operator starts no keep-alive pass: the next one does it.
                kept_alive = [] if cancel.is_set() else self._keep_alive(admin, body, spec, report, retention_ms)
        except AnalysisCancelled:
            metrics.analysis_finished(spec.engine.value, "Cancelled", (self.now_ms() - started) / 1000)
            return
        except AnalysisFailed as exc:
            metrics.analysis_finished(spec.engine.value, "Failed", (self.now_ms() - started) / 1000)
            if exc.reason == Reason.INVALID_SPEC:
                field, _, problem = exc.message.partition(": ")
                self._patch(body, policy_status.spec_invalid(_status(body), field, problem, exc.reason, self.now_ms(), _generation(body)))
            else:
                self._failed(body, exc.reason, settings.redact(exc.message))
            return
        except KafkaFailure as exc:
            metrics.kafka_error(exc.code)
            reason = Reason.KAFKA_UNAVAILABLE if exc.retriable else Reason.KAFKA_ERROR
            self._failed(body, reason, f"Kafka at {settings.bootstrap_servers}: {exc.code}: {exc.message}")
            return
        run = policy_status.RunSummary(spec.engine.value, started, self.now_ms(), report, spec.mode, created, existing,
                              tuple(skipped), [r.line for r in kept_alive], tuple(refused),
                              tuple(policy_status.policy_warnings(spec.policy, report.groups)))
        if refused:
            self._event(body, "Warning", Reason.WRITE_REFUSED, f"{len(refused)} OffsetDeletions refused by the "
                        f"API server: {refused[0]}")
        self._succeeded(body, spec, run)
        self._trim_history(body, spec)

    # -- the steps

    def _preflight(self, spec: PolicySpec, settings: ConnectionSettings) -> tuple[int, str | None]:
        """Kafka answers (else KafkaUnavailable before any Spark starts) and its offsets retention (read only
        when the spec does not give it: DescribeConfigs may not be allowed); with the cluster's id (where the
        policy's protection applies; the key of decisions/scan_sharing when the run may share its scan)."""
        with self.kafka_gate, KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
            cluster_id = admin.cluster_id()  # where spec.protect applies (_record_cluster), and the scan's key
            if spec.broker_retention_ms is not None:
                return spec.broker_retention_ms, cluster_id
            configs = admin.broker_configs([RETENTION_CONFIG])
        minutes = configs.get(RETENTION_CONFIG)
        if minutes is None or not str(minutes).isdigit():
            raise AnalysisFailed(Reason.INVALID_SPEC, "spec.analysis.brokerRetention: is required: the brokers do not "
                                 f"report {RETENTION_CONFIG}")
        return int(minutes) * 60_000, cluster_id

    def _record_cluster(self, body: dict[str, Any], cluster_id: str | None) -> None:
        """status.kafkaCluster: the cluster this generation's connection reaches, where its spec.protect.groups
        protect (decisions/protection.py). Written when it changes, before anything else of the run."""
        patch = policy_status.kafka_cluster(_status(body), cluster_id, _generation(body))
        if patch:
            self._patch(body, patch)

    def _recheck(self, admin: KafkaAdmin, spec: PolicySpec, report: Report) -> tuple[list[proposals.Proposal], list[proposals.Skip]]:
        kept: list[proposals.Proposal] = []
        skipped: list[proposals.Skip] = []
        candidates = proposals.proposals(report.candidates)
        # Which topics exist now (one Metadata request, only when the report has offsets of deleted topics):
        # those offsets can only go with their whole group (proposals.recheck).
        deleted = any(Verdict.DELETED_TOPIC in p.reasons.values() for p in candidates)
        if deleted:
            with self.kafka_gate:
                topics = admin.topic_names()
        else:
            topics = None
        for proposal in candidates:
            with self.kafka_gate:
                live = admin.describe_group(proposal.group)
                committed: Mapping[TP, Committed] = admin.committed_offsets(proposal.group)
            result = proposals.recheck(proposal, live, committed, spec.policy.protect, topics)
            skipped.extend(result.skipped)
            if result.proposal is not None:
                kept.append(result.proposal)
        return kept, skipped

    def _propose(self, body: dict[str, Any], spec: PolicySpec, kept: list[proposals.Proposal], scan_ms: int,
                 cancel: CancelFlag, refused: list[str], snapshot: Mapping[str, Any] | None = None) -> tuple[int, int]:
        """Create the run's OffsetDeletions; `refused` gets one line per proposal the API server refused."""
        created = existing = 0
        approvals = proposals.Approvals(self.options.user, spec.separate_approver)
        for child in proposals.children(body, kept, spec.mode, scan_ms, approvals, snapshot):
            if cancel.is_set():  # the policy is being deleted (or the operator stops): propose nothing more
                raise AnalysisCancelled()
            meta = child["metadata"]
            try:
                made = self.kube.create_object(GROUP, VERSION, DELETIONS, meta["namespace"], child)
            except Refused as exc:  # this content is refused for good: said, and not retried before the next run
                refused.append(f"{meta['name']} (group {child['spec']['group']}): {exc}")
                log.warning("policy %s/%s: OffsetDeletion %s refused by the API server: %s",
                            body["metadata"]["namespace"], body["metadata"]["name"], meta["name"], exc)
                continue
            if made is not None:
                created += 1
                continue
            existing += 1  # the same proposal from an earlier run: Auto approves it if it still waits
            if proposals.approve_existing(spec.mode, self._find_child(meta["namespace"], meta["name"]), body):
                self.kube.patch_object(GROUP, VERSION, DELETIONS, meta["namespace"], meta["name"],
                                       approvals.approve_patch())
        metrics.deletions_created(spec.mode.value, created)
        if created:
            self._event(body, "Normal", Reason.OFFSET_DELETIONS_CREATED, f"{created} OffsetDeletions created "
                        f"({'approved' if spec.mode is Mode.AUTO else 'awaiting approval'})")
        return created, existing

    def _find_child(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.kube.get_custom(DELETIONS, namespace, name)
        except NotFound:
            return None

    def _keep_alive(self, admin: KafkaAdmin, body: dict[str, Any], spec: PolicySpec, report: Report,
                    retention_ms: int) -> list[KeepAliveResult]:
        if not spec.keep_alive:
            return []
        where = (BackupStore(self.kube), body, admin.cluster_id(), str(spec.kafka.get("bootstrapServers")),
                 self.options.backup_retention_s, self.options.user)
        store, intents = RebaseBackups(*where), RecommitIntents(*where)
        lead = keepalive.lead_ms(retention_ms, spec.interval_ms)
        results = run_pass(admin, store, report.protected, self.now_ms(), lead, write=spec.writes_to_kafka,
                           propose=self._rebase_proposer(body, spec), snapshot=report.summary.get("snapshot"),
                           timeout_ms=self.options.kafka_timeout_ms,
                           who=audit_body(body, self.options.user, self.options.user if spec.mode is Mode.AUTO else None),
                           intents=intents)
        for result in results:
            if result.preview:  # DryRun: said in the Ready condition; no Event, no count (nothing happened)
                continue
            metrics.keepalive_action(result.outcome)
            kind = "Warning" if result.outcome == BLOCKED else "Normal"
            self._event(body, kind, result.reason, result.line)
        if spec.interval_ms >= retention_ms:
            results.append(KeepAliveResult("*", BLOCKED, 0, "spec.schedule.interval is not shorter than the "
                                           "broker's retention: offsets may expire between two runs"))
        return results

    def _rebase_proposer(self, body: dict[str, Any], spec: PolicySpec) -> Proposer | None:
        """Approve mode: a keep-alive rebase becomes an OffsetDeletion (spec.rebase) that waits for an approval,
        since it deletes the group for a moment. Auto mode: a rebase proposal that still waits from Approve
        days is approved (Auto approves the policy's proposals), else the pass rebases itself."""
        if spec.mode is Mode.DRY_RUN:
            return None
        namespace = body["metadata"]["namespace"]
        approvals = proposals.Approvals(self.options.user, spec.separate_approver)

        def propose(group: str, offsets: Mapping[TP, Committed]) -> KeepAliveResult | None:
            manifest = proposals.rebase_manifest(body, group, {tp: c.offset for tp, c in offsets.items()},
                                                 Mode.APPROVE, self.now_ms(), approvals)
            if manifest is None:
                if spec.mode is Mode.AUTO:
                    return None
                return KeepAliveResult(group, BLOCKED, 0, (
                    f"its {len(offsets)} offsets do not fit one OffsetDeletion, so its rebase cannot be proposed; "
                    "nothing changed (mode Auto rebases it without a proposal)"))
            name = manifest["metadata"]["name"]
            child = self._find_child(namespace, name)
            state = proposals.rebase_state(child, body)
            n = len(offsets)
            if state == "ended":
                phase = ((child or {}).get("status") or {}).get("phase") or "unknown"
                return KeepAliveResult(group, BLOCKED, 0, (
                    f"its rebase proposal OffsetDeletion {name} ended ({phase}) and the group still needs one; "
                    "delete that OffsetDeletion to have it proposed again"))
            if state == "under way":
                return KeepAliveResult(group, PROPOSED, n, f"its rebase proposal OffsetDeletion {name} is approved "
                                       "and under way")
            if spec.mode is Mode.AUTO:
                if state == "missing":
                    return None  # Auto rebases it itself
                self.kube.patch_object(GROUP, VERSION, DELETIONS, namespace, name, approvals.approve_patch())
                return KeepAliveResult(group, PROPOSED, n, (
                    f"approved its waiting rebase proposal, OffsetDeletion {name} (mode Auto), which rebases it"))
            if state == "waiting":
                return KeepAliveResult(group, PROPOSED, n, (
                    f"its rebase proposal still waits: OffsetDeletion {name}; nothing changes in Kafka until "
                    "spec.approved is true"))
            try:
                made = self.kube.create_object(GROUP, VERSION, DELETIONS, namespace, manifest)
            except Refused as exc:
                return KeepAliveResult(group, BLOCKED, 0, f"its rebase proposal {name} was refused by the API "
                                       f"server: {exc}; nothing changed")
            said = "rebase proposed as" if made is not None else "its rebase proposal still waits:"
            return KeepAliveResult(group, PROPOSED, n, (
                f"{said} OffsetDeletion {name} (back up, DeleteGroups, then re-commit its {n} offsets as a "
                "simple group); nothing changes in Kafka until spec.approved is true"))

        return propose

    # -- status and events

    def _succeeded(self, body: dict[str, Any], spec: PolicySpec, run: policy_status.RunSummary) -> None:
        meta = body["metadata"]
        self.failures.pop((meta["namespace"], meta["name"]), None)
        patch = policy_status.run_succeeded(_status(body), run, run.completion_ms + spec.interval_ms, _generation(body))
        patch["conditions"] = policy_status.settled(patch, run.completion_ms, _generation(body))["conditions"]
        self._patch(body, patch)
        metrics.candidates(meta["namespace"], meta["name"], run.report.candidates_by_reason)
        metrics.policy_succeeded(meta["namespace"], meta["name"], run.completion_ms,
                                 policy_status.earliest_expiries(run.report, metrics.EXPIRY_GROUPS))

    def _failed(self, body: dict[str, Any], reason: Reason, message: str) -> None:
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        self.failures[key] = self.failures.get(key, 0) + 1
        try:
            interval = parse_policy_spec(body.get("spec")).interval_ms
        except SpecError:
            interval = self.retry_ms
        now = self.now_ms()
        retry = now + schedule.retry_delay_ms(self.failures[key], self.retry_ms, interval)
        patch = policy_status.run_failed(_status(body), reason, message, now, retry, _generation(body))
        patch["conditions"] = policy_status.settled(patch, now, _generation(body))["conditions"]
        self._patch(body, patch)

    def _patch(self, body: dict[str, Any], patch: Mapping[str, Any]) -> None:
        """Write the status, then the Event its Ready condition's change is worth (policy_status.ready_event)."""
        meta = body["metadata"]
        before = _status(body)
        current = self.kube.patch_status(POLICIES, meta["namespace"], meta["name"], patch)
        body["status"] = current.get("status") or {}
        event = policy_status.ready_event(before, body["status"])
        if event is not None:
            self._event(body, *event)
        ready = next((c for c in body["status"].get("conditions") or () if c.get("type") == "Ready"), None)
        if ready is not None:
            metrics.policy_ready(meta["namespace"], meta["name"], ready.get("status") == "True")

    def _event(self, body: Mapping[str, Any], kind: str, reason: Reason, message: str) -> None:
        try:
            kopf.event(cast(Any, dict(body)), type=kind, reason=str(reason), message=message[:1000])
        except Exception as exc:  # events are best effort, but a lost one is said
            meta = body.get("metadata") or {}
            log.warning("policy %s/%s: %s Event not posted (%s: %s): %s", meta.get("namespace"), meta.get("name"),
                        reason, type(exc).__name__, exc, message[:200])


def _status(body: Mapping[str, Any]) -> dict[str, Any]:
    return dict(body.get("status") or {})


def _engine(body: Mapping[str, Any]) -> Engine | None:
    try:
        return parse_policy_spec(body.get("spec")).engine
    except SpecError:
        return None


def _generation(body: Mapping[str, Any]) -> int | None:
    value = (body.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None
