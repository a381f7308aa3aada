"""The Spark pipeline's entry points only tests use (moved out of offset_expiry.pipeline, and so out of the
product's wheel): one policy from raw records in memory, the way the reference (analysis_reference) takes them,
so a test compares the two on the same input."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession

from kafka_offsets_model.policy import Policy
from offset_expiry.pipeline import OffsetRows, PolicyRun, analyze_facts_many, compact, decode


def analyze_facts(
    facts: DataFrame,
    policy: Policy,
    *,
    now_ms: int,
    retention_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
) -> dict[str, Any]:
    """Runs the plan from compacted, decoded facts (columnar.DECODED_ARROW's columns); returns the report
    with "offsets" as OffsetRows."""
    return analyze_facts_many(
        facts,
        [PolicyRun(policy, retention_ms)],
        now_ms=now_ms,
        existing_topics=existing_topics,
        snapshot=snapshot,
        candidates_only=candidates_only,
    )[0]


def analyze_dataframe(
    raw: DataFrame,
    policy: Policy,
    *,
    now_ms: int,
    retention_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
) -> dict[str, Any]:
    """The analysis of raw records (partition, offset, timestamp, key, value, records)."""
    return analyze_facts(
        decode(compact(raw)),
        policy,
        now_ms=now_ms,
        retention_ms=retention_ms,
        existing_topics=existing_topics,
        snapshot=snapshot,
        candidates_only=candidates_only,
    )


def results_as_dicts(rows: OffsetRows) -> Iterator[dict[str, Any]]:
    """Streams the result rows as dicts."""
    return iter(rows)


def raw_frame(spark: SparkSession, records: Collection[Any]) -> DataFrame:
    """A DataFrame of raw records from memory (tests and the benchmark's reference side)."""
    table = pa.table(
        {
            "partition": pa.array([r.partition for r in records], pa.int32()),
            "offset": pa.array([r.offset for r in records], pa.int64()),
            "timestamp": pa.array([r.timestamp for r in records], pa.int64()),
            "key": pa.array([r.key for r in records], pa.binary()),
            "value": pa.array([r.value for r in records], pa.binary()),
            "records": pa.array([1] * len(records), pa.int64()),
        }
    )
    return spark.createDataFrame(table)
