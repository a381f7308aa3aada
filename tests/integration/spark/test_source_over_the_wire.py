"""The snapshot reader (source.read_frame, source.read_task) against Apache Kafka over TCP (the `seeded_kafka` fixture's `__consumer_offsets`,
tests/support/seeded_kafka.py): every record of the snapshot exactly once (whole partitions and split offset
ranges, compacting or not), nothing appended after the snapshot, and clear errors for a missing topic or an
unreachable broker."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pytest
from kafka_under_test import Kafka
from offsets_seeding import seed
from pyspark.sql import SparkSession
from seeded_kafka import CHECK_INTERVAL_MS, EMPTY, OFFSETS_PARTITIONS, RETENTION_MS, Seeded

from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from offset_expiry.cluster import describe_cluster
from offset_expiry.source import ReadTask, SourceError, plan_ranges, read_frame, read_task, take_snapshot


def rows(batches: Iterator[pa.RecordBatch]) -> list[tuple[int, int, int, bytes, bytes | None, int]]:
    out = []
    for batch in batches:
        d = batch.to_pydict()
        out += list(
            zip(d["partition"], d["offset"], d["timestamp"], d["key"], d["value"], d["records"], strict=True)
        )
    return out


@pytest.mark.slow  # several seconds of Fetch requests
def test_ranges_read_every_record_once(seeded_kafka: Seeded) -> None:
    broker, records = seeded_kafka, seeded_kafka.records
    snapshot = take_snapshot(broker.bootstrap_servers)
    assert snapshot.end_offsets == seeded_kafka.end_offsets(records)
    ranges = plan_ranges(snapshot, 70)
    assert len(ranges) > 3 and all(r.end - r.start <= 70 for r in ranges)
    read = [row for rng in ranges for row in rows(read_task(broker.bootstrap_servers, OFFSETS_TOPIC, ReadTask((rng,))))]
    assert sorted(read) == sorted((r.partition, r.offset, r.timestamp, r.key, r.value, 1) for r in records)


def test_a_compacting_range_keeps_the_newest_record_per_key(seeded_kafka: Seeded) -> None:
    broker, records = seeded_kafka, seeded_kafka.records
    snapshot = take_snapshot(broker.bootstrap_servers)
    newest: dict[tuple[int, bytes], RawRecord] = {}
    for r in records:
        newest[(r.partition, r.key)] = r
    counts = Counter((r.partition, r.key) for r in records)
    read = [
        row
        for rng in plan_ranges(snapshot, 10**9)
        for row in rows(read_task(broker.bootstrap_servers, OFFSETS_TOPIC, ReadTask((rng,)), compact=True))
    ]
    assert sorted(read) == sorted(
        (r.partition, r.offset, r.timestamp, r.key, r.value, counts[slot]) for slot, r in newest.items()
    )


@pytest.mark.slow
def test_spark_reads_the_snapshot_and_nothing_after_it(
    spark: SparkSession, seeded_kafka: Seeded, kafka: Kafka
) -> None:
    """On a copy of the seeded records in the session's broker (the `kafka` fixture deletes it after the test):
    the seeded broker stays as seeded for the other Spark tests."""
    topic = "copy-of-offsets"
    kafka.create_topic(topic, OFFSETS_PARTITIONS)
    records = seed(kafka, topic, seeded_kafka.records)
    snapshot = take_snapshot(kafka.bootstrap_servers, topic)
    kafka.append_records(topic, 0, [(b"late", b"record", 1)])  # after the snapshot: not read
    frame = read_frame(spark, kafka.bootstrap_servers, snapshot, topic=topic, split_records=100)
    one_per_range = read_frame(spark, kafka.bootstrap_servers, snapshot, topic=topic, split_records=100, tasks=0)
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


def test_a_missing_topic_is_a_clear_error(seeded_kafka: Seeded) -> None:
    with pytest.raises(SourceError, match="topic no-such-topic does not exist"):
        take_snapshot(seeded_kafka.bootstrap_servers, "no-such-topic")


def test_an_unreachable_broker_is_a_clear_error() -> None:
    with pytest.raises(SourceError, match=r"cannot connect to Kafka at 127\.0\.0\.1:1: .*refused"):
        describe_cluster("127.0.0.1:1")


def test_describe_cluster_reads_the_retention_and_the_topics(seeded_kafka: Seeded) -> None:
    info = describe_cluster(seeded_kafka.bootstrap_servers)
    assert info.retention_ms == RETENTION_MS  # the broker's offsets.retention.minutes
    assert OFFSETS_TOPIC in info.topics
    assert info.check_interval_ms == CHECK_INTERVAL_MS  # its offsets.retention.check.interval.ms


def test_describe_cluster_reads_the_cleanup_interval_even_with_a_given_retention(seeded_kafka: Seeded) -> None:
    """Issue 11 item 5: the cleanup window comes from the broker's offsets.retention.check.interval.ms."""
    info = describe_cluster(seeded_kafka.bootstrap_servers, want_retention=False)
    assert (info.retention_ms, info.check_interval_ms) == (None, CHECK_INTERVAL_MS)


@pytest.mark.slow
def test_spark_reads_an_empty_topic_as_no_rows(spark: SparkSession, seeded_kafka: Seeded) -> None:
    """A brand-new cluster's __consumer_offsets: it exists and is empty (an empty copy of it)."""
    bootstrap = seeded_kafka.bootstrap_servers
    frame = read_frame(spark, bootstrap, take_snapshot(bootstrap, EMPTY), topic=EMPTY)
    assert frame.collect() == []
