"""One visit of a ConsumerGroupOffsetPolicy, in a thread: the I/O around the policy decisions (decisions/)
and the analysis engines (engines/). policy_scheduler.py says when a visit runs; a visit is

    spec + Secrets -> Kafka preflight (retention) -> analysis (Local | Job | SparkApplication)
    -> live re-check (DescribeGroups, OffsetFetch) -> OffsetDeletions per mode -> keep-alive -> status
    -> history (policy_cleanup.py: the oldest finished OffsetDeletions beyond the limit go)

A visit never raises: every failure ends in a status condition naming its reason (and, for a bad spec, the
field), so nothing crash-loops; a failure's retry is backed off (decisions/schedule.py). The `cancel` flag
(the daemon's `stopped`: the policy is deleted or the operator stops) cancels a running analysis and the
proposals not yet made. DryRun writes nothing to Kafka: keep-alive only reports what it would do there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import kopf

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.rules import OffsetReason

from ..adapters import metrics
from ..adapters.backup_store import BackupStore
from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.keepalive_store import RebaseBackups, RecommitIntents
from ..adapters.kube import KubeError, NotFound, Refused
from ..context import OperatorContext
from ..decisions import conditions, keepalive, policy_status, proposals, schedule
from ..decisions.conditions import generation_of
from ..decisions.connection_spec import connection_from_spec
from ..decisions.policy_spec import Mode, PolicySpec, parse_policy_spec
from ..decisions.scan_sharing import share_key
from ..decisions.spark_application import DEFAULT_MAIN_FILE
from ..engines.dispatch import run as run_analysis
from ..engines.job import AnalysisCancelled, AnalysisFailed, CancelFlag, Job
from ..engines.kube_job import JobEngine
from ..engines.spark_application import DEFAULT_IMAGE_ENV, SparkApplicationEngine
from ..model.api import DELETIONS, GROUP, POLICIES, VERSION
from ..model.connection import ConnectionSettings
from ..model.offsets import TP, Committed, KafkaFailure
from ..model.reasons import Reason
from ..model.report import Report
from .keepalive import BLOCKED, PROPOSED, KeepAliveResult, Proposer, audit_body, run_pass
from .policy_cleanup import ChildCleanup

log = logging.getLogger(__name__)

RETENTION_CONFIG = "offsets.retention.minutes"
MAIN_FILE_ENV = "KAFKA_OFFSET_OPERATOR_SPARK_MAIN_FILE"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ParsedSpec:
    """A policy's spec as the scheduler read it, and its parse (or why it does not parse): the visit re-reads
    the policy and uses this parse while the spec is the same one (one parse per visit), else parses what it
    read."""

    raw: Any
    spec: PolicySpec | SpecError


class PolicyVisit:
    """Runs visits of any policy; keeps each policy's count of failures in a row (its retry backoff)."""

    def __init__(self, ctx: OperatorContext, cleanup: ChildCleanup, poll_s: float) -> None:
        self.kube = ctx.kube
        self.options = ctx.options
        self.cleanup = cleanup
        self.retry_ms = int(ctx.options.retry_interval * 1000)
        image = ctx.options.spark_image or os.environ.get(DEFAULT_IMAGE_ENV)
        main_file = os.environ.get(MAIN_FILE_ENV) or DEFAULT_MAIN_FILE
        self.spark = SparkApplicationEngine(ctx.kube, image, main_file, poll_s=poll_s)
        self.kube_job = JobEngine(ctx.kube, image, main_file, poll_s=poll_s)
        self.default_engine = ctx.options.default_engine
        self.sharing = ctx.options.scan_share_window_s is not None
        self.kafka_gate: threading.BoundedSemaphore = ctx.kafka_gate
        self.failures: dict[tuple[str, str], int] = {}

    def forget(self, namespace: str, name: str) -> None:
        """The policy's daemon ends: its failure count goes with it."""
        self.failures.pop((namespace, name), None)

    def read(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The policy, or None once it is gone; other API errors are raised."""
        try:
            return self.kube.get_custom(POLICIES, namespace, name)
        except NotFound:
            return None

    def _get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.read(namespace, name)
        except KubeError as exc:
            log.warning("cannot read policy %s/%s: %s", namespace, name, exc)
            return None

    def visit(self, namespace: str, name: str, cancel: CancelFlag, parsed: ParsedSpec | None = None) -> None:
        """One visit of the policy as it is now; a deleted one is left to its deletion handler. `parsed`: the
        scheduler's parse of the spec it read, used while the spec read now is the same (one parse per visit)."""
        body = self._get(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            return  # a deleted policy proposes nothing more: its deletion handler is tidying up
        spec: PolicySpec | SpecError
        if parsed is not None and parsed.raw == body.get("spec"):
            spec = parsed.spec
        else:  # the spec changed since the scheduler read it (or no scheduler read it)
            try:
                spec = parse_policy_spec(body.get("spec"), self.default_engine)
            except SpecError as exc:
                spec = exc
        usable = spec if isinstance(spec, PolicySpec) else None
        try:
            self._visit(body, spec, cancel)
        except KubeError as exc:
            self._failed(body, Reason.KUBERNETES_API_ERROR, str(exc), usable)
        except Exception as exc:  # a bug must not stop the policy's daemon: say it, retry with backoff
            log.exception("policy %s/%s: unexpected failure", namespace, name)
            with contextlib.suppress(Exception):
                self._failed(body, Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", usable)

    def _visit(self, body: dict[str, Any], parsed: PolicySpec | SpecError, cancel: CancelFlag) -> None:
        """`parsed`: the spec's one parse, or why it does not parse."""
        namespace = body["metadata"]["namespace"]
        started = now_ms()
        refused: list[str] = []
        try:
            if isinstance(parsed, SpecError):
                raise parsed
            spec = parsed
            settings = connection_from_spec(spec.kafka, lambda secret: self.kube.secret_data(namespace, secret),
                                            read_resource=self.kube.strimzi_reader(namespace))
        except SpecError as exc:
            if exc.reason in (Reason.SECRET_NOT_FOUND, Reason.STRIMZI_NOT_READY):  # may appear: retried with backoff
                self._failed(body, Reason(exc.reason), str(exc), None if isinstance(parsed, SpecError) else parsed)
            else:  # waits for a new spec
                self._patch(body, policy_status.spec_invalid(_status(body), exc.field, exc.problem, Reason(exc.reason),
                                                    started, generation_of(body)))
            return
        self._patch(body, policy_status.running(_status(body), spec.engine.value, started, generation_of(body)))
        try:
            retention_ms, cluster_id = self._preflight(spec, settings)
            self._record_cluster(body, cluster_id)
            shared = self.sharing
            window_ms = int((self.options.scan_share_window_s or 0) * 1000)
            report = run_analysis(Job(body, spec, settings, retention_ms,
                                      share_key=share_key(settings, cluster_id) if shared else None,
                                      share_window_ms=window_ms if shared else 0),
                                  cancel, self.spark, self.kube_job)
            metrics.analysis_finished(spec.engine.value, "Succeeded", (now_ms() - started) / 1000)
            with KafkaAdmin(settings, self.options.kafka_timeout_ms) as admin:
                kept, skipped = self._recheck(admin, spec, report)
                created, existing = self._propose(body, spec, kept, started, cancel, refused,
                                                  report.summary.get("snapshot"))
                # A stopping (or, for a peer, pausing) operator starts no keep-alive pass: the next one does it.
                kept_alive = [] if cancel.is_set() else self._keep_alive(admin, body, spec, report, retention_ms)
        except AnalysisCancelled:
            metrics.analysis_finished(spec.engine.value, "Cancelled", (now_ms() - started) / 1000)
            return
        except AnalysisFailed as exc:
            metrics.analysis_finished(spec.engine.value, "Failed", (now_ms() - started) / 1000)
            if exc.reason == Reason.INVALID_SPEC:
                field, _, problem = exc.message.partition(": ")
                self._patch(body, policy_status.spec_invalid(_status(body), field, problem, exc.reason, now_ms(), generation_of(body)))
            else:
                self._failed(body, exc.reason, settings.redact(exc.message), spec)
            return
        except KafkaFailure as exc:
            metrics.kafka_error(exc.code)
            reason = Reason.KAFKA_UNAVAILABLE if exc.retriable else Reason.KAFKA_ERROR
            self._failed(body, reason, f"Kafka at {settings.bootstrap_servers}: {exc.code}: {exc.message}", spec)
            return
        run = policy_status.RunSummary(spec.engine.value, started, now_ms(), report, spec.mode, created, existing,
                              tuple(skipped), [r.line for r in kept_alive], tuple(refused),
                              tuple(policy_status.policy_warnings(spec.policy, report.groups)))
        if refused:
            self._event(body, "Warning", Reason.WRITE_REFUSED, f"{len(refused)} OffsetDeletions refused by the "
                        f"API server: {refused[0]}")
        self._succeeded(body, spec, run)
        self.cleanup.trim_history(body, spec)

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
        patch = policy_status.kafka_cluster(_status(body), cluster_id, generation_of(body))
        if patch:
            self._patch(body, patch)

    def _recheck(self, admin: KafkaAdmin, spec: PolicySpec, report: Report) -> tuple[list[proposals.Proposal], list[proposals.Skip]]:
        kept: list[proposals.Proposal] = []
        skipped: list[proposals.Skip] = []
        candidates = proposals.proposals(report.candidates)
        # Which topics exist now (one Metadata request, only when the report has offsets of deleted topics):
        # those offsets can only go with their whole group (proposals.recheck).
        deleted = any(OffsetReason.DELETED_TOPIC in p.reasons.values() for p in candidates)
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
        results = run_pass(admin, store, report.protected, now_ms(), lead, write=spec.writes_to_kafka,
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
                                                 Mode.APPROVE, now_ms(), approvals)
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
        patch = policy_status.run_succeeded(_status(body), run, run.completion_ms + spec.interval_ms, generation_of(body))
        patch["conditions"] = policy_status.settled(patch, run.completion_ms, generation_of(body))["conditions"]
        self._patch(body, patch)
        metrics.candidates(meta["namespace"], meta["name"], run.report.candidates_by_reason)
        metrics.policy_succeeded(meta["namespace"], meta["name"], run.completion_ms,
                                 policy_status.earliest_expiries(run.report, metrics.EXPIRY_GROUPS))

    def _failed(self, body: dict[str, Any], reason: Reason, message: str, spec: PolicySpec | None = None) -> None:
        """A failed run: its retry is backed off, within the spec's interval (`spec`: the visit's one parse;
        None when the spec does not parse, then within the operator's retry interval)."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        self.failures[key] = self.failures.get(key, 0) + 1
        interval = self.retry_ms if spec is None else spec.interval_ms
        now = now_ms()
        retry = now + schedule.retry_delay_ms(self.failures[key], self.retry_ms, interval)
        patch = policy_status.run_failed(_status(body), reason, message, now, retry, generation_of(body))
        patch["conditions"] = policy_status.settled(patch, now, generation_of(body))["conditions"]
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
        ready = conditions.find(body["status"].get("conditions"), "Ready")
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
