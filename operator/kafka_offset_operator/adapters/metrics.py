"""Prometheus metrics of the operator, served by `kafka-offset-operator run --metrics-port N`.

Counters only go up; alert on rates (e.g. a rising kafka_offset_operator_kafka_errors_total{code=...}).
The policy handlers add their analysis metrics here too, so one module lists everything exported.
"""

from __future__ import annotations

import contextlib

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server

PREFIX = "kafka_offset_operator"

DELETIONS = Counter(
    f"{PREFIX}_offset_deletions_total",
    "OffsetDeletions that reached a final phase, by phase (Succeeded, PartiallyFailed, Failed).",
    ["phase"],
)
OFFSETS_DELETED = Counter(
    f"{PREFIX}_offsets_deleted_total", "Committed offsets (partitions) deleted with OffsetDelete."
)
OFFSETS_FAILED = Counter(
    f"{PREFIX}_offsets_delete_failed_total", "Partitions Kafka refused to delete (see kafka_errors_total for why)."
)
RESETS = Counter(
    f"{PREFIX}_offset_resets_total",
    "OffsetResets that reached a final phase, by phase (Succeeded, PartiallyFailed, Failed).",
    ["phase"],
)
OFFSETS_RESET = Counter(
    f"{PREFIX}_offsets_reset_total", "Committed offsets (partitions) an OffsetReset committed at a new offset."
)
RESTORES = Counter(
    f"{PREFIX}_restores_total",
    "Restore attempts by outcome: Restored, Incomplete (some partitions failed), Blocked (group has members).",
    ["outcome"],
)
KAFKA_ERRORS = Counter(
    f"{PREFIX}_kafka_errors_total",
    "Errors from Kafka by Kafka's error name (e.g. GROUP_SUBSCRIBED_TO_TOPIC), or CONNECTION_FAILED.",
    ["code"],
)
DELETE_SECONDS = Histogram(
    f"{PREFIX}_offset_delete_request_seconds", "Duration of OffsetDelete requests.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


# -- ConsumerGroupOffsetPolicy analysis runs

ANALYSIS_RUNS = Counter(
    f"{PREFIX}_analysis_runs_total",
    "Policy analysis runs by engine (Local, SparkApplication) and outcome (Succeeded, Failed, Cancelled).",
    ["engine", "outcome"],
)
SCANS = Counter(
    f"{PREFIX}_analysis_scans_total",
    "Scans of __consumer_offsets by engine: one scan may serve several policies of the same cluster (issue 12).",
    ["engine"],
)
SCAN_POLICIES = Counter(
    f"{PREFIX}_analysis_scan_policies_total",
    "Policy runs served by those scans (divided by the scans: the policies per scan).",
    ["engine"],
)
ANALYSIS_SECONDS = Histogram(
    f"{PREFIX}_analysis_duration_seconds", "Duration of policy analysis runs, from start to report read.",
    ["engine"], buckets=(1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600),
)
CANDIDATES = Gauge(
    f"{PREFIX}_candidates",
    "Candidate offsets (partitions) of a policy's last successful analysis, by reason.",
    ["namespace", "policy", "reason"],
)
DELETIONS_CREATED = Counter(
    f"{PREFIX}_policy_deletions_created_total",
    "OffsetDeletions created by policies, by mode (Approve: awaiting approval; Auto: approved).",
    ["mode"],
)
KEEPALIVE = Counter(
    f"{PREFIX}_keepalive_actions_total",
    "Keep-alive actions on protected groups by outcome (Recommitted, Rebased, Resumed, Blocked).",
    ["outcome"],
)

POLICY_READY = Gauge(
    f"{PREFIX}_policy_ready",
    "1 while a policy's Ready condition is True (the last run of its current spec succeeded), else 0.",
    ["namespace", "policy"],
)
POLICY_LAST_SUCCESS = Gauge(
    f"{PREFIX}_policy_last_success_timestamp_seconds",
    "When a policy's last successful analysis run completed (Unix time).",
    ["namespace", "policy"],
)
EXPIRY_GROUPS = 10  # per policy and kind: the cardinality bound of OFFSETS_EXPIRE
OFFSETS_EXPIRE = Gauge(
    f"{PREFIX}_offsets_expire_timestamp_seconds",
    f"When the broker expires a group's first offset (Unix time), by the policy's last analysis: the "
    f"{EXPIRY_GROUPS} groups whose offsets expire first, of its candidates and of its protected groups apart (kind).",
    ["namespace", "policy", "kind", "group"],
)
_expiry_series: dict[tuple[str, str], set[tuple[str, str]]] = {}

BACKUP_STORE_ERRORS = Counter(
    f"{PREFIX}_backup_store_errors_total",
    "Failures of the backup store by operation: write (a backup not stored or not read back as written: the "
    "change of offsets did not start) and expire (old backups could not be listed or deleted).",
    ["operation"],
)


def reset_finished(phase: str, reset: int) -> None:
    RESETS.labels(phase=phase).inc()
    OFFSETS_RESET.inc(reset)


def deletion_finished(phase: str, deleted: int, failed: int) -> None:
    DELETIONS.labels(phase=phase).inc()
    OFFSETS_DELETED.inc(deleted)
    OFFSETS_FAILED.inc(failed)


def restore_finished(outcome: str) -> None:
    RESTORES.labels(outcome=outcome).inc()


def kafka_error(code: str) -> None:
    KAFKA_ERRORS.labels(code=code).inc()


def observe_delete_request(seconds: float) -> None:
    DELETE_SECONDS.observe(seconds)


def serve(port: int, addr: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve /metrics on a daemon thread."""
    start_http_server(port, addr=addr, registry=registry)


def analysis_finished(engine: str, outcome: str, seconds: float) -> None:
    ANALYSIS_RUNS.labels(engine=engine, outcome=outcome).inc()
    ANALYSIS_SECONDS.labels(engine=engine).observe(seconds)


def scan_started(engine: str, policies: int) -> None:
    SCANS.labels(engine=engine).inc()
    SCAN_POLICIES.labels(engine=engine).inc(policies)


def candidates(namespace: str, policy: str, by_reason: dict[str, int]) -> None:
    for reason, count in by_reason.items():
        CANDIDATES.labels(namespace=namespace, policy=policy, reason=reason).set(count)


def forget_policy(namespace: str, policy: str, reasons: list[str]) -> None:
    """A deleted policy's gauges go away with it."""
    for reason in reasons:
        with contextlib.suppress(KeyError):
            CANDIDATES.remove(namespace, policy, reason)
    for gauge in (POLICY_READY, POLICY_LAST_SUCCESS):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, policy)
    _set_expiries(namespace, policy, {})


def policy_ready(namespace: str, policy: str, ready: bool) -> None:
    POLICY_READY.labels(namespace=namespace, policy=policy).set(1 if ready else 0)


def policy_succeeded(namespace: str, policy: str, completed_ms: int, expiries: dict[tuple[str, str], int]) -> None:
    """A successful run: its time, and the earliest expiries ((kind, group) -> epoch ms), replacing the last
    run's series so that groups no longer among the first do not linger."""
    POLICY_LAST_SUCCESS.labels(namespace=namespace, policy=policy).set(completed_ms / 1000)
    _set_expiries(namespace, policy, expiries)


def _set_expiries(namespace: str, policy: str, expiries: dict[tuple[str, str], int]) -> None:
    for kind, group in _expiry_series.pop((namespace, policy), set()) - set(expiries):
        with contextlib.suppress(KeyError):
            OFFSETS_EXPIRE.remove(namespace, policy, kind, group)
    for (kind, group), at_ms in expiries.items():
        OFFSETS_EXPIRE.labels(namespace=namespace, policy=policy, kind=kind, group=group).set(at_ms / 1000)
    if expiries:
        _expiry_series[(namespace, policy)] = set(expiries)


def deletions_created(mode: str, count: int) -> None:
    if count:
        DELETIONS_CREATED.labels(mode=mode).inc(count)


def keepalive_action(outcome: str) -> None:
    KEEPALIVE.labels(outcome=outcome).inc()


def backup_store_error(operation: str) -> None:
    BACKUP_STORE_ERRORS.labels(operation=operation).inc()
