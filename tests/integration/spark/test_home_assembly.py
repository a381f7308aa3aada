"""The reader's tasks assemble each partition's groups where they read them (pipeline.assemble_at_home:
Kafka writes every record of a group to its home partition), and a topic with records away from home
(its partition count changed) is regrouped by the shuffle instead, as is one with a partition above the
assemble budget (spark.offsetExpiry.assembleRecords): all give the reference's report, summary and every row, over the wire from Apache Kafka (the `seeded_kafka` fixture: its `__consumer_offsets` and a
copy whose partition count changed, tests/support/seeded_kafka.py)."""

from __future__ import annotations

from typing import Any

import pytest
from analysis_reference import analyze_records
from pyspark.sql import DataFrame, SparkSession
from seeded_kafka import EMPTY, MOVED, NOW_MS, Seeded
from spark_pipeline import results_as_dicts

from kafka_offsets_model.codec import CodecError, partition_for
from kafka_offsets_model.errors import InputError
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox.synthetic import DAY_MS
from offset_expiry.analysis import AnalysisRequest, execute, execute_many, prepare, run_analysis
from offset_expiry.facts import fact_from_record
from offset_expiry.pipeline import (
    ASSEMBLE_RECORDS_CONF,
    PolicyRun,
    analyze_assembled_many,
    analyze_facts_many,
)
from offset_expiry.progress import Progress
from offset_expiry.source import read_frame, take_snapshot

pytestmark = pytest.mark.slow  # Spark and a broker

RETENTION = 5 * DAY_MS
POLICY = parse_policy(
    {
        "groups": {"exclude": ["simple-1*"]},
        "rules": {"emptyGroupRetention": "2d", "standaloneRetention": "3d", "deletedTopics": "Delete"},
        "protect": {"groups": ["billing-*"]},
    }
)


def _reference(broker: Seeded, records: list[RawRecord], topic: str) -> dict[str, Any]:
    snapshot = take_snapshot(broker.bootstrap_servers, topic)
    return analyze_records(
        records,
        POLICY,
        now_ms=NOW_MS,
        retention_ms=RETENTION,
        existing_topics=broker.topics(),
        snapshot=snapshot.end_offsets,
    )


def _reader(spark: SparkSession, broker: Seeded, topic: str, *, assemble: bool) -> DataFrame:
    snapshot = take_snapshot(broker.bootstrap_servers, topic)
    return read_frame(
        spark, broker.bootstrap_servers, snapshot, topic=topic, decode=True, assemble=[POLICY] if assemble else None
    )


def _as_report(report: dict[str, Any]) -> dict[str, Any]:
    return {"summary": report["summary"], "offsets": list(results_as_dicts(report["offsets"]))}


def test_groups_at_home_are_assembled_in_the_readers(spark: SparkSession, seeded_kafka: Seeded) -> None:
    broker, home = seeded_kafka, seeded_kafka.records
    expected = _reference(broker, home, OFFSETS_TOPIC)
    snapshot = take_snapshot(broker.bootstrap_servers).end_offsets
    args: dict[str, Any] = {
        "now_ms": NOW_MS,
        "existing_topics": broker.topics(),
        "snapshot": snapshot,
    }
    runs = [PolicyRun(POLICY, RETENTION)]
    in_readers = analyze_assembled_many(_reader(spark, broker, OFFSETS_TOPIC, assemble=True), runs, **args)
    assert in_readers is not None  # no record away from home: no shuffle
    by_shuffle = analyze_facts_many(_reader(spark, broker, OFFSETS_TOPIC, assemble=False), runs, **args)
    assert _as_report(in_readers[0]) == expected
    assert _as_report(by_shuffle[0]) == expected
    assert expected["summary"]["skippedRecords"] > 0 and len(expected["offsets"]) > 100


def test_records_away_from_home_are_regrouped_by_the_shuffle(spark: SparkSession, seeded_kafka: Seeded) -> None:
    broker, moved = seeded_kafka, seeded_kafka.moved
    groups_away = {g for r in moved if (g := _group(r)) is not None and partition_for(g, 5) != r.partition}
    assert groups_away  # the data really has records away from home, of groups that also have some at home
    expected = _reference(broker, moved, MOVED)
    runs = [PolicyRun(POLICY, RETENTION)]
    args: dict[str, Any] = {
        "now_ms": NOW_MS,
        "existing_topics": broker.topics(),
        "snapshot": take_snapshot(broker.bootstrap_servers, MOVED).end_offsets,
    }
    assert analyze_assembled_many(_reader(spark, broker, MOVED, assemble=True), runs, **args) is None
    request = AnalysisRequest(broker.bootstrap_servers, POLICY, now_ms=NOW_MS, retention_ms=RETENTION, topic=MOVED)
    got = run_analysis(spark, request).report
    assert _as_report(got) == expected
    assert {r["group"] for r in expected["offsets"]} & groups_away


def test_a_partition_over_the_assemble_budget_is_compacted_in_the_jvm_and_shuffled(
    spark: SparkSession, seeded_kafka: Seeded
) -> None:
    """A partition with more records than the assemble budget is not held whole by a reader's Python worker
    (issue 22: that worker grew with the partition): its records are compacted in the JVM and regrouped by a
    shuffle sized by the budget. Here the budget is one record less than the largest partition's; the report
    is the reference's all the same. A bad budget is refused before anything is read."""
    broker, home = seeded_kafka, seeded_kafka.records
    prepared = prepare(AnalysisRequest(broker.bootstrap_servers, POLICY, now_ms=NOW_MS, retention_ms=RETENTION))
    largest = max(end - start for start, end in prepared.snapshot.ranges.values())
    progress = Progress(enabled=False)
    try:
        spark.conf.set(ASSEMBLE_RECORDS_CONF, "lots")
        with pytest.raises(InputError, match=ASSEMBLE_RECORDS_CONF):
            execute(spark, prepared, progress)
        assert progress.phase_name == "starting"
        spark.conf.set(ASSEMBLE_RECORDS_CONF, str(largest - 1))
        got = execute(spark, prepared, progress).report
    finally:
        spark.conf.unset(ASSEMBLE_RECORDS_CONF)
    assert progress.phase_name.endswith(f"{largest} records in one)")  # the JVM's compaction, not the readers'
    expected = analyze_records(
        home,
        POLICY,
        now_ms=NOW_MS,
        retention_ms=RETENTION,
        existing_topics=prepared.topics,
        snapshot=prepared.snapshot.end_offsets,
    )
    assert _as_report(got) == expected


def _group(record: RawRecord) -> str | None:
    try:
        return fact_from_record(record.key, record.value).group
    except CodecError:  # a corrupt record has no group
        return None


def test_an_empty_topic_is_one_job_with_no_rows(spark: SparkSession, seeded_kafka: Seeded) -> None:
    """A brand-new cluster (an empty copy of `__consumer_offsets`): the readers have nothing to assemble, and
    the counts and reasons observed during the write are still there (zeros), as the reference's."""
    bootstrap = seeded_kafka.bootstrap_servers
    request = AnalysisRequest(bootstrap, POLICY, now_ms=NOW_MS, retention_ms=RETENTION, topic=EMPTY)
    got = _as_report(run_analysis(spark, request).report)
    snapshot = take_snapshot(bootstrap, EMPTY).end_offsets
    expected = analyze_records(
        [], POLICY, now_ms=NOW_MS, retention_ms=RETENTION, existing_topics=set(), snapshot=snapshot
    )
    assert got == expected


def test_several_policies_share_the_readers_assembly(spark: SparkSession, seeded_kafka: Seeded) -> None:
    """Issue 12's shared scan over the readers' assembly (the cached path): each policy gets the
    reference's report for it alone."""
    broker, home = seeded_kafka, seeded_kafka.records
    other = parse_policy({"groups": {"include": ["classic-*"]}, "rules": {"emptyGroupRetention": "1d"}})
    request = AnalysisRequest(broker.bootstrap_servers, POLICY, now_ms=NOW_MS, retention_ms=RETENTION)
    prepared = prepare(request)
    runs = [PolicyRun(POLICY, RETENTION), PolicyRun(other, DAY_MS)]
    analyses = execute_many(spark, prepared, runs)
    for run, analysis in zip(runs, analyses, strict=True):
        expected = analyze_records(
            home,
            run.policy,
            now_ms=NOW_MS,
            retention_ms=run.retention_ms,
            existing_topics=prepared.topics,
            snapshot=prepared.snapshot.end_offsets,
        )
        assert _as_report(analysis.report) == expected
