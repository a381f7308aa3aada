"""Prometheus metrics of the operator, served by `kafka-offset-operator run --metrics-port N`.

Counters only go up; alert on rates (e.g. a rising kafka_offset_operator_kafka_errors_total{code=...}).
The policy handlers add their analysis metrics here too, so one module lists everything exported.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, start_http_server

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
