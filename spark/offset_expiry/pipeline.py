"""The analysis as Spark DataFrame transforms: raw `__consumer_offsets` records in, one result per offset out.

The same steps as the reference (reference.py), distributed:

1. compact: group by (partition, raw key) and keep the record with the highest offset (log compaction);
   the per-key record count is kept so the number of records scanned comes out of the same pass;
2. decode the survivors with the codec in Arrow batches (`mapInArrow` over facts.fact_from_record);
   records that do not decode become "skipped" rows;
3. replay: per logical key the survivor with the highest (offset, partition) wins (a window), then
   tombstones drop out;
4. rebuild groups: each group's live non-offset facts are collected (a handful per group) and turned
   into a GroupView by groups.rebuild_group;
5. join each offset with its group (simple group when none) and with the cluster's topics;
6. decide each offset with rules.decide and shape it with report.offset_result.

Nothing but the final per-offset results and a few counts reaches the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from .codec import CodecError
from .facts import OFFSET_COMMIT, Fact, fact_from_record
from .groups import rebuild_group, simple_group
from .policy import Policy
from .report import RESULT_FIELDS, offset_result, summary
from .rules import GroupType, GroupView, OffsetView, decide

SKIPPED = -1  # fact type of a record that did not decode

_FACT_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("type", pa.int32()),
    ("group", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("member", pa.string()),
    ("tombstone", pa.bool_()),
    ("committed_offset", pa.int64()),
    ("commit_timestamp", pa.int64()),
    ("expire_timestamp", pa.int64()),
    ("protocol_type", pa.string()),
    ("state_timestamp", pa.int64()),
    ("member_count", pa.int32()),
    ("topics", pa.list_(pa.string())),
    ("regex", pa.string()),
    ("epoch", pa.int32()),
    ("member_state", pa.int32()),
)
assert tuple(name for name, _ in _FACT_FIELDS) == Fact._fields
FACT_COLUMNS = [name for name, _ in _FACT_FIELDS]
DECODED_ARROW = pa.schema(
    [("record_partition", pa.int32()), ("record_offset", pa.int64()), ("records", pa.int64()), *_FACT_FIELDS]
)

GROUP_ARROW = pa.schema(
    [
        ("group", pa.string()),
        ("group_type", pa.string()),
        ("group_state", pa.string()),
        ("group_protocol_type", pa.string()),
        ("group_state_timestamp", pa.int64()),
        ("group_subscribed", pa.list_(pa.string())),
        ("group_unresolved_regex", pa.bool_()),
    ]
)

RESULT_ARROW = pa.schema(
    [
        ("group", pa.string()),
        ("groupType", pa.string()),
        ("groupState", pa.string()),
        ("protocolType", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("commitTimestamp", pa.int64()),
        ("brokerExpiresAt", pa.int64()),
        ("candidate", pa.bool_()),
        ("reason", pa.string()),
    ]
)
assert tuple(RESULT_ARROW.names) == RESULT_FIELDS


def _ddl(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.int64(): "long", pa.string(): "string", pa.bool_(): "boolean"}

    def spark_type(t: pa.DataType) -> str:
        if pa.types.is_list(t):
            return f"array<{spark_type(t.value_type)}>"
        return names[t]

    return ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in schema)


# ---- the per-batch Python steps (run in Spark's Python workers) ----


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Compacted raw records -> one fact row each (type SKIPPED for records that do not decode)."""
    empty_fact = Fact(SKIPPED, "")
    for batch in batches:
        partitions = batch.column("partition")
        offsets = batch.column("offset")
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        rows = []
        for key, value in zip(keys, values, strict=True):
            try:
                rows.append(fact_from_record(key, value))
            except CodecError:
                rows.append(empty_fact)
        columns: list[pa.Array] = [partitions, offsets, batch.column("records")]
        for i, (_, arrow_type) in enumerate(_FACT_FIELDS):
            columns.append(pa.array([row[i] for row in rows], arrow_type))
        yield pa.RecordBatch.from_arrays(columns, schema=DECODED_ARROW)


def rebuild_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(group, [live non-offset facts]) -> the group's state."""
    for batch in batches:
        out: dict[str, list[Any]] = {name: [] for name in GROUP_ARROW.names}
        for group_id, facts in zip(
            batch.column("group").to_pylist(), batch.column("facts").to_pylist(), strict=True
        ):
            view = rebuild_group(group_id, [_fact(f) for f in facts])
            out["group"].append(group_id)
            out["group_type"].append(view.type.value)
            out["group_state"].append(view.state)
            out["group_protocol_type"].append(view.protocol_type)
            out["group_state_timestamp"].append(view.current_state_timestamp)
            out["group_subscribed"].append(
                None if view.subscribed_topics is None else sorted(view.subscribed_topics)
            )
            out["group_unresolved_regex"].append(view.unresolved_regex)
        yield pa.RecordBatch.from_pydict(out, schema=GROUP_ARROW)


def _fact(row: Mapping[str, Any]) -> Fact:
    topics = row["topics"]
    return Fact(**{**row, "topics": None if topics is None else tuple(topics)})


def decide_batches_for(
    policy: Policy, now_ms: int, retention_ms: int, has_topics: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Offsets joined with their group and topic existence -> results. The closure ships the policy."""

    def decide_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = batch.to_pylist()
            results = []
            for row in rows:
                group = _group_view(row)
                offset = OffsetView(
                    row["topic"],
                    row["partition"],
                    row["committed_offset"],
                    row["commit_timestamp"],
                    row["expire_timestamp"],
                )
                existing: Collection[str] | None = None
                if has_topics:
                    existing = (offset.topic,) if row["topic_exists"] else ()
                decision = decide(
                    group, offset, policy, now_ms=now_ms, retention_ms=retention_ms, existing_topics=existing
                )
                results.append(offset_result(group, offset, decision))
            yield pa.RecordBatch.from_pylist(results, schema=RESULT_ARROW)

    return decide_batches


def _group_view(row: Mapping[str, Any]) -> GroupView:
    if row["group_type"] is None:
        return simple_group(row["group"])
    subscribed = row["group_subscribed"]
    return GroupView(
        row["group"],
        GroupType(row["group_type"]),
        row["group_state"],
        row["group_protocol_type"],
        row["group_state_timestamp"],
        None if subscribed is None else frozenset(subscribed),
        bool(row["group_unresolved_regex"]),
    )


# ---- the plan ----


def compact(raw: DataFrame) -> DataFrame:
    """Log compaction by raw key: the newest record per (partition, key), and how many records it stands for
    (a reader that compacted its range already reports that in `records`)."""
    latest = F.max_by(F.struct("offset", "value"), "offset")
    return (
        raw.groupBy("partition", "key")
        .agg(latest.alias("latest"), F.sum("records").alias("records"))
        .select(
            "partition",
            "key",
            F.col("latest.offset").alias("offset"),
            F.col("latest.value").alias("value"),
            "records",
        )
    )


def decode(compacted: DataFrame) -> DataFrame:
    return compacted.select("partition", "offset", "records", "key", "value").mapInArrow(
        decode_batches, _ddl(DECODED_ARROW)
    )


def replay(decoded: DataFrame) -> DataFrame:
    """Per logical key the newest survivor wins; tombstones then delete."""
    logical_key = ["type", "group", "topic", "partition", "member"]
    newest_first = Window.partitionBy(*logical_key).orderBy(
        F.desc("record_offset"), F.desc("record_partition")
    )
    return (
        decoded.where(F.col("type") != SKIPPED)
        .withColumn("rank", F.row_number().over(newest_first))
        .where((F.col("rank") == 1) & ~F.col("tombstone"))
        .select(*FACT_COLUMNS)
    )


def rebuild_groups(live: DataFrame) -> DataFrame:
    group_facts = live.where(F.col("type") != OFFSET_COMMIT)
    collected = group_facts.groupBy("group").agg(F.collect_list(F.struct(*FACT_COLUMNS)).alias("facts"))
    return collected.mapInArrow(rebuild_batches, _ddl(GROUP_ARROW))


def join_offsets(live: DataFrame, groups: DataFrame, topics: DataFrame | None) -> DataFrame:
    offsets = live.where(F.col("type") == OFFSET_COMMIT).select(
        "group", "topic", "partition", "committed_offset", "commit_timestamp", "expire_timestamp"
    )
    joined = offsets.join(groups, "group", "left")
    if topics is None:
        return joined.withColumn("topic_exists", F.lit(None).cast("boolean"))
    exists = F.coalesce(F.col("topic_exists"), F.lit(False)).alias("topic_exists")
    return joined.join(F.broadcast(topics), "topic", "left").select(*[c for c in joined.columns], exists)


def topics_frame(spark: SparkSession, existing_topics: Collection[str] | None) -> DataFrame | None:
    if existing_topics is None:
        return None
    return spark.createDataFrame(
        [(t, True) for t in sorted(existing_topics)], "topic string, topic_exists boolean"
    )


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
    """Runs the plan; returns the report with "offsets" as a pyarrow Table (see results_as_dicts)."""
    spark = raw.sparkSession
    cached: list[DataFrame] = []

    def keep(frame: DataFrame) -> DataFrame:
        cached.append(frame.persist())
        return frame

    try:
        decoded = keep(decode(compact(raw)))
        live = keep(replay(decoded))
        groups = rebuild_groups(live)
        joined = join_offsets(live, groups, topics_frame(spark, existing_topics))
        decide_batches = decide_batches_for(policy, now_ms, retention_ms, existing_topics is not None)
        results = keep(joined.mapInArrow(decide_batches, _ddl(RESULT_ARROW)))

        counts = decoded.agg(
            F.sum("records").alias("scanned"), F.count(F.when(F.col("type") == SKIPPED, 1)).alias("skipped")
        ).first()
        records_scanned = (counts["scanned"] if counts is not None else 0) or 0
        skipped = (counts["skipped"] if counts is not None else 0) or 0
        group_count = live.select("group").distinct().count()
        reasons = {row["reason"]: row["count"] for row in results.groupBy("reason").count().collect()}
        selected = results.where(F.col("candidate")) if candidates_only else results
        table = selected.orderBy("group", "topic", "partition").toArrow()
    finally:
        for frame in reversed(cached):
            frame.unpersist()
    return {
        "summary": summary(
            records_scanned=int(records_scanned),
            groups=group_count,
            reasons=reasons,
            skipped_records=skipped,
            snapshot=snapshot or {},
        ),
        "offsets": table.cast(RESULT_ARROW),
    }


def results_as_dicts(table: pa.Table) -> Iterator[dict[str, Any]]:
    """Streams the result rows as dicts, one Arrow batch at a time."""
    for batch in table.to_batches(max_chunksize=10_000):
        yield from batch.to_pylist()


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
