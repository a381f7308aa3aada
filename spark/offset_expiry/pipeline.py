"""The analysis as Spark DataFrame transforms: raw `__consumer_offsets` records in, one result per offset out.

The same steps as the reference (reference.py), as columnar work:

1. compact: the newest record per (partition, raw key) (log compaction), with how many records it
   stands for; 2. decode the survivors into facts (columnar.decode_records: numpy for the fixed-layout
   offset commits, the Python row path for the rest; undecodable records become "skipped" rows).
   The analysis' reader does both in its tasks (source.py, `decode=true`); `analyze_dataframe` does them
   here for raw records from elsewhere (tests);
3. by group: Kafka writes a group's records to its home partition (codec.partition_for), so the
   analysis' reader assembles each topic partition in its own task (assemble_at_home, source.py
   `assemble`); a record away from home (a changed partition count) sends the run to one shuffle by
   group instead (analyze_facts_many; every later step is per group or finer), into partitions of a
   bounded number of records (assemble_partitions), as does a partition too big for one Python worker
   (analysis.execute_many: compact and decode then run here);
4-5. per topic partition (or shuffle partition), one Python step (assemble_for, Arrow and numpy): replay
   (per logical key the survivor with the highest (offset, partition) wins, then tombstones drop out),
   the groups (one row per group with a live record other than GroupMetadata history, which alone makes
   no group: groups.rebuild_group for those with non-offset facts, simple_group for the rest, the group
   patterns of every policy of the run, the newest commit timestamp of the group's live offsets), and
   each live offset with its group's columns; plus a row of counts;
6. per policy, the offsets (with that policy's pattern answers, `for_policy`) are decided with
   rules_columns (the column form of rules.verdict) in the JVM, with the cluster's topics broadcast;
7. the results, each task's sorted, are written as JSON lines by the executors (OffsetRows), and merged
   by group as the driver copies them into the report; the counts and the reasons are observed during
   that write (one job per run); several policies of one cluster (issue 12) share a cache of step 6's
   input instead.

The earlier Spark SQL form of steps 4-6 (a window, a collect_list, a join, each cached) is gone: at a
million live offsets it cost several times the Arrow step (docs/performance.md).

Nothing but a few counts reaches the driver's memory.
"""

from __future__ import annotations

import heapq
import json
import mmap
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from kafka_offsets_model.codec import partition_for
from kafka_offsets_model.errors import InputError
from kafka_offsets_model.policy import Policy
from kafka_offsets_model.rules import OffsetReason

from .columnar import DECODED_ARROW, FACT_FIELDS, SKIPPED, decode_records
from .facts import GROUP_METADATA_HISTORY, OFFSET_COMMIT, Fact, same_generation_history
from .groups import rebuild_group, simple_group
from .report import RESULT_FIELDS, summary
from .rules_columns import broker_expires_column, shape_column, verdict_columns

FACT_COLUMNS = [name for name, _ in FACT_FIELDS]
LOGICAL_KEY = ["type", "group", "topic", "partition", "member"]  # Fact.logical_key
BATCH_ROWS = 20_000
TOPICS_KNOWN = "topics_known"  # ship_topics

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
        # columns `group_protected`/`group_selected` are projected from these by `for_policy`.
        ("group_protected_by", pa.list_(pa.bool_())),
        ("group_selected_by", pa.list_(pa.bool_())),
    ]
)


OFFSET_COLUMNS = ["group", "topic", "partition", "committed_offset", "commit_timestamp", "expire_timestamp"]
# stats_stray: rows a reader task found away from their group's home partition (assemble_at_home).
STATS_COLUMNS = ["stats_records", "stats_skipped", "stats_groups", "stats_stray"]
# assemble_for's rows: a live offset with its group's columns (stats_* null), or a partition's counts
# (stats_* set, the rest null).
ASSEMBLED_ARROW = pa.schema(
    [
        *[DECODED_ARROW.field(name) for name in OFFSET_COLUMNS],
        *list(GROUP_ARROW)[1:],
        *[pa.field(name, pa.int64()) for name in STATS_COLUMNS],
    ]
)


def ddl(schema: pa.Schema) -> str:
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


def group_rows_for(
    policies: Sequence[Policy],
) -> Callable[[Sequence[str], Mapping[str, list[Fact]], Sequence[int | None]], pa.RecordBatch]:
    """(group ids, their live non-offset facts (GroupMetadata history included), their live offsets' newest
    commit timestamp) -> one GROUP_ARROW row per group: its rebuilt state (once, whatever the number of
    policies) and each policy's group patterns' answers (Python, once per group)."""
    protects = [policy.protect.protects for policy in policies]
    selects = [policy.groups.selects for policy in policies]

    def group_rows(
        group_ids: Sequence[str], facts: Mapping[str, list[Fact]], newest_commit: Sequence[int | None]
    ) -> pa.RecordBatch:
        out: dict[str, list[Any]] = {name: [] for name in GROUP_ARROW.names}
        for group_id, newest in zip(group_ids, newest_commit, strict=True):
            group_facts = facts.get(group_id)
            view = rebuild_group(group_id, group_facts) if group_facts else simple_group(group_id)
            out["group"].append(group_id)
            out["group_type"].append(view.type.value)
            out["group_state"].append(view.state)
            out["group_protocol_type"].append(view.protocol_type)
            out["group_state_timestamp"].append(view.current_state_timestamp)
            out["group_subscribed"].append(None if view.subscribed_topics is None else sorted(view.subscribed_topics))
            out["group_unresolved_regex"].append(view.unresolved_regex)
            out["group_newest_commit"].append(newest)
            out["group_uncertain"].append(None if view.uncertain_topics is None else sorted(view.uncertain_topics))
            out["group_protected_by"].append([p(group_id) for p in protects])
            out["group_selected_by"].append([s(group_id) for s in selects])
        return pa.RecordBatch.from_pydict(out, schema=GROUP_ARROW)

    return group_rows


def assemble_for(policies: Sequence[Policy]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A shuffle partition's decoded facts (every group whole) -> its live offsets, each with its group's
    columns, and one row of counts; vectorised (Arrow, numpy) but for one Python call per group.

    Steps 4-6 of the module's docstring in one pass over the partition's rows, without a sort, a cache
    or a join in Spark: replay (per logical key the row with the highest (offset, partition) wins: Arrow's
    hash group-by over the rows in that order, then tombstones drop out), the groups (every group with a
    live row other than GroupMetadata history: rebuild_group for those with non-offset facts, history
    included, simple_group for the rest, every policy's group patterns, and the newest commit timestamp of
    its live offsets), and each offset's group columns by lookup."""
    group_rows = group_rows_for(policies)

    def assemble(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = list(batches)
        table = pa.Table.from_batches(received) if received else DECODED_ARROW.empty_table()
        scanned = int(pc.sum(table.column("records")).as_py() or 0)
        decoded = pc.not_equal(table.column("type"), SKIPPED)
        facts = table.filter(decoded)
        skipped = table.num_rows - facts.num_rows
        live = _replay_table(facts)
        offsets_mask = pc.equal(live.column("type"), OFFSET_COMMIT)
        makes_group = pc.not_equal(live.column("type"), GROUP_METADATA_HISTORY)  # history alone: no group
        group_ids = pc.unique(live.filter(makes_group).column("group"))
        others = live.filter(pc.invert(offsets_mask))
        known = others.column(TOPICS_KNOWN).to_pylist() if TOPICS_KNOWN in others.column_names else None
        by_group: dict[str, list[Fact]] = {}
        for i, row in enumerate(others.select(FACT_COLUMNS).to_pylist()):
            if known is not None and not known[i]:
                row["topics"] = None
            by_group.setdefault(row["group"], []).append(_fact(row))
        offsets = live.filter(offsets_mask)
        newest = offsets.group_by("group", use_threads=False).aggregate([("commit_timestamp", "max")])
        newest_at = pc.index_in(group_ids, value_set=newest.column("group").combine_chunks())
        groups = group_rows(
            group_ids.to_pylist(), by_group, newest.column("commit_timestamp_max").take(newest_at).to_pylist()
        )
        at = pc.index_in(offsets.column("group"), value_set=groups.column("group"))
        columns = {name: offsets.column(name) for name in OFFSET_COLUMNS}
        for name in GROUP_ARROW.names[1:]:
            columns[name] = groups.column(name).take(at)
        n = offsets.num_rows
        for name in STATS_COLUMNS:
            columns[name] = pa.nulls(n, pa.int64())
        result = pa.Table.from_pydict(columns, schema=ASSEMBLED_ARROW).combine_chunks()
        yield from result.to_batches(max_chunksize=BATCH_ROWS)
        stats = {name: pa.nulls(1, t) for name, t in zip(ASSEMBLED_ARROW.names, ASSEMBLED_ARROW.types, strict=True)}
        stats.update(
            stats_records=pa.array([scanned], pa.int64()),
            stats_skipped=pa.array([skipped], pa.int64()),
            stats_groups=pa.array([len(group_ids)], pa.int64()),
            stats_stray=pa.array([0], pa.int64()),
        )
        yield pa.RecordBatch.from_pydict(stats, schema=ASSEMBLED_ARROW)

    return assemble


def assemble_at_home(
    policies: Sequence[Policy], partitions: int
) -> Callable[[int, Sequence[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """(a `__consumer_offsets` partition number, that whole partition's decoded facts) -> assemble_for's
    rows, in the reader's task, without a shuffle: Kafka writes every record of a group to the partition
    `abs(groupId.hashCode) % partitions` (codec.partition_for), so a partition whose every record is at
    its group's home holds each of its groups whole. A partition with a record away from home (the
    topic's partition count changed) gives only a row of counts with `stats_stray` set: the home
    partition of that record's group cannot know of it, so the run regroups every fact by a shuffle
    instead (analysis.execute_many)."""
    assemble = assemble_for(policies)

    def run(partition: int, batches: Sequence[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stray = sum(
            _strays(batch.column("group").filter(pc.not_equal(batch.column("type"), SKIPPED)), partition, partitions)
            for batch in batches
        )
        if not stray:
            yield from assemble(iter(batches))
            return
        stats = {name: pa.nulls(1, t) for name, t in zip(ASSEMBLED_ARROW.names, ASSEMBLED_ARROW.types, strict=True)}
        stats.update({name: pa.array([0], pa.int64()) for name in STATS_COLUMNS})
        stats["stats_stray"] = pa.array([stray], pa.int64())
        yield pa.RecordBatch.from_pydict(stats, schema=ASSEMBLED_ARROW)

    return run


def _strays(groups: pa.Array, partition: int, partitions: int) -> int:
    """How many of these groups' rows (of decoded records: one that did not decode has no group and is
    counted where it is) have a home other than `partition`."""
    encoded = groups.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    if not names:
        return 0
    away = np.fromiter((partition_for(name, partitions) != partition for name in names), bool, len(names))
    if not away.any():
        return 0
    codes = encoded.indices.fill_null(0)
    return int(np.count_nonzero(away[np.asarray(codes, np.int64)] & np.asarray(encoded.indices.is_valid())))


def ship_topics(facts: DataFrame) -> DataFrame:
    """`topics` made non-null, with TOPICS_KNOWN saying whether it was: Spark 4.3 sends a null
    array<string> from the JVM to Python at about 75 µs a row (measured here: 15 s for 200,000 null rows,
    under 2 s non-null), and the column is null for every offset commit."""
    return facts.withColumn(TOPICS_KNOWN, F.col("topics").isNotNull()).withColumn(
        "topics", F.coalesce(F.col("topics"), F.array().cast("array<string>"))
    )


def _replay_table(facts: pa.Table) -> pa.Table:
    """Per logical key the fact with the highest (record_offset, record_partition), tombstones dropped.
    The rows keep their order; when every logical key is unique (nearly always: the reader compacted each
    partition by key already) nothing is copied but the tombstones' removal."""
    n = facts.num_rows
    if n == 0:
        return facts
    order = np.lexsort(
        (
            np.asarray(facts.column("record_partition").to_numpy(), np.int64),
            np.asarray(facts.column("record_offset").to_numpy(), np.int64),
        )
    )
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    keyed = facts.select(LOGICAL_KEY).append_column("_rank", pa.array(rank))
    newest = keyed.group_by(LOGICAL_KEY, use_threads=False).aggregate([("_rank", "max")]).column("_rank_max")
    winners = facts if len(newest) == n else facts.take(np.sort(order[np.asarray(newest.to_numpy(), np.int64)]))
    return winners.filter(pc.invert(winners.column("tombstone")))


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
    history = versions.mapInArrow(_same_generation_batches, ddl(_HISTORY_ARROW))
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
        decode_batches, ddl(DECODED_ARROW)
    )


def for_policy(offsets: DataFrame, index: int) -> DataFrame:
    """The assembled offsets as policy number `index` of the run sees their groups (its `group_protected`
    and `group_selected`): a projection, no Python pass."""
    return offsets.select(
        *[c for c in offsets.columns if c not in ("group_protected_by", "group_selected_by")],
        F.col("group_protected_by")[index].alias("group_protected"),
        F.col("group_selected_by")[index].alias("group_selected"),
    )


def verdicts(
    joined: DataFrame, topics: DataFrame | None, policy: Policy, now_ms: int, retention_ms: int
) -> DataFrame:
    """Offsets with their group's columns (GROUP_ARROW's), decided by rules_columns: the result rows."""
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
        "groupType": F.col("group_type"),
        "groupState": F.col("group_state"),
        "protocolType": F.col("group_protocol_type"),
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
    """The result rows, sorted by group, topic and partition, as the items of the report's JSON array in
    files the executors wrote: one line per row, `  {...},` (two spaces, Spark's to_json, a comma), so
    the report's array is the files' bytes in order less the last comma (write_array_items copies byte
    ranges, no Python per line and no decoding). Iterating yields dicts, `json_lines` the objects' text.
    With `runs`, each file is sorted on its own and no group has rows in two files (write_rows): the
    files are merged by group as they are read (merge_ranges); otherwise they are read one after the
    other. The files are deleted with this object (or by `close`)."""

    def __init__(self, directory: str, *, runs: bool = False) -> None:
        self.directory = directory
        self.runs = runs
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, True)

    def files(self) -> list[str]:
        names = sorted(n for n in os.listdir(self.directory) if n.startswith("part-"))
        return [os.path.join(self.directory, n) for n in names]

    def _ranges(self, files: Sequence[RunFile]) -> Iterator[tuple[RunFile, int, int]]:
        """(file, start, end): byte ranges of whole lines, in the report's order."""
        if self.runs:
            for i, start, end in merge_ranges(files):
                yield files[i], start, end
        else:
            for f in files:
                if f.size:
                    yield f, 0, f.size

    def _pieces(self) -> Iterator[bytes]:
        """The lines in order, in pieces of whole lines of at most about 4 MB."""
        files = [RunFile(path) for path in self.files()]
        try:
            for f, start, end in self._ranges(files):
                yield from f.pieces(start, end)
        finally:
            for f in files:
                f.close()

    def json_lines(self) -> Iterator[str]:
        for piece in self._pieces():
            for line in piece.decode("utf-8").split("\n")[:-1]:
                yield line[2:-1]

    def write_array_items(self, out: Any) -> bool:
        """Writes the rows as the items of a JSON array, one per line indented by two, "\\n" before the
        first and none after the last (the caller closes the array); False if there are none. Into a
        regular file the bytes go by os.copy_file_range from the executors' files (the kernel copies,
        not Python); into anything else as text in blocks of megabytes."""
        fd = _regular_file(out)
        files = [RunFile(path) for path in self.files()]
        try:
            pending: tuple[RunFile, int, int] | None = None
            for f, start, end in self._ranges(files):
                if pending is None:
                    _write(out, fd, b"\n")
                else:
                    _copy(out, fd, *pending)
                pending = (f, start, end)
            if pending is None:
                return False
            f, start, end = pending
            _copy(out, fd, f, start, end - 2)  # less the last line's ",\n"
            if fd is not None:
                out.seek(0, os.SEEK_END)  # the stream's own position catches up with the descriptor's
            return True
        finally:
            for f in files:
                f.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self.json_lines():
            yield json.loads(line)

    def close(self) -> None:
        self._cleanup()


def _regular_file(out: Any) -> int | None:
    """`out`'s descriptor, flushed, if it is a regular file (os.copy_file_range can write there)."""
    try:
        fd = int(out.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return None
    out.flush()
    return fd


def _write(out: Any, fd: int | None, data: bytes) -> None:
    if fd is None:
        out.write(data.decode("utf-8"))
    else:
        os.write(fd, data)


def _copy(out: Any, fd: int | None, f: RunFile, start: int, end: int) -> None:
    if fd is None:
        for piece in f.pieces(start, end):
            out.write(piece.decode("utf-8"))
        return
    while start < end:
        try:
            n = os.copy_file_range(f.fd, fd, end - start, start)
        except OSError:  # a file system or kernel without it: the bytes through Python
            n = 0
        if n <= 0:
            n = os.write(fd, f.data[start : min(end, start + (1 << 22))])
        start += n


_LINE_START = b'  {"group":"'
_GROUP_END = b'","groupType":'


class RunFile:
    """An executor's file of result lines (`  {"group":"...","groupType":...},\\n`), mapped."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size
        self.data: Any = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ) if self.size else b""
        self._released = 0

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        os.close(self.fd)

    def raw_group(self, at: int) -> bytes:
        """The group of the line at `at` as written (JSON-escaped)."""
        start = at + len(_LINE_START)
        return bytes(self.data[start : self.data.find(_GROUP_END, start)])

    def group(self, at: int) -> bytes:
        """The group of the line at `at` as UTF-8, unescaped if it holds an escape: Spark sorted its bytes."""
        text = self.raw_group(at)
        return text if b"\\" not in text else str(json.loads(b'"' + text + b'"')).encode("utf-8")

    def group_end(self, at: int) -> int:
        """The end of the lines of the group whose first line is at `at`: its last line is found by rfind of
        the group's line start in a window that doubles while the group goes on past it."""
        data, size = self.data, self.size
        pattern = b"\n" + _LINE_START + self.raw_group(at) + _GROUP_END
        last, window = at, 1 << 14
        while True:
            found = data.rfind(pattern, last, min(size, last + window))
            if found >= 0:
                last = found + 1
            after: int = data.find(b"\n", last) + 1
            if after >= size or data[after - 1 : after - 1 + len(pattern)] != pattern:
                self._release(after)
                return after
            last, window = after, window * 2

    def _release(self, upto: int) -> None:
        """Drops the mapped pages before `upto` from this process (they stay in the page cache)."""
        if isinstance(self.data, mmap.mmap) and upto - self._released >= 1 << 26:
            page = upto - upto % mmap.PAGESIZE
            self.data.madvise(mmap.MADV_DONTNEED, self._released, page - self._released)
            self._released = page

    def pieces(self, start: int, end: int) -> Iterator[bytes]:
        """The bytes of the whole lines in [start, end), at most about 4 MB at a time, cut after a line."""
        while start < end:
            cut = end if end - start <= 1 << 22 else self.data.rfind(b"\n", start, start + (1 << 22)) + 1
            if cut <= start:
                cut = self.data.find(b"\n", start + (1 << 22)) + 1 or end
            yield bytes(self.data[start:cut])
            start = cut


def merge_ranges(files: Sequence[RunFile]) -> Iterator[tuple[int, int, int]]:
    """Sorted runs of result lines whose groups are disjoint (a group's rows are all in one file) -> (file
    index, start, end) byte ranges whose lines, in order, are in (group, topic, partition) order. A file's
    lines go out as one range up to its first group above the smallest group another file holds next:
    a few calls a group (RunFile.group_end), none a line."""
    heap = [(f.group(0), i) for i, f in enumerate(files) if f.size]
    heapq.heapify(heap)
    at = [0] * len(files)
    while heap:
        _, i = heapq.heappop(heap)
        f, start = files[i], at[i]
        if not heap:
            yield i, start, f.size
            return
        bound = heap[0][0]
        end = start
        while True:
            end = f.group_end(end)
            if end >= f.size:
                break
            key = f.group(end)
            if key >= bound:
                heapq.heappush(heap, (key, i))
                break
        at[i] = end
        yield i, start, end


# The report's partitions outside local mode (write_rows): each is one task's result, which the executor
# holds whole in its heap (the rows, then their serialised copy) and in its block manager until the driver
# fetches it, and the driver holds two of them (prefetch). Sized by the report, not by the session's shuffle
# partitions: at 1M distinct records four partitions were 65-131 MB each and a 1 GB executor died of it
# (docs/performance.md, "The distributed path").
REPORT_PARTITION_BYTES_CONF = "spark.offsetExpiry.reportPartitionBytes"
REPORT_PARTITION_BYTES = 8 << 20
# A report line's bytes besides its group and topic (the field names, the enums, the numbers at their
# longest): so the estimate is an upper bound for ASCII names.
LINE_BYTES_BESIDES_NAMES = 320


def line_bytes_estimate() -> Column:
    """A result row's report line length, about (over, for ASCII names): from the names alone, so the
    estimate costs a sum in the counting job and no JSON."""
    return F.lit(LINE_BYTES_BESIDES_NAMES) + F.octet_length("group") + F.coalesce(F.octet_length("topic"), F.lit(0))


def report_partitions(estimated_bytes: int, budget_bytes: int = REPORT_PARTITION_BYTES) -> int:
    """How many partitions the report is sorted into outside local mode: about `budget_bytes` of lines each
    (at least one), so no task result, in the executor or the driver, grows with the report."""
    if budget_bytes < 1:
        raise ValueError(f"budget_bytes must be positive, not {budget_bytes}")
    return max(1, -(-max(estimated_bytes, 0) // budget_bytes))


def report_partition_budget(value: str | None) -> int:
    """The Spark setting REPORT_PARTITION_BYTES_CONF (bytes, a positive integer), or the default."""
    return _positive_setting(REPORT_PARTITION_BYTES_CONF, value, REPORT_PARTITION_BYTES, "bytes")


# The shuffle by group before assemble_for (analyze_facts_many: a topic with records away from their group's
# home partition, or facts from elsewhere): assemble_for takes its whole shuffle partition into one Python
# worker (every group whole), so with the session's shuffle partitions alone (max(2 x cores, 4): a number of
# cores, not of records) that worker grew with the topic. About this many records a partition instead.
ASSEMBLE_RECORDS_CONF = "spark.offsetExpiry.assembleRecords"
ASSEMBLE_RECORDS = 250_000


def assemble_partitions(records: int, floor: int, budget: int = ASSEMBLE_RECORDS) -> int:
    """How many partitions the shuffle by group has: at most about `budget` of the snapshot's `records` each
    (raw records: an upper bound of the facts that reach the shuffle), and never fewer than `floor` (the
    session's shuffle partitions: a small topic keeps the partitions, and so the tasks, it has always had)."""
    if budget < 1:
        raise ValueError(f"budget must be positive, not {budget}")
    return max(floor, 1, -(-max(records, 0) // budget))


def assemble_record_budget(value: str | None) -> int:
    """The Spark setting ASSEMBLE_RECORDS_CONF (records, a positive integer), or the default."""
    return _positive_setting(ASSEMBLE_RECORDS_CONF, value, ASSEMBLE_RECORDS, "records")


def _positive_setting(name: str, value: str | None, default: int, unit: str) -> int:
    """A Spark setting that is a positive integer (`default` when unset); anything else is refused in one
    line naming the setting."""
    if value is None or not value.strip():
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        raise InputError(f"{name}: a number of {unit} above 0, not {value!r}")
    return number


def write_rows(results: DataFrame, estimated_bytes: int = 0) -> OffsetRows:
    """Result rows as the report's array items (OffsetRows), in (group, topic, partition) order: in local
    mode each partition's rows
    sorted and written by the executors (the driver shares their file system; every partition holds its
    groups whole: the readers' or the shuffle's, by group), merged as the report is copied
    (OffsetRows.runs); elsewhere sorted across partitions of a few MB each (report_partitions, from
    `estimated_bytes`: line_bytes_estimate summed) and streamed to the driver a partition at a time
    into a local file. An explicit partition count, as Spark's adaptive execution would otherwise merge a
    global sort's partitions up to 64 MB."""
    spark = results.sparkSession
    directory = tempfile.mkdtemp(prefix="offset-expiry-results-")
    order = ("group", "topic", "partition")
    local = (spark.sparkContext.master or "").startswith("local")
    if local:
        ordered = results.sortWithinPartitions(*order)
    else:
        budget = report_partition_budget(spark.conf.get(REPORT_PARTITION_BYTES_CONF, None))
        partitions = report_partitions(estimated_bytes, budget)
        ordered = results.repartitionByRange(partitions, *order).sortWithinPartitions(*order)
    item = F.to_json(F.struct(*RESULT_FIELDS), {"ignoreNullFields": "false"})
    lines = ordered.select(F.concat(F.lit("  "), item, F.lit(",")).alias("value"))  # OffsetRows' line
    rows = OffsetRows(directory, runs=local)
    if local:
        lines.write.mode("overwrite").text(os.path.join(directory, "spark"))
        out = os.path.join(directory, "spark")
        for name in sorted(os.listdir(out)):
            if name.startswith("part-"):
                os.replace(os.path.join(out, name), os.path.join(directory, name))
        shutil.rmtree(out, ignore_errors=True)
    else:
        with open(os.path.join(directory, "part-00000"), "w", encoding="utf-8") as f:
            for line in stream_lines(lines):
                f.write(line)
                f.write("\n")
    return rows


def stream_lines(lines: DataFrame) -> Iterator[str]:
    """The `value` column of `lines` to the driver a partition at a time, in order (two partitions held at
    most: the prefetch). Through the RDD's toLocalIterator, not the DataFrame's: on Spark 4.3 with executors
    outside the driver, DataFrame.toLocalIterator keeps every partition it delivered in the driver's heap
    until the iterator ends (measured: 565 MB live for 490 MB of lines, prefetch or not; the RDD's: flat at
    34 MB), so a report larger than the driver's heap failed (TaskResultLost at 5M records:
    docs/performance.md, "The distributed path")."""
    for row in lines.rdd.toLocalIterator(prefetchPartitions=True):
        yield row["value"]


@dataclass(frozen=True)
class PolicyRun:
    """One policy's part of a run: its rules and the broker retention its expiry times use (a policy may
    give its own, spec.analysis.brokerRetention)."""

    policy: Policy
    retention_ms: int




def analyze_facts_many(
    facts: DataFrame,
    runs: Sequence[PolicyRun],
    *,
    now_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
    records: int = 0,
) -> list[dict[str, Any]]:
    """Several policies on one scan (issue 12): the read, compaction, replay and group rebuild (steps 1-5,
    nearly all of the work) run once; each policy's decisions (step 6) and rows (step 7) then run on the
    shared, cached facts. Returns one report per policy, in order, each the report the policy would get
    alone on the same snapshot (the single-policy call is this one with one policy). `records`: the
    snapshot's records, which size the shuffle by group (assemble_partitions)."""
    spark = facts.sparkSession
    partitions = assemble_partitions(
        records,
        int(spark.conf.get("spark.sql.shuffle.partitions") or "4"),
        assemble_record_budget(spark.conf.get(ASSEMBLE_RECORDS_CONF, None)),
    )
    assembled = (
        ship_topics(facts)
        .repartition(partitions, "group")
        .mapInArrow(assemble_for([run.policy for run in runs]), ddl(ASSEMBLED_ARROW))
    )
    reports = analyze_assembled_many(
        assembled,
        runs,
        now_ms=now_ms,
        existing_topics=existing_topics,
        snapshot=snapshot,
        candidates_only=candidates_only,
    )
    assert reports is not None  # the shuffle brings every group whole: no strays
    return reports


def analyze_assembled_many(
    assembled: DataFrame,
    runs: Sequence[PolicyRun],
    *,
    now_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
) -> list[dict[str, Any]] | None:
    """Steps 6-7 from assemble_for's rows (ASSEMBLED_ARROW's, by the shuffle of analyze_facts_many or
    by the reader's tasks, assemble_at_home): one report per policy; None if a reader found records
    away from their group's home partition (`stats_stray`), which the caller then regroups.

    One policy in local mode: one Spark job, the write of the report, whose counts and reasons are
    observed on the way (Observation: no cache, no second pass of the verdicts). Several policies (or a
    cluster, whose report is streamed to the driver): the assembled rows are cached and counted first;
    on a cluster the counting job also sizes the report (line_bytes_estimate) for write_rows' partitions."""
    spark = assembled.sparkSession
    local = (spark.sparkContext.master or "").startswith("local")
    cached = len(runs) > 1 or not local
    is_stats = F.col("stats_groups").isNotNull()
    stats_sums = [F.sum(name).alias(name) for name in STATS_COLUMNS]
    if cached:
        assembled = assembled.persist()
    reports: list[dict[str, Any]] = []
    try:
        stats: dict[str, int] | None = None
        stats_seen: Observation | None = None
        if cached:
            stats = _ints(assembled.where(is_stats).agg(*stats_sums).first(), STATS_COLUMNS)
            if stats["stats_stray"]:
                return None
        else:
            stats_seen = Observation()
            assembled = assembled.observe(stats_seen, *stats_sums)  # the stats rows only have them set
        offsets = assembled.where(~is_stats).drop(*STATS_COLUMNS)
        topics = topics_frame(spark, existing_topics)
        for index, run in enumerate(runs):
            results = verdicts(for_policy(offsets, index), topics, run.policy, now_ms, run.retention_ms)
            estimated = 0
            if local:
                reasons_seen = Observation()
                results = results.observe(
                    reasons_seen, *[F.count_if(F.col("reason") == r.value).alias(r.value) for r in OffsetReason]
                )
            else:
                counted = (
                    results.groupBy("reason", "candidate")
                    .agg(F.count(F.lit(1)).alias("count"), F.sum(line_bytes_estimate()).alias("bytes"))
                    .collect()
                )
                estimated = sum(int(row["bytes"] or 0) for row in counted if row["candidate"] or not candidates_only)
            rows = write_rows(results.where(F.col("candidate")) if candidates_only else results, estimated)
            reasons = _ints(reasons_seen.get, [r.value for r in OffsetReason]) if local else _by_reason(counted)
            if stats is None:
                assert stats_seen is not None
                stats = _ints(stats_seen.get, STATS_COLUMNS)
                if stats["stats_stray"]:
                    rows.close()
                    return None
            reports.append(
                {
                    "summary": summary(
                        records_scanned=stats["stats_records"],
                        groups=stats["stats_groups"],
                        reasons=reasons,
                        skipped_records=stats["stats_skipped"],
                        snapshot=snapshot or {},
                    ),
                    "offsets": rows,
                }
            )
    finally:
        if cached:
            assembled.unpersist()
    return reports


def _by_reason(counted: Sequence[Any]) -> dict[str, int]:
    """The counting job's rows (reason, candidate, count, bytes) -> rows per reason."""
    reasons: dict[str, int] = {}
    for row in counted:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + int(row["count"])
    return reasons


def _ints(values: Any, names: Sequence[str]) -> dict[str, int]:
    """A Row or a dict of sums (None when summing no rows) as ints."""
    return {name: int((values[name] if values is not None else 0) or 0) for name in names}
