"""A PySpark Python Data Source (Spark 4) that reads a snapshot of a Kafka topic with kafka-python.

    spark.dataSource.register(KafkaSnapshotDataSource)
    raw = spark.read.format("kafka-snapshot").option("bootstrap.servers", "host:9092")
              .option("topic", "__consumer_offsets").option("snapshot", snapshot_json(ranges)).load()

Snapshot semantics: the driver takes each partition's start and end offsets once, before the run
(`take_snapshot`), and every reader stops at that end, so a run is consistent and finite however busy
the topic is. The end is the last stable offset (offsets are listed `read_committed`), and readers fetch
`read_committed` (fetcher.py, recordset.py): transactional offset commits count only once committed
(OffsetMetadataManager.replayEndTransactionMarker), aborted ones never do.

Input partitions: each topic partition is one offset range, split into ranges of at most
`split.records` offsets so a big partition does not serialise the read; the ranges are then packed
into `tasks` input partitions of about equal size (the analysis asks for twice the session's default
parallelism; the default is 4), each read over one connection. Packing is there because Spark 4.3
spends about 0.1 s on every Python data source task (measured here: 50 empty partitions take 5 s, 4
take 0.7 s), which for Kafka's default 50 offsets partitions costs more than reading them; `tasks=0`
gives the plain one-partition-per-range plan.

Readers yield Arrow record batches (partition, offset, timestamp, key, value, records): rows as Python
tuples are several times slower. `records` is how many records of the range a row stands for: 1,
unless the option `compact=true` asks the reader to keep only the newest record per key of its range
(a map-side combine of the pipeline's compaction: it ships one row per key instead of one per commit).
Its output keeps no GroupMetadata history (the older records of a group's newest generation,
facts.GROUP_METADATA_HISTORY), so it is not an analysis input equal to the reference's: the analysis
reads with `decode=true`.

With `decode=true` (what the analysis uses) the reader does the whole of log compaction and decoding:
each partition is read by one task, unsplit, so the newest record per key of the partition is the
newest record per key of the topic (keys never cross partitions); the survivors are decoded into facts
(columnar.decode_records: numpy for the fixed-layout offset commits, the Python row path for the rest)
and the rows are those of columnar.DECODED_ARROW, `records` counting the records each stands for.
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_offsets_model.errors import InputError
from kafka_offsets_model.policy import Policy
from kafka_offsets_model.raw import OFFSETS_TOPIC

from .columnar import DECODED_ARROW, decode_records, last_per_key
from .facts import same_generation_history
from .fetcher import CLIENT_SETTINGS as CLIENT_SETTINGS  # the settings "kafka.<name>" options may set
from .fetcher import PartitionFetcher, typed_settings
from .pipeline import ASSEMBLED_ARROW, assemble_at_home, ddl
from .recordset import ParsedRecords
from .recordset_arrays import RecordArrays

FORMAT = "kafka-snapshot"
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
RAW_DDL = "partition int, offset long, timestamp long, key binary, value binary, records long"
DECODED_DDL = (
    "record_partition int, record_offset long, records long, type int, group string, topic string, "
    "partition int, member string, tombstone boolean, committed_offset long, commit_timestamp long, "
    "expire_timestamp long, protocol_type string, state_timestamp long, member_count int, "
    "topics array<string>, regex string, epoch int, member_state int, record_timestamp long, generation int"
)
assert [f.split(" ")[0] for f in DECODED_DDL.split(", ")] == DECODED_ARROW.names
DEFAULT_SPLIT_RECORDS = 2_000_000
DEFAULT_TASKS = 4
BATCH_ROWS = 20_000


class SourceError(InputError):
    """The topic cannot be read: unreachable broker, missing topic, no progress."""


@dataclass(frozen=True)
class Snapshot:
    """partition -> (first offset, end offset): what a run reads."""

    ranges: Mapping[int, tuple[int, int]]

    @property
    def end_offsets(self) -> dict[int, int]:
        return {p: end for p, (_, end) in sorted(self.ranges.items())}

    def to_json(self) -> str:
        return json.dumps({str(p): [start, end] for p, (start, end) in sorted(self.ranges.items())})

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        return cls({int(p): (int(r[0]), int(r[1])) for p, r in json.loads(text).items()})


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


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """The ranges one Spark task reads, one after another."""

    ranges: tuple[OffsetRange, ...]

    @property
    def size(self) -> int:
        return sum(r.end - r.start for r in self.ranges)


def plan_tasks(snapshot: Snapshot, split_records: int, tasks: int) -> list[ReadTask]:
    """The ranges of plan_ranges packed into at most `tasks` tasks of about equal size (largest first,
    each into the lightest task); `tasks` <= 0 means one task per range. An empty topic still gets one
    (empty) task: given no partitions, Spark would call read() with a bare InputPartition."""
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


def read_range(
    bootstrap_servers: str,
    topic: str,
    rng: OffsetRange,
    settings: Mapping[str, Any] | None = None,
    *,
    compact: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Records with rng.start <= offset < rng.end, as Arrow batches of at most BATCH_ROWS rows."""
    return read_task(bootstrap_servers, topic, ReadTask((rng,)), settings, compact=compact)


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
            else:
                for parsed in fetcher.fetch(topic, rng.partition, rng.start, rng.end):
                    yield from sink.add(parsed)
            yield from sink.finish()
    finally:
        fetcher.close()


class _Sink:
    """Cuts the records into Arrow batches."""

    def __init__(self, partition: int) -> None:
        self.partition = partition

    def add(self, parsed: ParsedRecords) -> Iterator[pa.RecordBatch]:
        for i in range(0, len(parsed.offsets), BATCH_ROWS):
            j = i + BATCH_ROWS
            n = len(parsed.offsets[i:j])
            keys = [b"" if k is None else k for k in parsed.keys[i:j]]
            yield _batch(
                self.partition, parsed.offsets[i:j], parsed.timestamps[i:j], keys, parsed.values[i:j], [1] * n
            )

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


_GROUP_METADATA_PREFIX = pa.scalar(b"\x00\x02", pa.binary())  # facts.is_group_metadata_key


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


def _settings_from_options(options: Mapping[str, str]) -> dict[str, str]:
    return {k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}


class KafkaSnapshotReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.bootstrap_servers = options["bootstrap.servers"]
        self.topic = options.get("topic", OFFSETS_TOPIC)
        self.settings = _settings_from_options(options)
        self.split_records = int(options.get("split.records", DEFAULT_SPLIT_RECORDS))
        self.compact = options.get("compact", "false").lower() == "true"
        self.tasks = int(options.get("tasks", DEFAULT_TASKS))
        self.decode = options.get("decode", "false").lower() == "true"
        self.policies = policies_from_option(options.get("assemble"))
        if self.policies is not None:
            self.decode = True
        if self.decode:  # a partition is compacted whole, in one task: no range splits
            self.split_records = 2**62
        snapshot = options.get("snapshot")
        self.snapshot = (
            Snapshot.from_json(snapshot)
            if snapshot
            else take_snapshot(self.bootstrap_servers, self.topic, self.settings)
        )

    def partitions(self) -> Sequence[ReadTask]:
        return plan_tasks(self.snapshot, self.split_records, self.tasks)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ReadTask)
        assemble = (
            None if self.policies is None else assemble_at_home(self.policies, len(self.snapshot.ranges))
        )
        yield from read_task(
            self.bootstrap_servers,
            self.topic,
            partition,
            self.settings,
            compact=self.compact,
            decode=self.decode,
            assemble=assemble,
        )


def policies_option(policies: Sequence[Policy]) -> str:
    """The option `assemble`: the run's policies (their group patterns are answered in the readers)."""
    return base64.b64encode(pickle.dumps(tuple(policies))).decode("ascii")


def policies_from_option(text: str | None) -> tuple[Policy, ...] | None:
    if not text:
        return None
    policies = pickle.loads(base64.b64decode(text))  # written by policies_option in the driver
    assert isinstance(policies, tuple) and all(isinstance(p, Policy) for p in policies)
    return policies


class KafkaSnapshotDataSource(DataSource):
    """Options: bootstrap.servers (required), topic (default __consumer_offsets), snapshot (JSON from
    Snapshot.to_json; taken at planning time if absent), split.records, tasks (0: one per range),
    compact (true|false: newest record per key of each range, without GroupMetadata history, so not an
    input for the analysis), decode (true|false: what the analysis reads), assemble (policies_option:
    decode, then assemble each partition's groups in the reader, pipeline.assemble_at_home; the rows are
    pipeline.ASSEMBLED_ARROW's), kafka.<client setting>."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        if self.options.get("assemble"):
            return ddl(ASSEMBLED_ARROW)
        if self.options.get("decode", "false").lower() == "true":
            return DECODED_DDL
        return RAW_DDL

    def reader(self, schema: Any) -> KafkaSnapshotReader:
        if "bootstrap.servers" not in self.options:
            raise SourceError("option bootstrap.servers is required")
        return KafkaSnapshotReader(self.options)
