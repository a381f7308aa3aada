"""One analysis run, end to end: cluster facts and a snapshot of `__consumer_offsets` from Kafka, the
Spark pipeline over the snapshot, and the report. Used by the CLI (local session) and by job.py
(spark-submit, e.g. in a SparkApplication)."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from kafka_offsets_model.policy import Policy
from kafka_offsets_model.raw import OFFSETS_TOPIC

from .cluster import DEFAULT_CHECK_INTERVAL_MS, describe_cluster
from .pipeline import (
    ASSEMBLE_RECORDS_CONF,
    PolicyRun,
    analyze_assembled_many,
    analyze_facts_many,
    assemble_record_budget,
    compact,
    decode,
)
from .progress import Progress
from .source import DEFAULT_SPLIT_RECORDS, Snapshot, read_frame, take_snapshot


@dataclass(frozen=True)
class AnalysisRequest:
    """`now_ms` None: the time the snapshot is taken. `retention_ms` None: the broker's
    offsets.retention.minutes (DescribeConfigs)."""

    bootstrap_servers: str
    policy: Policy = field(default_factory=Policy)
    now_ms: int | None = None
    retention_ms: int | None = None
    candidates_only: bool = False
    topic: str = OFFSETS_TOPIC
    client_settings: Mapping[str, str] = field(default_factory=dict)
    split_records: int = DEFAULT_SPLIT_RECORDS


@dataclass(frozen=True)
class Prepared:
    """Everything taken from Kafka before Spark starts: so a wrong address or a missing topic fails fast."""

    request: AnalysisRequest
    topics: frozenset[str]
    snapshot: Snapshot
    now_ms: int
    retention_ms: int
    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS
    check_interval_known: bool = False


@dataclass(frozen=True)
class Analysis:
    """The report (offsets as an Arrow table) and the inputs it was computed with."""

    report: dict[str, Any]
    now_ms: int
    retention_ms: int
    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS
    check_interval_known: bool = False

    def as_json_report(self) -> dict[str, Any]:
        """The report with offsets as a lazy stream (pipeline.OffsetRows: dicts when iterated, JSON lines
        for report.write_json). The summary says which `now` and broker retention the expiry times were
        computed with (given or read from Kafka): without them a report cannot be checked or compared.
        It also gives the cleanup window: the broker deletes an offset due at `brokerExpiresAt` at its
        first cleanup run at or after that time, so by `brokerExpiresAt + brokerCheckIntervalMs`
        (`brokerCheckIntervalSource`: "broker" when read with DescribeConfigs, "default" when assumed)."""
        summary = {
            **self.report["summary"],
            "now": self.now_ms,
            "brokerRetentionMs": self.retention_ms,
            "brokerCheckIntervalMs": self.check_interval_ms,
            "brokerCheckIntervalSource": "broker" if self.check_interval_known else "default",
        }
        return {"summary": summary, "offsets": self.report["offsets"]}


def prepare(request: AnalysisRequest, progress: Progress | None = None) -> Prepared:
    progress = progress or Progress(enabled=False)
    progress.phase(f"describing the cluster at {request.bootstrap_servers}")
    cluster = describe_cluster(
        request.bootstrap_servers, request.client_settings, want_retention=request.retention_ms is None
    )
    retention_ms = request.retention_ms if request.retention_ms is not None else cluster.retention_ms
    assert retention_ms is not None
    progress.phase(f"taking a snapshot of {request.topic}")
    snapshot = take_snapshot(request.bootstrap_servers, request.topic, request.client_settings)
    now_ms = request.now_ms if request.now_ms is not None else int(time.time() * 1000)
    interval = cluster.check_interval_ms
    return Prepared(
        request,
        cluster.topics,
        snapshot,
        now_ms,
        retention_ms,
        interval if interval is not None else DEFAULT_CHECK_INTERVAL_MS,
        interval is not None,
    )


def execute(spark: SparkSession, prepared: Prepared, progress: Progress | None = None) -> Analysis:
    request = prepared.request
    return execute_many(spark, prepared, [PolicyRun(request.policy, prepared.retention_ms)], progress)[0]


def execute_many(
    spark: SparkSession, prepared: Prepared, runs: Sequence[PolicyRun], progress: Progress | None = None
) -> list[Analysis]:
    """One scan of the snapshot for several policies of the same cluster and credentials (issue 12): one
    Analysis per policy, in order, as `execute` would give each alone on this snapshot. The request's own
    policy is not used (the runs carry theirs); its connection, topic and snapshot are shared."""
    progress = progress or Progress(enabled=False)
    request, snapshot = prepared.request, prepared.snapshot
    budget = assemble_record_budget(spark.conf.get(ASSEMBLE_RECORDS_CONF, None))  # a bad value fails here
    read = functools.partial(
        read_frame,
        spark,
        request.bootstrap_servers,
        snapshot,
        topic=request.topic,
        settings=request.client_settings,
        split_records=request.split_records,
        tasks=2 * spark.sparkContext.defaultParallelism,
    )
    total = snapshot.records
    largest = max((end - start for start, end in snapshot.ranges.values()), default=0)
    args: dict[str, Any] = {
        "now_ms": prepared.now_ms,
        "existing_topics": prepared.topics,
        "snapshot": snapshot.end_offsets,
        "candidates_only": request.candidates_only,
    }
    if largest > budget:
        # A partition too big for one Python worker to hold whole (the reader compacts, decodes and
        # assembles a partition at once): its records go to the JVM as they are read, in ranges, are
        # compacted there (spilling) and decoded a batch at a time, then shuffled by group into
        # partitions of about `budget` records each (assemble_partitions).
        progress.phase(f"analysing {request.topic} ({len(snapshot.ranges)} partitions, {largest} records in one)")
        progress.watch(spark, total)
        raw = read()
        return _analyses(prepared, runs, analyze_facts_many(decode(compact(raw)), runs, **args, records=total))
    progress.phase(f"analysing {request.topic} ({len(snapshot.ranges)} partitions)")
    progress.watch(spark, total)
    # Each reader task assembles the groups of its partitions (they are whole there: Kafka writes a
    # group's records to its home partition); a record found away from home sends the run to the
    # shuffle by group, which reads the topic again.
    assembled = read(assemble=[run.policy for run in runs])
    reports = analyze_assembled_many(assembled, runs, **args)
    if reports is None:
        progress.phase(f"{request.topic} has records away from their group's partition: regrouping them")
        progress.watch(spark, total)
        facts = read(decode=True)
        reports = analyze_facts_many(facts, runs, **args, records=total)
    return _analyses(prepared, runs, reports)


def _analyses(prepared: Prepared, runs: Sequence[PolicyRun], reports: Sequence[dict[str, Any]]) -> list[Analysis]:
    return [
        Analysis(report, prepared.now_ms, run.retention_ms, prepared.check_interval_ms, prepared.check_interval_known)
        for report, run in zip(reports, runs, strict=True)
    ]


def run_analysis(spark: SparkSession, request: AnalysisRequest, progress: Progress | None = None) -> Analysis:
    return execute(spark, prepare(request, progress), progress)
