"""A snapshot of a Kafka topic as a Spark DataFrame, read with kafka-python in Spark's Python workers.

    raw = read_frame(spark, "host:9092", take_snapshot("host:9092"))

Snapshot semantics: the driver takes each partition's start and end offsets once, before the run
(`take_snapshot`), and every reader stops at that end, so a run is consistent and finite however busy
the topic is. The end is the last stable offset (offsets are listed `read_committed`), and readers fetch
`read_committed` (fetcher.py, recordset.py): transactional offset commits count only once committed
(OffsetMetadataManager.replayEndTransactionMarker), aborted ones never do.

Read tasks: each topic partition is one offset range, split into ranges of at most `split_records`
offsets so a big partition does not serialise the read; the ranges are then packed into `tasks` read
tasks of about equal size (the analysis asks for twice the session's default parallelism; the default
is 4), each read over one connection, each one Spark partition. Packing is there because every task
costs a round trip to a Python worker (measured with the earlier Python data source: 50 empty partitions
took 5 s, 4 took 0.7 s), which for Kafka's default 50 offsets partitions costs more than reading them;
`tasks=0` gives one task per range.

The read is a `mapInArrow` over `spark.range` (read_frame), not a Python data source: Spark 4.3 plans a
Python data source in Python processes of their own (`lookup_data_sources`, `create_data_source`,
`plan_data_source_read`), each started cold, which cost a cold run more than the read of a small topic
(issue 22, docs/performance.md). The plan is made in the driver and travels with the function.

Readers yield Arrow record batches (partition, offset, timestamp, key, value, records): rows as Python
tuples are several times slower. `records` is how many records of the range a row stands for: 1,
unless `compact` asks the reader to keep only the newest record per key of its range
(a map-side combine of the pipeline's compaction: it ships one row per key instead of one per commit).
Its output keeps no GroupMetadata history (the older records of a group's newest generation,
facts.GROUP_METADATA_HISTORY), so it is not an analysis input equal to the reference's: the analysis
reads with `decode`.

With `decode` (what the analysis uses) the reader does the whole of log compaction and decoding:
each partition is read by one task, unsplit, so the newest record per key of the partition is the
newest record per key of the topic (keys never cross partitions); the survivors are decoded into facts
(columnar.decode_records: numpy for the fixed-layout offset commits, the Python row path for the rest)
and the rows are those of columnar.DECODED_ARROW, `records` counting the records each stands for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_offsets_model.errors import InputError
from kafka_offsets_model.raw import OFFSETS_TOPIC

from .columnar import DECODED_ARROW, decode_records, last_per_key
from .facts import same_generation_history
from .fetcher import CLIENT_SETTINGS as CLIENT_SETTINGS  # the settings read_frame's `settings` may set
from .fetcher import PartitionFetcher, typed_settings
from .pipeline import ASSEMBLED_ARROW, assemble_at_home, ddl
from .recordset import ParsedRecords
from .recordset_arrays import RecordArrays

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_offsets_model.policy import Policy

RAW_ARROW = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("records", pa.int64()),
    ]
)
BATCH_ROWS = 20_000
RAW_DDL = ddl(RAW_ARROW)
DECODED_DDL = ddl(DECODED_ARROW)
ASSEMBLED_DDL = ddl(ASSEMBLED_ARROW)
DEFAULT_SPLIT_RECORDS = 2_000_000
DEFAULT_TASKS = 4


class SourceError(InputError):
    """The topic cannot be read: unreachable broker, missing topic, no progress."""


@dataclass(frozen=True)
class Snapshot:
    """partition -> (first offset, end offset): what a run reads."""

    ranges: Mapping[int, tuple[int, int]]

    @property
    def end_offsets(self) -> dict[int, int]:
        return {p: end for p, (_, end) in sorted(self.ranges.items())}

    @property
    def records(self) -> int:
        """Offsets in the snapshot: its records, and a few control records of transactions."""
        return sum(end - start for start, end in self.ranges.values())


@dataclass(frozen=True)
class OffsetRange:
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class ReadTask:
    """The ranges one Spark task reads, one after another."""

    ranges: tuple[OffsetRange, ...]

    @property
    def size(self) -> int:
        return sum(r.end - r.start for r in self.ranges)


def plan_tasks(snapshot: Snapshot, split_records: int, tasks: int) -> list[ReadTask]:
    """The ranges of plan_ranges packed into at most `tasks` tasks of about equal size (largest first,
    each into the lightest task); `tasks` <= 0 means one task per range. An empty topic still gets one
    (empty) task, so that the frame has a partition."""
    ranges = plan_ranges(snapshot, split_records)
    if not ranges:
        return [ReadTask(())]
    if tasks <= 0 or tasks >= len(ranges):
        return [ReadTask((r,)) for r in ranges]
    bins: list[list[OffsetRange]] = [[] for _ in range(tasks)]
    loads = [0] * tasks
    for r in sorted(ranges, key=lambda r: (r.start - r.end, r.partition, r.start)):
        i = loads.index(min(loads))
        bins[i].append(r)
        loads[i] += r.end - r.start
    return [ReadTask(tuple(sorted(b, key=lambda r: (r.partition, r.start)))) for b in bins if b]


def plan_ranges(snapshot: Snapshot, split_records: int) -> list[OffsetRange]:
    """One range per partition, or several of at most `split_records` offsets; empty partitions skipped."""
    out = []
    for partition, (start, end) in sorted(snapshot.ranges.items()):
        at = start
        while at < end:
            stop = min(end, at + split_records)
            out.append(OffsetRange(partition, at, stop))
            at = stop
    return out


def read_frame(
    spark: SparkSession,
    bootstrap_servers: str,
    snapshot: Snapshot,
    *,
    topic: str = OFFSETS_TOPIC,
    settings: Mapping[str, str] | None = None,
    split_records: int = DEFAULT_SPLIT_RECORDS,
    tasks: int = DEFAULT_TASKS,
    compact: bool = False,
    decode: bool = False,
    assemble: Sequence[Policy] | None = None,
) -> DataFrame:
    """The snapshot's records as a DataFrame of one Spark partition per read task (plan_tasks), each read
    by read_task in a Python worker: `mapInArrow` over `spark.range(0, n, 1, n)`, whose row i names task i
    of the plan the function carries. Issue 22: a Python data source cost a cold run three more cold Python
    processes (Spark 4.3's lookup, create and plan workers) and their round trips before the first task;
    this needs only the task workers. Rows: RAW_ARROW's; with `decode` (whole partitions, compacted and
    decoded in the reader) DECODED_ARROW's; with `assemble` (the run's policies: decode, then each
    partition's groups assembled in the reader, pipeline.assemble_at_home) ASSEMBLED_ARROW's. `compact`
    keeps the newest record per key of each range (no GroupMetadata history: not an analysis input).
    `settings`: kafka-python settings (fetcher.CLIENT_SETTINGS)."""
    policies = None if assemble is None else tuple(assemble)
    if policies is not None:
        decode = True
    if decode:  # a partition is compacted whole, in one task: no range splits
        split_records = 2**62
    plan = tuple(plan_tasks(snapshot, split_records, tasks))
    schema = ASSEMBLED_DDL if policies is not None else DECODED_DDL if decode else RAW_DDL
    read = functools.partial(
        _read_tasks, bootstrap_servers, topic, plan, dict(settings or {}), compact, decode, policies,
        len(snapshot.ranges),
    )
    return spark.range(0, len(plan), 1, len(plan)).mapInArrow(read, schema)


def _read_tasks(
    bootstrap_servers: str,
    topic: str,
    plan: tuple[ReadTask, ...],
    settings: Mapping[str, str],
    compact: bool,
    decode: bool,
    policies: tuple[Policy, ...] | None,
    partitions: int,
    ids: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """read_frame's function, in a task's Python worker: the tasks of the ids in its partition (one)."""
    assemble = None if policies is None else assemble_at_home(policies, partitions)
    for batch in ids:
        for i in batch.column("id").to_pylist():
            yield from read_task(
                bootstrap_servers, topic, plan[i], settings, compact=compact, decode=decode, assemble=assemble
            )


def client_config(bootstrap_servers: str, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers.split(","),
        "group_id": None,
        "enable_auto_commit": False,
        "isolation_level": "read_committed",
        "request_timeout_ms": 30_000,
        "fetch_max_bytes": 64 * 1024 * 1024,
        "max_partition_fetch_bytes": 16 * 1024 * 1024,
        "max_poll_records": 100_000,
        "check_crcs": False,  # Kafka checked them on produce; the codec rejects garbage anyway
    }
    config.update(typed_settings(settings))
    return config


def take_snapshot(
    bootstrap_servers: str, topic: str = OFFSETS_TOPIC, settings: Mapping[str, Any] | None = None
) -> Snapshot:
    """First and (last stable) end offset of every partition, taken now."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    try:
        consumer = KafkaConsumer(**client_config(bootstrap_servers, settings))
    except (KafkaError, ValueError, OSError) as exc:
        raise SourceError(f"cannot connect to Kafka at {bootstrap_servers}: {exc}") from None
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise SourceError(f"topic {topic} does not exist on {bootstrap_servers}")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        starts = consumer.beginning_offsets(tps)
        ends = consumer.end_offsets(tps)
        return Snapshot({tp.partition: (int(starts[tp]), int(ends[tp])) for tp in tps})
    except KafkaError as exc:
        raise SourceError(f"cannot read offsets of {topic} from {bootstrap_servers}: {exc}") from None
    finally:
        consumer.close()


def read_task(
    bootstrap_servers: str,
    topic: str,
    task: ReadTask,
    settings: Mapping[str, Any] | None = None,
    *,
    compact: bool = False,
    decode: bool = False,
    assemble: Callable[[int, Sequence[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of every range of the task, over one connection. `assemble` (with `decode`, whole
    partitions): each partition's decoded facts go through it (pipeline.assemble_at_home) and its rows
    are the output."""
    if not task.ranges:
        return
    fetcher = PartitionFetcher(bootstrap_servers, settings, topic)
    try:
        for rng in task.ranges:
            sink: _Sink | _CompactingSink | _DecodingSink = (
                _DecodingSink(rng.partition)
                if decode
                else _CompactingSink(rng.partition)
                if compact
                else _Sink(rng.partition)
            )
            if isinstance(sink, _DecodingSink):
                for arrays in fetcher.fetch_arrays(topic, rng.partition, rng.start, rng.end):
                    sink.add_arrays(arrays)
                if assemble is not None:
                    yield from assemble(rng.partition, list(sink.finish()))
                    continue
            elif isinstance(sink, _Sink):
                for arrays in fetcher.fetch_arrays(topic, rng.partition, rng.start, rng.end):
                    yield from sink.add_arrays(arrays)
            else:
                for parsed in fetcher.fetch(topic, rng.partition, rng.start, rng.end):
                    yield from sink.add(parsed)
            yield from sink.finish()
    finally:
        fetcher.close()


class _Sink:
    """Cuts the records into Arrow batches as they are fetched (a record without a key gets the empty key),
    from the vectorised parser's arrays: no Python object per record (the analysis reads this way when a
    partition is too big for the readers to assemble, analysis.execute_many)."""

    def __init__(self, partition: int) -> None:
        self.partition = partition

    def add_arrays(self, arrays: RecordArrays) -> Iterator[pa.RecordBatch]:
        n = len(arrays)
        if not n:
            return
        keys = arrays.keys.cast(pa.binary())
        if keys.null_count:
            keys = keys.fill_null(b"")
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(np.full(n, self.partition, np.int32)),
                pa.array(np.asarray(arrays.offsets, np.int64)),
                pa.array(np.asarray(arrays.timestamps, np.int64)),
                keys,
                arrays.values.cast(pa.binary()),
                pa.array(np.ones(n, np.int64)),
            ],
            schema=RAW_ARROW,
        )
        for i in range(0, n, BATCH_ROWS):
            yield batch.slice(i, BATCH_ROWS)

    def finish(self) -> Iterator[pa.RecordBatch]:
        return iter(())


class _CompactingSink:
    """Keeps the newest record per key (records arrive in offset order) and how many it stands for. It keeps
    no GroupMetadata history (facts.GROUP_METADATA_HISTORY): the analysis reads with `decode` instead."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.latest: dict[bytes, list[Any]] = {}

    def add(self, parsed: ParsedRecords) -> Iterator[pa.RecordBatch]:
        latest = self.latest
        for offset, timestamp, key, value in zip(
            parsed.offsets, parsed.timestamps, parsed.keys, parsed.values, strict=True
        ):
            slot = latest.get(key if key is not None else b"")
            if slot is None:
                latest[key if key is not None else b""] = [offset, timestamp, value, 1]
            else:
                slot[0] = offset
                slot[1] = timestamp
                slot[2] = value
                slot[3] += 1
        return iter(())

    def finish(self) -> Iterator[pa.RecordBatch]:
        items = list(self.latest.items())
        self.latest = {}
        for i in range(0, len(items), BATCH_ROWS):
            chunk = items[i : i + BATCH_ROWS]
            yield _batch(
                self.partition,
                [v[0] for _, v in chunk],
                [v[1] for _, v in chunk],
                [k for k, _ in chunk],
                [v[2] for _, v in chunk],
                [v[3] for _, v in chunk],
            )


class _DecodingSink:
    """Compacts the range (the newest record per key, and how many it stands for) and decodes the
    survivors into facts (columnar.decode_records), a batch of BATCH_ROWS at a time. The records arrive
    as arrays (recordset_arrays): no Python object per record."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.offsets: list[np.ndarray] = []
        self.timestamps: list[np.ndarray] = []
        self.keys: list[pa.Array] = []
        self.values: list[pa.Array] = []

    def add_arrays(self, arrays: RecordArrays) -> None:
        if len(arrays):
            self.offsets.append(arrays.offsets)
            self.timestamps.append(arrays.timestamps)
            self.keys.append(arrays.keys)
            self.values.append(arrays.values)

    def finish(self) -> Iterator[pa.RecordBatch]:
        if not self.offsets:
            return
        all_keys = _concat(self.keys).cast(pa.binary())  # one copy of the bytes (Arrow cannot take() views)
        if all_keys.null_count:  # rare: a record without a key is compacted as the empty key
            all_keys = all_keys.fill_null(b"")
        all_offsets = np.concatenate(self.offsets)
        all_timestamps = np.concatenate(self.timestamps)
        all_values = _concat(self.values).cast(pa.binary())
        self.offsets, self.timestamps, self.keys, self.values = [], [], [], []
        past = _group_metadata_history(all_keys, all_offsets, all_values)
        last, counts = last_per_key(all_keys)
        offsets = pa.array(all_offsets[last])
        timestamps = pa.array(all_timestamps[last])
        values = all_values.take(last)
        keys = all_keys.take(last)
        if len(past):
            # Older GroupMetadata records of the newest one's generation also go out as history
            # (columnar.decode_records' `history`; facts.GROUP_METADATA_HISTORY), counting no records.
            n = len(past)
            yield decode_records(
                pa.array(np.full(n, self.partition, np.int32)),
                pa.array(all_offsets[past]),
                pa.array(np.zeros(n, np.int64)),
                all_keys.take(past),
                all_values.take(past),
                pa.array(all_timestamps[past]),
                pa.array(np.ones(n, bool)),
            )
        partitions = pa.array(np.full(len(last), self.partition, np.int32))
        records = pa.array(counts.astype(np.int64))
        for i in range(0, len(last), BATCH_ROWS):
            j = i + BATCH_ROWS
            yield decode_records(
                partitions[i:j], offsets[i:j], records[i:j], keys[i:j], values[i:j], timestamps[i:j]
            )


def _concat(arrays: list[pa.Array]) -> pa.Array:
    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


_GROUP_METADATA_PREFIX = pa.scalar(b"\x00\x02", pa.binary())  # a GroupMetadataKey's first two bytes (key type 2)


def _group_metadata_history(keys: pa.Array, offsets: np.ndarray, values: pa.Array) -> np.ndarray:
    """The rows (indexes, ascending) of a range's older GroupMetadata records worth keeping as history:
    facts.same_generation_history per key. Only the GroupMetadata rows (few) become Python objects."""
    mask = pc.equal(pc.binary_slice(keys, 0, 2), _GROUP_METADATA_PREFIX).fill_null(False)
    rows = np.flatnonzero(np.asarray(mask, dtype=bool))
    if len(rows) < 2:
        return np.empty(0, np.int64)
    by_key: dict[bytes, list[int]] = {}
    for i, k in zip(rows.tolist(), keys.take(rows).to_pylist(), strict=True):
        by_key.setdefault(k, []).append(i)
    past = [
        group[j]
        for group in by_key.values()
        if len(group) > 1
        for j in same_generation_history([(int(offsets[i]), values[i].as_py()) for i in group])
    ]
    return np.sort(np.asarray(past, np.int64))


def _batch(
    partition: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[bytes],
    values: list[bytes | None],
    records: list[int],
) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([partition] * len(offsets), pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps, pa.int64()),
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(records, pa.int64()),
        ],
        schema=RAW_ARROW,
    )
