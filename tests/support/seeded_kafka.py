"""The Spark suites' Apache Kafka: one broker per test module, its `__consumer_offsets` seeded
with every kind of record the codec knows (kafka_sandbox.synthetic: classic, simple, KIP-848, streams and share
groups, v0-v4 values, tombstones, corrupt records) through Kafka's produce path (offsets_seeding), then only
read. Its own broker, not the session's shared `real_kafka`: the job and the CLI read all of `__consumer_offsets`,
which on the shared broker holds whatever groups the worker's earlier tests made (the reports would depend on
the order of files), and the seeded groups, which Kafka's coordinator never loads, would stay in every later
test's analysis. A module's, not the session's: a start and the seeding cost about 7 CPU-seconds (12 s of wall at a
load of 6 on 2 cores), while an idle broker costs 1-2 CPU-seconds a minute, which a session's broker would pay
through the rest of the worker's tier once its few Spark modules are done.

KOO_KAFKA_VERSIONS picks the version (its first); `sandbox` seeds a sandbox broker instead. The fixture is
registered for the Spark suites by tests/integration/spark/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from brokers import sandbox_broker
from kafka import KafkaAdminClient
from kafka_under_test import Kafka
from offsets_seeding import seed
from real_kafka import SMALL_JVM, RealKafka, Unavailable, missing_tools, versions_under_test

from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from kafka_sandbox.synthetic import DAY_MS, generate

NOW_MS = 1_700_000_000_000
OFFSETS_PARTITIONS = 4
RETENTION_MS = 5 * DAY_MS  # offsets.retention.minutes
CHECK_INTERVAL_MS = 120_000  # offsets.retention.check.interval.ms (Kafka's default is 600,000)
MOVED = "moved-offsets"  # a copy of __consumer_offsets whose partition count went from 3 to 5
EMPTY = "empty-offsets"  # a brand-new cluster's __consumer_offsets: no record


@dataclass(frozen=True)
class Seeded:
    """The seeded broker and what it holds, each record with the offset Kafka gave it."""

    kafka: Kafka
    records: list[RawRecord]  # __consumer_offsets
    moved: list[RawRecord]  # MOVED: the groups' older records at their home among 3 partitions, newer among 5

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    def topics(self) -> set[str]:
        """The topics the broker has (its metadata), as the analysis sees them."""
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        try:
            return set(admin.list_topics())
        finally:
            admin.close()

    def end_offsets(self, records: list[RawRecord]) -> dict[int, int]:
        """Each partition's log end offset (nothing was written after `records`)."""
        return {p: max(r.offset for r in records if r.partition == p) + 1 for p in {r.partition for r in records}}


@pytest.fixture(scope="module")
def seeded_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    version = versions_under_test()[0]
    if version == "sandbox":
        with sandbox_broker(offsets_retention="5d", offsets_partitions=OFFSETS_PARTITIONS,
                            offsets_retention_check_interval_ms=CHECK_INTERVAL_MS) as sandbox:
            yield _seeded(Kafka.of_sandbox(sandbox))
        return
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    settings = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                "offsets.retention.minutes": str(RETENTION_MS // 60_000),
                "offsets.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
                # No no-op record in the metadata log every 500 ms (QuorumController's idle writes): an idle
                # broker took 2.9 instead of 4.3 CPU-s in 2 minutes.
                "metadata.max.idle.interval.ms": "0"}
    # C1 only and the serial collector, as the suite's Spark drivers (tests/conftest.py): a small, short-lived
    # broker; its start took 4.8 instead of 9.2 CPU-s and the seeding 1.9 instead of 4.1 (load 6).
    broker = RealKafka(version, settings=settings, workdir=tmp_path_factory.mktemp("seeded-kafka"), heap="256m",
                       jvm_options=SMALL_JVM)
    try:
        broker.start()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        yield _seeded(Kafka.of_real(broker))
    finally:
        broker.stop()


def _seeded(kafka: Kafka) -> Seeded:
    offsets = generate(2222, groups=120, partitions=OFFSETS_PARTITIONS, commits=2, corrupt_fraction=0.02,
                       now_ms=NOW_MS)
    before = generate(1314, groups=40, partitions=3, commits=2, now_ms=NOW_MS - DAY_MS)
    after = generate(1315, groups=40, partitions=5, commits=2, now_ms=NOW_MS)
    for name in sorted(offsets.existing_topics | before.existing_topics | after.existing_topics):
        kafka.create_topic(name, 1)
    kafka.create_topic(MOVED, 5)
    kafka.create_topic(EMPTY, OFFSETS_PARTITIONS)
    records = seed(kafka, OFFSETS_TOPIC, offsets.records)
    # The same group names before and after the change: each group's older records stay at its home among 3
    # partitions, its newer ones go to its home among 5.
    moved = seed(kafka, MOVED, before.records) + seed(kafka, MOVED, after.records)
    return Seeded(kafka, records, moved)
