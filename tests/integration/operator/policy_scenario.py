"""Shared pieces of the policy tests: a realistic scenario on the sandbox broker (made with real clients),
and a quick scan of it with the plain-Python reference analysis (the Spark job's test oracle), for tests
that exercise what happens after an analysis without paying for a Spark session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.structs import OffsetAndMetadata
from operator_kafka import empty_group, make_topics

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.model.report import Report, from_rows
from kafka_sandbox import SandboxBroker
from offset_expiry.codec import encode_key, encode_value, offset_commit
from offset_expiry.policy import parse_policy
from offset_expiry.raw import RawRecord
from offset_expiry.reference import analyze_records

DAY_MS = 86_400_000
RETENTION_MS = 7 * DAY_MS


def admin_commit(broker: SandboxBroker, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """What a standalone consumer (manual assignment, no group membership) does: an OffsetCommit with
    generation -1. On an unknown group it creates a simple group."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        answers = admin.alter_group_offsets(
            group, {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
        assert all(err.__name__ == "NoError" for err in answers.values()), answers
    finally:
        admin.close()


def committed(broker: SandboxBroker, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        raw = admin.list_group_offsets({group: None}).get(group, {})
        return {(tp.topic, tp.partition): oam.offset for tp, oam in raw.items() if oam.offset >= 0}
    finally:
        admin.close()


def empty_kip848_group(broker: SandboxBroker, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """A KIP-848 group whose members all left (state Empty), with committed offsets: the sandbox cannot
    create such groups itself, so they are seeded as the records a Kafka 4.x coordinator writes."""
    now = broker.clock.now_ms()

    def rec(name: str, value: dict[str, Any]) -> tuple[bytes, bytes | None, int]:
        return encode_key(name, {"GroupId": group}), encode_value(name, value, 0), now

    records = [rec("ConsumerGroupMetadata", {"Epoch": 4}), rec("ConsumerGroupTargetAssignmentMetadata", {"AssignmentEpoch": 4})]
    records += [(*offset_commit(group, t, p, offset=o, commit_timestamp=now), now) for (t, p), o in offsets.items()]
    broker.append_offsets_records(records)


def scan(broker: SandboxBroker, spec: Mapping[str, Any], *, now_ms: int | None = None) -> Report:
    """The reference analysis of the broker's whole __consumer_offsets, as the operator reads a report."""
    with OffsetsTopicReader(broker.bootstrap_servers) as reader:
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    report = analyze_records(records, parse_policy(spec), now_ms=now_ms or broker.clock.now_ms(),
                             retention_ms=RETENTION_MS, existing_topics=None)
    return from_rows(report["summary"], report["offsets"])


def build_scenario(broker: SandboxBroker) -> None:
    """A few realistic groups, as `kafka-offset-operator demo` shows them too. `broker` should start 30
    days in the past (Clock(start_ms=...)) so the story can unfold up to the present:

    - orders-app: a live consumer group (added by the caller while it runs), reads orders;
    - reporting-old: joined, committed orders and payments, left 10 days ago (Empty, consumer protocol);
    - nightly-export: an Empty consumer group that left 2 days ago;
    - manual-replay: a standalone (simple) group, committed 20 days ago with an admin commit;
    - billing-monthly: Empty for 5 days, protected.
    """
    make_topics(broker, {"orders": 2, "payments": 2, "invoices": 1})
    clock = broker.clock
    admin_commit(broker, "manual-replay", {("payments", 0): 2, ("payments", 1): 3})
    clock.advance(days=10)
    empty_group(broker, "reporting-old", {("orders", 0): 4, ("orders", 1): 5, ("payments", 0): 1})
    clock.advance(days=15)
    empty_group(broker, "billing-monthly", {("invoices", 0): 5})
    clock.advance(days=3)
    empty_group(broker, "nightly-export", {("orders", 0): 5, ("orders", 1): 5})
