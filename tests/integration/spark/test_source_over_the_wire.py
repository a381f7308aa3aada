"""The kafka-snapshot data source against the sandbox broker over TCP: every record of the snapshot
exactly once (whole partitions and split offset ranges, compacting or not), nothing appended after
the snapshot, and clear errors for a missing topic or an unreachable broker."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pytest
from brokers import sandbox_broker
from pyspark.sql import SparkSession

from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox import SandboxBroker
from kafka_sandbox.synthetic import generate
from offset_expiry.cluster import describe_cluster
from offset_expiry.source import (
    FORMAT,
    KafkaSnapshotDataSource,
    SourceError,
    plan_ranges,
    read_range,
    take_snapshot,
)


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[SandboxBroker, list[RawRecord]]]:
    topic = generate(99, groups=60, partitions=3, commits=3)
    with sandbox_broker(offsets_retention="3d", offsets_partitions=3) as broker:
        records = []
        by_partition: dict[int, list[tuple[bytes, bytes | None, int]]] = {}
        for r in topic.records:
            by_partition.setdefault(r.partition, []).append((r.key, r.value, r.timestamp))
        for partition, rows in sorted(by_partition.items()):
            for start in range(0, len(rows), 50):  # several batches per partition
                chunk = rows[start : start + 50]
                base = broker.append_records(OFFSETS_TOPIC, partition, chunk)
                records += [RawRecord(partition, base + i, ts, k, v) for i, (k, v, ts) in enumerate(chunk)]
        yield broker, records


def rows(batches: Iterator[pa.RecordBatch]) -> list[tuple[int, int, int, bytes, bytes | None, int]]:
    out = []
    for batch in batches:
        d = batch.to_pydict()
        out += list(
            zip(d["partition"], d["offset"], d["timestamp"], d["key"], d["value"], d["records"], strict=True)
        )
    return out


@pytest.mark.slow  # several seconds of Fetch requests
def test_ranges_read_every_record_once(seeded: tuple[SandboxBroker, list[RawRecord]]) -> None:
    broker, records = seeded
    snapshot = take_snapshot(broker.bootstrap_servers)
    assert snapshot.end_offsets == {
        p: max(r.offset for r in records if r.partition == p) + 1 for p in range(3)
    }
    ranges = plan_ranges(snapshot, 70)
    assert len(ranges) > 3 and all(r.end - r.start <= 70 for r in ranges)
    read = [row for rng in ranges for row in rows(read_range(broker.bootstrap_servers, OFFSETS_TOPIC, rng))]
    assert sorted(read) == sorted((r.partition, r.offset, r.timestamp, r.key, r.value, 1) for r in records)


def test_a_compacting_range_keeps_the_newest_record_per_key(
    seeded: tuple[SandboxBroker, list[RawRecord]],
) -> None:
    broker, records = seeded
    snapshot = take_snapshot(broker.bootstrap_servers)
    newest: dict[tuple[int, bytes], RawRecord] = {}
    for r in records:
        newest[(r.partition, r.key)] = r
    counts = Counter((r.partition, r.key) for r in records)
    read = [
        row
        for rng in plan_ranges(snapshot, 10**9)
        for row in rows(read_range(broker.bootstrap_servers, OFFSETS_TOPIC, rng, compact=True))
    ]
    assert sorted(read) == sorted(
        (r.partition, r.offset, r.timestamp, r.key, r.value, counts[slot]) for slot, r in newest.items()
    )


@pytest.mark.slow
def test_spark_reads_the_snapshot_and_nothing_after_it(
    spark: SparkSession, seeded: tuple[SandboxBroker, list[RawRecord]]
) -> None:
    broker, records = seeded
    snapshot = take_snapshot(broker.bootstrap_servers)
    broker.append_records(OFFSETS_TOPIC, 0, [(b"late", b"record", 1)])  # after the snapshot: not read
    spark.dataSource.register(KafkaSnapshotDataSource)
    frame = (
        spark.read.format(FORMAT)
        .option("bootstrap.servers", broker.bootstrap_servers)
        .option("snapshot", snapshot.to_json())
        .option("split.records", "100")
        .load()
    )
    one_per_range = (
        spark.read.format(FORMAT)
        .option("bootstrap.servers", broker.bootstrap_servers)
        .option("snapshot", snapshot.to_json())
        .option("split.records", "100")
        .option("tasks", "0")
        .load()
    )
    assert one_per_range.rdd.getNumPartitions() == len(plan_ranges(snapshot, 100))
    assert frame.rdd.getNumPartitions() == 4  # ranges packed into the default number of tasks
    got = sorted(tuple(row) for row in frame.collect())
    assert got == sorted(
        (
            r.partition,
            r.offset,
            r.timestamp,
            bytearray(r.key),
            None if r.value is None else bytearray(r.value),
            1,
        )
        for r in records
    )


def test_a_missing_topic_is_a_clear_error(seeded: tuple[SandboxBroker, list[RawRecord]]) -> None:
    broker, _ = seeded
    with pytest.raises(SourceError, match="topic no-such-topic does not exist"):
        take_snapshot(broker.bootstrap_servers, "no-such-topic")


def test_an_unreachable_broker_is_a_clear_error() -> None:
    with pytest.raises(SourceError, match=r"cannot connect to Kafka at 127\.0\.0\.1:1: .*refused"):
        describe_cluster("127.0.0.1:1")


def test_describe_cluster_reads_the_retention_and_the_topics(seeded: tuple[SandboxBroker, list[RawRecord]]) -> None:
    broker, _ = seeded
    info = describe_cluster(broker.bootstrap_servers)
    assert info.retention_ms == 3 * 86_400_000
    assert OFFSETS_TOPIC in info.topics
    assert info.check_interval_ms == 600_000  # the sandbox's offsets.retention.check.interval.ms


def test_describe_cluster_reads_the_cleanup_interval_even_with_a_given_retention() -> None:
    """Issue 11 item 5: the cleanup window comes from the broker's offsets.retention.check.interval.ms."""
    with sandbox_broker(offsets_retention_check_interval_ms=120_000) as broker:
        info = describe_cluster(broker.bootstrap_servers, want_retention=False)
    assert (info.retention_ms, info.check_interval_ms) == (None, 120_000)


@pytest.mark.slow
@pytest.mark.broker(offsets_partitions=3)
def test_spark_reads_an_empty_topic_as_no_rows(spark: SparkSession, broker: SandboxBroker) -> None:
    """A brand-new cluster: __consumer_offsets exists and is empty."""
    spark.dataSource.register(KafkaSnapshotDataSource)
    frame = spark.read.format(FORMAT).option("bootstrap.servers", broker.bootstrap_servers).load()
    assert frame.collect() == []
