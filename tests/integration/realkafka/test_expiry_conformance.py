"""The analysis's expiry predictions against the broker that makes them true (issue 19): Apache Kafka with
`offsets.retention.minutes=1` and `offsets.retention.check.interval.ms=1000` (its own broker, started for
this module), the cases seeded at once, the reference analysis (offset_expiry.reference, the oracle the
Spark pipeline must agree with) run over Kafka's own `__consumer_offsets`, then OffsetFetch every 250 ms until
each offset predicted to expire is gone. Every removal must come within one check interval plus a stated
slack of its prediction, and no offset predicted to stay may disappear.

Cases: a classic group Stable then Empty; a simple group (admin commits); a simple group that re-commits
the same offset later; a KIP-848 group emptied (Kafka's Java consumer, group.protocol=consumer); a classic
group with a live member (predicted to stay). The sandbox's own expiry tests (integration/sandbox/
test_groups_expiration.py) move its clock; this module runs on Apache Kafka only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from brokers import make_topics
from java_clients import JavaConsumer
from kafka_clients import admin_commit, committed, empty_group
from kafka_under_test import Kafka, clean_after
from real_kafka import RealKafka, Unavailable, missing_tools
from waiting import wait_until

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from offset_expiry.policy import parse_policy
from offset_expiry.raw import RawRecord
from offset_expiry.reference import analyze_records

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


def test_each_offset_disappears_when_the_analysis_said_it_would(expiring: Kafka) -> None:
    kafka = expiring
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "classic-emptied", {("orders", 0): 1})
    admin_commit(kafka.bootstrap_servers, "simple", {("orders", 0): 2, ("orders", 1): 2})
    admin_commit(kafka.bootstrap_servers, "simple-recommit", {("orders", 0): 3})
    with JavaConsumer(kafka.bootstrap_servers, "kip848-emptied", ["orders"], protocol="consumer",
                      version=kafka.version) as modern:
        modern.wait_assigned(2)
        modern.commit({("orders", 1): 4})
    with JavaConsumer(kafka.bootstrap_servers, "classic-live", ["orders"], version=kafka.version) as live:
        live.wait_assigned(2)
        live.commit({("orders", 0): 5})
        # The same offset again, 10 s later: a simple group's offset expires from its newest commit.
        then = time.time()
        wait_until(lambda: time.time() > then + 10, 15, "10 s to pass before the re-commit")
        admin_commit(kafka.bootstrap_servers, "simple-recommit", {("orders", 0): 3})

        predicted = predictions(kafka)
        expected = {k: r["brokerExpiresAt"] for k, r in predicted.items() if r["brokerExpiresAt"] is not None}
        groups = sorted({g for g, _, _ in predicted})
        assert set(groups) >= {"classic-emptied", "simple", "simple-recommit", "kip848-emptied", "classic-live"}
        assert all(g != "classic-live" for g, _, _ in expected), predicted  # a live member's offsets stay
        assert {g for g, _, _ in expected} == {"classic-emptied", "simple", "simple-recommit", "kip848-emptied"}

        observed: dict[tuple[str, str, int], int] = {}
        deadline = max(expected.values()) / 1000 + (CHECK_INTERVAL_MS + SLACK_MS) / 1000 + 5
        present = {g: committed(kafka.bootstrap_servers, g) for g in groups}
        while len(observed) < len(expected) and time.time() < deadline:
            now_ms = int(time.time() * 1000)
            for g in groups:
                current = committed(kafka.bootstrap_servers, g)
                for (topic, partition) in set(present[g]) - set(current):
                    observed.setdefault((g, topic, partition), now_ms)
                present[g] = current
            time.sleep(POLL_S)  # OffsetFetch every 250 ms: the cadence of the observation, the deadline decides
        gone_unpredicted = {k for k in observed if k not in expected}
        assert not gone_unpredicted, f"removed though predicted to stay: {gone_unpredicted}"
        assert committed(kafka.bootstrap_servers, "classic-live") == {("orders", 0): 5}
    report = {k: (observed.get(k, 0) - expected[k]) for k in expected}
    print("observed minus predicted removal (ms):", {f"{g}/{t}-{p}": d for (g, t, p), d in sorted(report.items())})
    late_or_missing = {k: d for k, d in report.items() if k not in observed or abs(d) > CHECK_INTERVAL_MS + SLACK_MS}
    assert not late_or_missing, f"observed minus predicted (ms): {report}"
