"""The analysis as Spark DataFrame transforms: raw `__consumer_offsets` records in, one result per offset out.

The same steps as the reference (reference.py), as columnar work:

1. compact: the newest record per (partition, raw key) (log compaction), with how many records it
   stands for; 2. decode the survivors into facts (columnar.decode_records: numpy for the fixed-layout
   offset commits, the Python row path for the rest; undecodable records become "skipped" rows).
   The analysis' reader does both in its tasks (source.py, `decode=true`); `analyze_dataframe` does them
   here for raw records from elsewhere (tests);
3. one shuffle by group: every later step is per group (or finer), so it runs without another exchange;
4. replay: per logical key the survivor with the highest (offset, partition) wins (a window), then
   tombstones drop out;
5. rebuild groups: one row per group with its live non-offset facts (a handful, for most groups none)
   turned into a GroupView by groups.rebuild_group, with the policy's group patterns applied
   (Python, once per group, in Arrow batches);
6. join each offset with its group and with the cluster's topics, decide it with rules_columns (the
   column form of rules.verdict) in the JVM;
7. the results, sorted, are written as JSON lines by the executors (OffsetRows); the driver receives
   only counts and streams the files when the report is written.

Nothing but a few counts reaches the driver's memory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from .columnar import DECODED_ARROW, FACT_FIELDS, SKIPPED, decode_records
from .facts import GROUP_METADATA_HISTORY, OFFSET_COMMIT, Fact, same_generation_history
from .groups import rebuild_group, simple_group
from .policy import Policy
from .report import RESULT_FIELDS, summary
from .rules_columns import broker_expires_column, shape_column, verdict_columns

FACT_COLUMNS = [name for name, _ in FACT_FIELDS]

GROUP_ARROW = pa.schema(
    [
        ("group", pa.string()),
        ("group_type", pa.string()),
        ("group_state", pa.string()),
        ("group_protocol_type", pa.string()),
        ("group_state_timestamp", pa.int64()),
        ("group_subscribed", pa.list_(pa.string())),
        ("group_unresolved_regex", pa.bool_()),
        ("group_newest_commit", pa.int64()),
        ("group_uncertain", pa.list_(pa.string())),
        # One answer per policy of the run (issue 12: several policies share one scan); a policy's own
        # columns `group_protected`/`group_selected` are projected from these by `groups_for`.
        ("group_protected_by", pa.list_(pa.bool_())),
        ("group_selected_by", pa.list_(pa.bool_())),
    ]
)


def _ddl(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.int64(): "long", pa.string(): "string", pa.bool_(): "boolean", pa.binary(): "binary"}

    def spark_type(t: pa.DataType) -> str:
        if pa.types.is_list(t):
            return f"array<{spark_type(t.value_type)}>"
        return names[t]

    return ", ".join(f"`{f.name}` {spark_type(f.type)}" for f in schema)


# ---- the per-batch Python steps (run in Spark's Python workers) ----


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Compacted raw records -> one fact row each (type SKIPPED for records that do not decode), and the
    GroupMetadata history rows (`history`) -> GROUP_METADATA_HISTORY facts."""
    for batch in batches:
        yield decode_records(
            batch.column("partition"),
            batch.column("offset"),
            batch.column("records"),
            batch.column("key"),
            batch.column("value"),
            batch.column("timestamp"),
            batch.column("history"),
        )


def rebuild_batches_for(
    policies: Sequence[Policy],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """(group, [live non-offset facts], newest commit) -> the group's state (once, whatever the number of
    policies) and each policy's group patterns' answers."""
    protects = [policy.protect.protects for policy in policies]
    selects = [policy.groups.selects for policy in policies]

    def rebuild_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in GROUP_ARROW.names}
            facts_column = batch.column("facts")
            newest = batch.column("newest_commit").to_pylist()
            has_facts = facts_column.value_lengths().to_pylist()
            for i, group_id in enumerate(batch.column("group").to_pylist()):
                if has_facts[i]:
                    view = rebuild_group(group_id, [_fact(f) for f in facts_column[i].as_py()])
                else:
                    view = simple_group(group_id)
                out["group"].append(group_id)
                out["group_type"].append(view.type.value)
                out["group_state"].append(view.state)
                out["group_protocol_type"].append(view.protocol_type)
                out["group_state_timestamp"].append(view.current_state_timestamp)
                out["group_subscribed"].append(
                    None if view.subscribed_topics is None else sorted(view.subscribed_topics)
                )
                out["group_unresolved_regex"].append(view.unresolved_regex)
                out["group_newest_commit"].append(newest[i])
                out["group_uncertain"].append(
                    None if view.uncertain_topics is None else sorted(view.uncertain_topics)
                )
                out["group_protected_by"].append([p(group_id) for p in protects])
                out["group_selected_by"].append([s(group_id) for s in selects])
            yield pa.RecordBatch.from_pydict(out, schema=GROUP_ARROW)

    return rebuild_batches


def _fact(row: Mapping[str, Any]) -> Fact:
    topics = row["topics"]
    return Fact(**{**row, "topics": None if topics is None else tuple(topics)})


# ---- the plan ----


def compact(raw: DataFrame) -> DataFrame:
    """Log compaction by raw key: the newest record per (partition, key), and how many records it stands for
    (a reader that compacted its range already reports that in `records`); plus every GroupMetadata record
    as history (`history` true, counting no records; facts.GROUP_METADATA_HISTORY)."""
    latest = F.max_by(F.struct("offset", "timestamp", "value"), "offset")
    compacted = (
        raw.groupBy("partition", "key")
        .agg(latest.alias("latest"), F.sum("records").alias("records"))
        .select(
            "partition",
            "key",
            F.col("latest.offset").alias("offset"),
            F.col("latest.timestamp").alias("timestamp"),
            F.col("latest.value").alias("value"),
            "records",
            F.lit(False).alias("history"),
        )
    )
    versions = (
        raw.where(F.substring("key", 1, 2) == F.lit(b"\x00\x02"))
        .groupBy("partition", "key")
        .agg(F.collect_list(F.struct("offset", "timestamp", "value")).alias("versions"))
    )
    history = versions.mapInArrow(_same_generation_batches, _ddl(_HISTORY_ARROW))
    return compacted.unionByName(history)


_HISTORY_ARROW = pa.schema(
    [
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("value", pa.binary()),
        ("records", pa.int64()),
        ("history", pa.bool_()),
    ]
)


def _same_generation_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(partition, key, [GroupMetadata records]) -> the records of the newest one's generation, as history
    rows (facts.same_generation_history)."""
    for batch in batches:
        out: dict[str, list[Any]] = {name: [] for name in _HISTORY_ARROW.names}
        keys = batch.column("key").to_pylist()
        for i, partition in enumerate(batch.column("partition").to_pylist()):
            rows = batch.column("versions")[i].as_py()
            for j in same_generation_history([(r["offset"], r["value"]) for r in rows]):
                out["partition"].append(partition)
                out["key"].append(keys[i])
                out["offset"].append(rows[j]["offset"])
                out["timestamp"].append(rows[j]["timestamp"])
                out["value"].append(rows[j]["value"])
                out["records"].append(0)
                out["history"].append(True)
        yield pa.RecordBatch.from_pydict(out, schema=_HISTORY_ARROW)


def decode(compacted: DataFrame) -> DataFrame:
    return compacted.select("partition", "offset", "records", "key", "value", "timestamp", "history").mapInArrow(
        decode_batches, _ddl(DECODED_ARROW)
    )


def replay(facts: DataFrame) -> DataFrame:
    """Per logical key the newest survivor wins; tombstones then delete."""
    logical_key = ["group", "type", "topic", "partition", "member"]
    newest_first = Window.partitionBy(*logical_key).orderBy(
        F.desc("record_offset"), F.desc("record_partition")
    )
    return (
        facts.where(F.col("type") != SKIPPED)
        .withColumn("rank", F.row_number().over(newest_first))
        .where((F.col("rank") == 1) & ~F.col("tombstone"))
        .select(*FACT_COLUMNS)
    )


def rebuild_groups(live: DataFrame, policies: Sequence[Policy]) -> DataFrame:
    """Every group with a live record, offsets-only (simple) groups included; the patterns of every policy
    answered in the same pass (`groups_for` takes one policy's answers)."""
    group_fact = F.when(F.col("type") != OFFSET_COMMIT, F.struct(*FACT_COLUMNS))
    newest_commit = F.max(F.when(F.col("type") == OFFSET_COMMIT, F.col("commit_timestamp")))
    makes_group = F.col("type") != GROUP_METADATA_HISTORY  # history alone makes no group (reference.py)
    collected = (
        live.groupBy("group")
        .agg(
            F.collect_list(group_fact).alias("facts"),
            newest_commit.alias("newest_commit"),
            F.max(makes_group).alias("makes_group"),
        )
        .where(F.col("makes_group"))
        .select("group", "facts", "newest_commit")
    )
    return collected.mapInArrow(rebuild_batches_for(policies), _ddl(GROUP_ARROW))


def groups_for(groups: DataFrame, index: int) -> DataFrame:
    """The rebuilt groups as policy number `index` of the run sees them (its `group_protected` and
    `group_selected`): a projection, no Python pass."""
    return groups.select(
        *[c for c in groups.columns if c not in ("group_protected_by", "group_selected_by")],
        F.col("group_protected_by")[index].alias("group_protected"),
        F.col("group_selected_by")[index].alias("group_selected"),
    )


def decide(
    live: DataFrame,
    groups: DataFrame,
    topics: DataFrame | None,
    policy: Policy,
    now_ms: int,
    retention_ms: int,
) -> DataFrame:
    """Offsets joined with their group and the topics' existence, decided by rules_columns."""
    offsets = live.where(F.col("type") == OFFSET_COMMIT).select(
        "group", "topic", "partition", "committed_offset", "commit_timestamp", "expire_timestamp"
    )
    joined = offsets.join(groups, "group", "left")
    if topics is None:
        joined = joined.withColumn("topic_exists", F.lit(None).cast("boolean"))
    else:
        joined = joined.join(F.broadcast(topics), "topic", "left").withColumn(
            "topic_exists", F.coalesce(F.col("topic_exists"), F.lit(False))
        )
    joined = joined.withColumn("shape", shape_column())  # a column once, not an expression inlined 8 times
    shape = F.col("shape")
    candidate, reason = verdict_columns(policy, now_ms, shape)
    columns: dict[str, Column] = {
        "group": F.col("group"),
        "groupType": F.coalesce(F.col("group_type"), F.lit("classic")),
        "groupState": F.coalesce(F.col("group_state"), F.lit("Empty")),
        "protocolType": F.coalesce(F.col("group_protocol_type"), F.lit("")),
        "topic": F.col("topic"),
        "partition": F.col("partition"),
        "offset": F.col("committed_offset"),
        "commitTimestamp": F.col("commit_timestamp"),
        "brokerExpiresAt": broker_expires_column(shape, retention_ms),
        "candidate": candidate,
        "reason": reason,
    }
    assert tuple(columns) == RESULT_FIELDS
    return joined.select(*[c.alias(name) for name, c in columns.items()])


def topics_frame(spark: SparkSession, existing_topics: Collection[str] | None) -> DataFrame | None:
    if existing_topics is None:
        return None
    return spark.createDataFrame(
        [(t, True) for t in sorted(existing_topics)], "topic string, topic_exists boolean"
    )


class OffsetRows:
    """The result rows, sorted by group, topic and partition, as JSON lines in files the executors
    wrote (one object per line, Spark's to_json): iterating yields dicts, `json_lines` the text as it is.
    The files are deleted with this object (or by `close`)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, True)

    def files(self) -> list[str]:
        names = sorted(n for n in os.listdir(self.directory) if n.startswith("part-"))
        return [os.path.join(self.directory, n) for n in names]

    def json_lines(self) -> Iterator[str]:
        for path in self.files():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line:
                        yield line

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self.json_lines():
            yield json.loads(line)

    def close(self) -> None:
        self._cleanup()


def write_rows(results: DataFrame) -> OffsetRows:
    """Sorted result rows as JSON lines: written by the executors in local mode (the driver shares their
    file system); elsewhere streamed to the driver a partition at a time into a local file."""
    spark = results.sparkSession
    ordered = results.orderBy("group", "topic", "partition")
    lines = ordered.select(F.to_json(F.struct(*RESULT_FIELDS), {"ignoreNullFields": "false"}).alias("value"))
    directory = tempfile.mkdtemp(prefix="offset-expiry-results-")
    rows = OffsetRows(directory)
    if (spark.sparkContext.master or "").startswith("local"):
        lines.write.mode("overwrite").text(os.path.join(directory, "spark"))
        out = os.path.join(directory, "spark")
        for name in sorted(os.listdir(out)):
            if name.startswith("part-"):
                os.replace(os.path.join(out, name), os.path.join(directory, name))
        shutil.rmtree(out, ignore_errors=True)
    else:
        with open(os.path.join(directory, "part-00000"), "w", encoding="utf-8") as f:
            for row in lines.toLocalIterator(prefetchPartitions=True):
                f.write(row["value"])
                f.write("\n")
    return rows


@dataclass(frozen=True)
class PolicyRun:
    """One policy's part of a run: its rules and the broker retention its expiry times use (a policy may
    give its own, spec.analysis.brokerRetention)."""

    policy: Policy
    retention_ms: int


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


def analyze_facts_many(
    facts: DataFrame,
    runs: Sequence[PolicyRun],
    *,
    now_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
) -> list[dict[str, Any]]:
    """Several policies on one scan (issue 12): the read, compaction, replay and group rebuild (steps 1-5,
    nearly all of the work) run once; each policy's decisions (step 6) and rows (step 7) then run on the
    shared, cached facts. Returns one report per policy, in order, each the report the policy would get
    alone on the same snapshot (the single-policy call is this one with one policy)."""
    spark = facts.sparkSession
    cached: list[DataFrame] = []

    def keep(frame: DataFrame) -> DataFrame:
        cached.append(frame.persist())
        return frame

    def drop(frame: DataFrame) -> None:
        frame.unpersist()
        cached.remove(frame)

    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "4")
    reports: list[dict[str, Any]] = []
    try:
        by_group = keep(facts.repartition(partitions, "group"))
        counts = by_group.agg(
            F.sum("records").alias("scanned"), F.count(F.when(F.col("type") == SKIPPED, 1)).alias("skipped")
        ).first()
        records_scanned = (counts["scanned"] if counts is not None else 0) or 0
        skipped = (counts["skipped"] if counts is not None else 0) or 0
        live = keep(replay(by_group))
        groups = keep(rebuild_groups(live, [run.policy for run in runs]))
        group_count = groups.count()
        topics = topics_frame(spark, existing_topics)
        for index, run in enumerate(runs):
            results = keep(decide(live, groups_for(groups, index), topics, run.policy, now_ms, run.retention_ms))
            reasons = {row["reason"]: row["count"] for row in results.groupBy("reason").count().collect()}
            rows = write_rows(results.where(F.col("candidate")) if candidates_only else results)
            drop(results)
            reports.append(
                {
                    "summary": summary(
                        records_scanned=int(records_scanned),
                        groups=group_count,
                        reasons=reasons,
                        skipped_records=skipped,
                        snapshot=snapshot or {},
                    ),
                    "offsets": rows,
                }
            )
    finally:
        for frame in reversed(cached):
            frame.unpersist()
    return reports


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
