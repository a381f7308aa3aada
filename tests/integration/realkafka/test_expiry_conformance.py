"""The analysis's expiry predictions against the broker that makes them true (issue 19): Apache Kafka with
`offsets.retention.minutes=1` and `offsets.retention.check.interval.ms=1000` (its own broker, started for
this module), the cases seeded at once, the reference analysis (analysis_reference, the oracle the
Spark pipeline must agree with) run over Kafka's own `__consumer_offsets`, then OffsetFetch every 250 ms until
each offset predicted to expire is gone. Every removal must come within one check interval plus a stated
slack of its prediction, and no offset predicted to stay may disappear.

Cases (`CASES`): a classic group Stable then Empty; a simple group (admin commits); a simple group that
re-commits the same offset later; a KIP-848 group emptied (Kafka's Java consumer, group.protocol=consumer); a
classic group with a live member (predicted to stay) that also committed a topic it does not subscribe to
(KIP-496: that one expires from its commit while the group is Stable); the same with a live KIP-848 member; a
static member (group.instance.id) that closed: no LeaveGroup, the group stays Stable until its session times
out, then Empty, and its offsets expire from then; a deleted topic (the coordinator tombstones its offsets at
DeleteTopics, so they are gone before the analysis reads the log and it predicts nothing for them); a Kafka
Streams application (the streams rebalance protocol from 4.2, classic before) whose group also holds an offset
of a topic outside its topology (expires from its commit while the application runs; its source and
repartition topics stay); a share group (4.1+: no committed offsets, so nothing for the analysis to predict
and nothing to remove). The sandbox's own expiry tests (integration/sandbox/test_groups_expiration.py) move
its clock; test_expiry_conformance_sandbox.py plays the cases the sandbox can host there."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from analysis_reference import analyze_records
from brokers import make_topics
from java_clients import JavaConsumer, JavaShareConsumer, JavaStreams
from kafka import KafkaAdminClient
from kafka_clients import admin_commit, committed, empty_group
from kafka_under_test import Kafka, clean_after
from real_kafka import RealKafka, Unavailable, missing_tools
from waiting import wait_until

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord

pytestmark = [pytest.mark.slow, pytest.mark.conformance]

RETENTION_MS = 60_000
CHECK_INTERVAL_MS = 1_000
POLL_S = 0.25
# The expiration task runs every check interval; a loaded 2-core machine delays it and the OffsetFetch that
# sees the result. Slack on top of one interval and one poll:
SLACK_MS = 3_000


@pytest.fixture(scope="module")
def expiring(real_kafka: Kafka, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kafka]:
    """A broker of the session's version whose offsets expire a minute after they may."""
    if not real_kafka.is_real:
        pytest.skip("the sandbox's expiry runs on its own clock: integration/sandbox/test_groups_expiration.py")
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    broker = RealKafka(real_kafka.version, workdir=tmp_path_factory.mktemp("expiring"), settings={
        "offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": str(CHECK_INTERVAL_MS)})
    try:
        broker.start()
    except Unavailable as exc:
        pytest.skip(str(exc))
    try:
        with clean_after(Kafka.of_real(broker)) as kafka:
            yield kafka
    finally:
        broker.stop()


def predictions(kafka: Kafka) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The reference analysis of the whole __consumer_offsets: (group, topic, partition) -> its result."""
    with OffsetsTopicReader(kafka.bootstrap_servers) as reader:
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    report = analyze_records(records, parse_policy({}), now_ms=int(time.time() * 1000), retention_ms=RETENTION_MS,
                             existing_topics=None)
    return {(r["group"], r["topic"], r["partition"]): r for r in report["offsets"]}


def minor(version: str) -> tuple[int, int]:
    major, minor_ = version.split(".")[:2]
    return int(major), int(minor_)


def group_state(kafka: Kafka, group: str) -> str:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        return str(admin.describe_groups([group])[group]["group_state"])
    finally:
        admin.close()


def delete_topic(kafka: Kafka, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        admin.delete_topics([topic])
        wait_until(lambda: topic not in admin.list_topics(), 30, f"topic {topic} to be deleted")
    finally:
        admin.close()


def test_each_offset_disappears_when_the_analysis_said_it_would(expiring: Kafka, tmp_path: Path) -> None:
    kafka = expiring
    bootstrap = kafka.bootstrap_servers
    # 4.1's streams protocol (early access) refuses to join a group that exists as a classic one ("Group … is not
    # a streams group.", GroupIdNotFoundException); from 4.2 the first streams join converts an empty classic
    # group. This case starts from an admin commit (a simple group), so on 4.1 it runs Streams on classic.
    streams_protocol = "streams" if minor(kafka.version) >= (4, 2) else "classic"
    has_share = minor(kafka.version) >= (4, 1)
    make_topics(kafka, {"orders": 2, "other": 1, "doomed": 1, "words": 2, "old": 1, "jobs": 1})
    with ExitStack() as live:
        # Every case must be seeded within the minute of retention after the first commit (the watch must begin
        # before the first predicted removal), so every JVM starts and joins first, and the commits follow.
        streams = live.enter_context(JavaStreams(bootstrap, "streams-app", ["words"], tmp_path / "state",
                                                 protocol=streams_protocol, version=kafka.version, start=False))
        modern = live.enter_context(JavaConsumer(bootstrap, "kip848-emptied", ["orders"], protocol="consumer",
                                                 version=kafka.version))
        # A static member: close() sends no LeaveGroup (KIP-345); it stays until its session (10 s) times out.
        static = live.enter_context(JavaConsumer(bootstrap, "static-left", ["orders"], version=kafka.version,
                                                 config={"group.instance.id": "static-a"}))
        classic = live.enter_context(JavaConsumer(bootstrap, "classic-live", ["orders"], version=kafka.version))
        modern_live = live.enter_context(JavaConsumer(bootstrap, "kip848-live", ["orders"], protocol="consumer",
                                                      version=kafka.version))
        share = (live.enter_context(JavaShareConsumer(bootstrap, "share-workers", ["jobs"], version=kafka.version))
                 if has_share else None)
        for consumer in (modern, static, classic, modern_live):
            consumer.wait_assigned(2, timeout=180)
        if share is not None:
            share.wait_received(5, timeout=180)
        streams.wait_ready()

        # The commits, from here within the minute. The Streams application's group first holds an offset of a
        # topic it never reads (an admin commit makes a simple group, which the application's first join turns
        # into its own: GroupMetadataManager converts an empty classic group).
        admin_commit(bootstrap, "streams-app", {("old", 0): 1})
        streams.start()
        empty_group(bootstrap, "classic-emptied", {("orders", 0): 1})
        admin_commit(bootstrap, "simple", {("orders", 0): 2, ("orders", 1): 2})
        admin_commit(bootstrap, "simple-recommit", {("orders", 0): 3})
        recommit_after = time.time() + 10
        admin_commit(bootstrap, "deleted-topic", {("doomed", 0): 1, ("orders", 1): 1})
        modern.commit({("orders", 1): 4})
        modern.close()
        static.commit({("orders", 0): 6})
        static.close()
        assert group_state(kafka, "static-left") == "Stable"
        classic.commit({("orders", 0): 5, ("other", 0): 2})  # KIP-496: `other` is not subscribed
        modern_live.commit({("orders", 1): 5, ("other", 0): 3})
        streams.wait_state("RUNNING")
        wait_until(lambda: {tp for tp in committed(bootstrap, "streams-app") if tp[0] == "words"} == {("words", 0), ("words", 1)},
                   90, "the Streams application to commit its source topic")
        delete_topic(kafka, "doomed")
        wait_until(lambda: ("doomed", 0) not in committed(bootstrap, "deleted-topic"), 30,
                   "the coordinator to drop the deleted topic's offsets")
        # The same offset again, 10 s after the first commit: a simple group's offset expires from its newest commit.
        wait_until(lambda: time.time() > recommit_after, 15, "10 s to pass before the re-commit")
        admin_commit(bootstrap, "simple-recommit", {("orders", 0): 3})
        wait_until(lambda: group_state(kafka, "static-left") == "Empty", 30, "the static member's session to time out")

        predicted = predictions(kafka)
        expected = {k: r["brokerExpiresAt"] for k, r in predicted.items() if r["brokerExpiresAt"] is not None}
        stays = {k for k in predicted if k not in expected}
        streams_topics = {t for g, t, _ in predicted if g == "streams-app"}
        repartition = {t for t in streams_topics if t.endswith("-repartition")}
        assert repartition, predicted  # the count's subtopology reads it: Streams commits it
        assert set(expected) == {
            ("classic-emptied", "orders", 0), ("simple", "orders", 0), ("simple", "orders", 1),
            ("simple-recommit", "orders", 0), ("kip848-emptied", "orders", 1), ("static-left", "orders", 0),
            ("deleted-topic", "orders", 1), ("classic-live", "other", 0), ("kip848-live", "other", 0),
            ("streams-app", "old", 0),
        }, predicted
        assert stays == {
            ("classic-live", "orders", 0), ("kip848-live", "orders", 1),
            *{("streams-app", t, p) for t in {"words", *repartition} for p in (0, 1)
              if ("streams-app", t, p) in predicted},
        }, predicted
        assert {("streams-app", "words", 0), ("streams-app", "words", 1)} <= stays
        # The deleted topic's offsets: tombstoned at DeleteTopics (OffsetMetadataManager.onPartitionsDeleted),
        # so the analysis has nothing to predict for them. A share group commits nothing: nothing either.
        assert not any(t == "doomed" for _, t, _ in predicted), predicted
        assert not any(g == "share-workers" for g, _, _ in predicted), predicted
        if has_share:
            assert committed(bootstrap, "share-workers") == {}

        groups = sorted({g for g, _, _ in predicted})
        observed: dict[tuple[str, str, int], int] = {}
        deadline = max(expected.values()) / 1000 + (CHECK_INTERVAL_MS + SLACK_MS) / 1000 + 5
        present = {g: committed(bootstrap, g) for g in groups}
        gone_already = {(g, t, p) for g, t, p in predicted if (t, p) not in present[g]}
        assert not gone_already, (f"seeding took longer than the retention: {gone_already} went before the watch "
                                  f"began (predicted {[expected.get(k) for k in gone_already]}, now {time.time():.0f})")
        while len(observed) < len(expected) and time.time() < deadline:
            for g in groups:
                current = committed(bootstrap, g)
                now_ms = int(time.time() * 1000)  # after the answer: the removal was at or before it
                for (topic, partition) in set(present[g]) - set(current):
                    observed.setdefault((g, topic, partition), now_ms)
                present[g] = current
            time.sleep(POLL_S)  # OffsetFetch every 250 ms: the cadence of the observation, the deadline decides
        gone_unpredicted = {k for k in observed if k not in expected}
        assert not gone_unpredicted, f"removed though predicted to stay: {gone_unpredicted}"
        for g, t, p in stays:
            assert (t, p) in committed(bootstrap, g), f"{g} {t}-{p} was predicted to stay"
        if has_share:
            assert committed(bootstrap, "share-workers") == {}
    report = {k: (observed.get(k, 0) - expected[k]) for k in expected}
    print(f"Kafka {kafka.version}: observed minus predicted removal (ms):",
          {f"{g}/{t}-{p}": d for (g, t, p), d in sorted(report.items())})
    late_or_missing = {k: d for k, d in report.items() if k not in observed or abs(d) > CHECK_INTERVAL_MS + SLACK_MS}
    assert not late_or_missing, f"observed minus predicted (ms): {report}"
