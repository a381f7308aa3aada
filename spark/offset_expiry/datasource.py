"""The Python data source's planning half (issue 22): the classes Spark's planner processes load, kept light.

Spark 4.3 plans a read of a Python data source in Python processes of their own, started cold by the JVM for
each kind of call: `create_data_source` (unpickles the DataSource class, asks its schema), then
`plan_data_source_read` (builds the reader, asks its partitions, pickles it for the tasks). Each imports the
module the class lives in. Here that module imports neither pyarrow, numpy, kafka-python nor the pipeline (about
1.3 CPU-s of imports per process on a quiet core): the reading half (source.py: fetch, compact, decode, assemble)
is imported by `read()` alone, in the task's worker, which needs it anyway. The schema is a DDL string, so no
Arrow type is built while planning; source.py checks at import that the strings match the Arrow schemas.

The policies of option `assemble` are unpickled in `read()` too (their module imports jsonschema).
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_offsets_model.errors import InputError
from kafka_offsets_model.raw import OFFSETS_TOPIC

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

    from kafka_offsets_model.policy import Policy

FORMAT = "kafka-snapshot"
RAW_DDL = "partition int, offset long, timestamp long, key binary, value binary, records long"
DECODED_DDL = (
    "record_partition int, record_offset long, records long, type int, group string, topic string, "
    "partition int, member string, tombstone boolean, committed_offset long, commit_timestamp long, "
    "expire_timestamp long, protocol_type string, state_timestamp long, member_count int, "
    "topics array<string>, regex string, epoch int, member_state int, record_timestamp long, generation int"
)
# pipeline.ddl(pipeline.ASSEMBLED_ARROW), written out so that planning needs no pyarrow (source.py checks it).
ASSEMBLED_DDL = (
    "`group` string, `topic` string, `partition` int, `committed_offset` long, `commit_timestamp` long, "
    "`expire_timestamp` long, `group_type` string, `group_state` string, `group_protocol_type` string, "
    "`group_state_timestamp` long, `group_subscribed` array<string>, `group_unresolved_regex` boolean, "
    "`group_newest_commit` long, `group_uncertain` array<string>, `group_protected_by` array<boolean>, "
    "`group_selected_by` array<boolean>, `stats_records` long, `stats_skipped` long, `stats_groups` long, "
    "`stats_stray` long"
)
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

    def to_json(self) -> str:
        return json.dumps({str(p): [start, end] for p, (start, end) in sorted(self.ranges.items())})

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        return cls({int(p): (int(r[0]), int(r[1])) for p, r in json.loads(text).items()})


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


def policies_option(policies: Sequence[Policy]) -> str:
    """The option `assemble`: the run's policies (their group patterns are answered in the readers)."""
    return base64.b64encode(pickle.dumps(tuple(policies))).decode("ascii")


def policies_from_option(text: str | None) -> tuple[Policy, ...] | None:
    if not text:
        return None
    from kafka_offsets_model.policy import Policy

    policies = pickle.loads(base64.b64decode(text))  # written by policies_option in the driver
    assert isinstance(policies, tuple) and all(isinstance(p, Policy) for p in policies)
    return policies


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
        self.assemble = options.get("assemble") or None  # policies_option's text, unpickled in read()
        if self.assemble is not None:
            self.decode = True
        if self.decode:  # a partition is compacted whole, in one task: no range splits
            self.split_records = 2**62
        snapshot = options.get("snapshot")
        if snapshot:
            self.snapshot = Snapshot.from_json(snapshot)
        else:
            from .source import take_snapshot

            self.snapshot = take_snapshot(self.bootstrap_servers, self.topic, self.settings)

    def partitions(self) -> Sequence[ReadTask]:
        return plan_tasks(self.snapshot, self.split_records, self.tasks)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from .pipeline import assemble_at_home
        from .source import read_task

        assert isinstance(partition, ReadTask)
        policies = policies_from_option(self.assemble)
        assemble = None if policies is None else assemble_at_home(policies, len(self.snapshot.ranges))
        yield from read_task(
            self.bootstrap_servers,
            self.topic,
            partition,
            self.settings,
            compact=self.compact,
            decode=self.decode,
            assemble=assemble,
        )


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
            return ASSEMBLED_DDL
        if self.options.get("decode", "false").lower() == "true":
            return DECODED_DDL
        return RAW_DDL

    def reader(self, schema: Any) -> KafkaSnapshotReader:
        if "bootstrap.servers" not in self.options:
            raise SourceError("option bootstrap.servers is required")
        return KafkaSnapshotReader(self.options)
