"""KafkaAdmin's ListOffsets and topic partitions, and a reset's plan read over the wire from Apache Kafka
(the session's broker, `kafka`): records produced with the CreateTime each case needs, the log start moved
by DeleteRecords as retention would move it."""

from __future__ import annotations

import pytest
from brokers import make_topics
from kafka_clients import admin_commit
from kafka_under_test import Kafka

from kafka_offset_operator.adapters.kafka_admin import UNKNOWN_OFFSET, KafkaAdmin
from kafka_offset_operator.decisions.reset_plan import LogRange, ResetRefused, parse_scope, parse_target
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.offsets import KafkaFailure
from kafka_offset_operator.reconcilers.reset_reads import read_plan

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z (the session's broker keeps old records: no time retention)


def stamped(kafka: Kafka, topic: str, partition: int, timestamps: list[int]) -> None:
    kafka.append_records(topic, partition, [(None, f"r{i}".encode(), ts) for i, ts in enumerate(timestamps)])


def test_list_offsets_earliest_latest_and_by_timestamp(kafka: Kafka) -> None:
    kafka.create_topic("clicks", 2)
    stamped(kafka, "clicks", 0, [T0, T0 + 1000, T0 + 2000, T0 + 3000])
    kafka.delete_records_before("clicks", 0, 1)
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        assert admin.topic_partitions(["clicks", "nosuch"]) == {"clicks": [0, 1]}
        assert admin.topic_partitions([]) == {}
        tps = [("clicks", 0), ("clicks", 1)]
        assert admin.list_offsets(tps, "earliest") == {("clicks", 0): 1, ("clicks", 1): 0}
        assert admin.list_offsets(tps, "latest") == {("clicks", 0): 4, ("clicks", 1): 0}
        assert admin.list_offsets(tps, T0 + 1500) == {("clicks", 0): 2, ("clicks", 1): UNKNOWN_OFFSET}
        assert admin.list_offsets(tps, T0 + 3001) == {("clicks", 0): UNKNOWN_OFFSET, ("clicks", 1): UNKNOWN_OFFSET}
        assert admin.list_offsets([], "latest") == {}
        assert admin.log_ranges([*tps, ("clicks", 9), ("nosuch", 0)]) == {
            ("clicks", 0): LogRange(1, 4), ("clicks", 1): LogRange(0, 0)}
        with pytest.raises(KafkaFailure) as err:
            admin.list_offsets([("clicks", 9)], "latest")
        assert err.value.code == "UNKNOWN_TOPIC_OR_PARTITION"
        with pytest.raises(ValueError):
            admin.list_offsets(tps, "soon")


def test_read_plan_over_the_wire(kafka: Kafka) -> None:
    kafka.create_topic("orders", 2)
    stamped(kafka, "orders", 0, [T0 + i * 1000 for i in range(10)])
    stamped(kafka, "orders", 1, [T0 + i * 1000 for i in range(4)])
    kafka.delete_records_before("orders", 0, 2)
    admin_commit(kafka.bootstrap_servers, "billing", {("orders", 0): 5, ("orders", 1): 1})
    admin_commit(kafka.bootstrap_servers, "other", {("orders", 0): 0, ("orders", 1): 3})
    every = parse_scope({"allTopics": True})
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        def plan(target: dict[str, object], scope: dict[str, object] | None = None, now_ms: int = T0) -> dict[tuple[str, int], int | None]:
            got = read_plan(admin, "billing", parse_target(target), parse_scope(scope) if scope else every, now_ms)
            return {r.tp: r.new for r in got.rows}

        assert plan({"earliest": True}) == {("orders", 0): 2, ("orders", 1): 0}
        assert plan({"latest": True}) == {("orders", 0): 10, ("orders", 1): 4}
        assert plan({"offset": 7}) == {("orders", 0): 7, ("orders", 1): 4}
        assert plan({"shiftBy": -4}) == {("orders", 0): 2, ("orders", 1): 0}
        assert plan({"datetime": "2026-01-01T00:00:06Z"}) == {("orders", 0): 6, ("orders", 1): 4}
        assert plan({"duration": "3s"}, now_ms=T0 + 5000) == {("orders", 0): 2, ("orders", 1): 2}
        assert plan({"fromGroup": "other"}) == {("orders", 0): 2, ("orders", 1): 3}
        assert plan({"earliest": True}, {"topics": [{"name": "orders", "partitions": [1]}]}) == {("orders", 1): 0}
        assert plan({"latest": True}, {"topics": [{"name": "orders"}]}) == {("orders", 0): 10, ("orders", 1): 4}
        with pytest.raises(ResetRefused, match="topic gone does not exist"):
            plan({"latest": True}, {"topics": [{"name": "gone"}]})
        missing = read_plan(admin, "billing", parse_target({"latest": True}),
                            parse_scope({"topics": [{"name": "orders", "partitions": [0, 5]}]}), T0)
        assert missing.refusal == "orders-5: the partition does not exist (UNKNOWN_TOPIC_OR_PARTITION)"


def test_topic_partitions_of_a_topic_without_records(kafka: Kafka) -> None:
    make_topics(kafka, {"empty": 3}, records_per_partition=0)
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        assert admin.topic_partitions(["empty"]) == {"empty": [0, 1, 2]}
        assert admin.log_ranges([("empty", 2)]) == {("empty", 2): LogRange(0, 0)}
