"""Scenarios on the sandbox broker, built by real clients (kafka-python consumer groups and admin
commits) and by seeding records Kafka 4.x writes but the sandbox's coordinator does not (KIP-848 groups,
v1 offsets with an expireTimestamp, offsets left behind by a deleted topic). The broker's clock is
stopped, so every timestamp is exact. Each analysis asserts the exact verdicts and brokerExpiresAt.

The last step checks the prediction against the broker itself: after the clock passes the predicted
times and the broker's expiration task runs, exactly the offsets predicted to expire are gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from brokers import StoppedClock, sandbox_broker
from kafka import KafkaAdminClient, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka_clients import GroupConsumer
from pyspark.sql import SparkSession
from spark_pipeline import results_as_dicts
from waiting import wait_until

from kafka_offsets_model.codec import consumer_group, offset_commit
from kafka_offsets_model.policy import parse_policy
from kafka_sandbox import SandboxBroker
from offset_expiry.analysis import Analysis, AnalysisRequest, run_analysis

pytestmark = pytest.mark.slow  # Spark analyses

T0 = 1_700_000_000_000
H = 3_600_000
D = 24 * H
RETENTION = 7 * D

POLICY = parse_policy(
    {
        "groups": {"exclude": ["tmp-*"]},
        "rules": {
            "emptyGroupRetention": "3d",
            "unsubscribedTopicRetention": "1d",
            "standaloneRetention": "2d",
            "deletedTopics": "Delete",
        },
        "protect": {"groups": ["billing-*"]},
    }
)


class Scenario:
    def __init__(self, broker: SandboxBroker, clock: StoppedClock, stable: GroupConsumer) -> None:
        self.broker, self.clock, self.stable = broker, clock, stable


@pytest.fixture(scope="module")
def scenario() -> Iterator[Scenario]:
    clock = StoppedClock(T0)
    # The sandbox: exact commit and state times need a stopped clock, and the last step jumps it 7 days (Apache
    # Kafka's own expiry is checked against predictions in realkafka/test_expiry_conformance.py).
    with sandbox_broker(clock=clock) as broker:
        bootstrap = broker.bootstrap_servers
        for topic, partitions in (("orders", 2), ("payments", 1), ("audit", 1)):
            broker.create_topic(topic, partitions)

        # T0: a group commits, and its last member leaves an hour later: Empty since T0+1h (KIP-211).
        empty = GroupConsumer(bootstrap, "empty-group", ["orders"])
        wait_until(lambda: len(empty.assignment) == 2, what="empty-group's assignment")
        empty.commit({("orders", 0): 10, ("orders", 1): 11})
        clock.advance(hours=1)
        empty.close()

        # T0+1h: a monthly job commits and leaves at T0+2h; the policy protects it.
        monthly = GroupConsumer(bootstrap, "billing-monthly", ["payments"])
        wait_until(lambda: len(monthly.assignment) == 1, what="billing-monthly's assignment")
        monthly.commit({("payments", 0): 4})
        clock.advance(hours=1)
        monthly.close()

        # T0+2h: admin commits to unknown groups create simple (standalone) groups.
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            for group, tp, offset in (("standalone", ("orders", 0), 3), ("tmp-scratch", ("audit", 0), 1)):
                done = admin.alter_group_offsets(
                    group, {TopicPartition(*tp): OffsetAndMetadata(offset, "", -1)}
                )
                assert all(error is None or getattr(error, "errno", 0) == 0 for error in done.values()), done
        finally:
            admin.close()

        # Records a Kafka 4.x cluster may hold that the sandbox's coordinator does not write itself.
        broker.append_offsets_records(
            [
                # OffsetCommit v2-v4 with a retention time (before Kafka 4.0): value v1, expireTimestamp.
                (
                    *offset_commit(
                        "legacy-v1",
                        "orders",
                        1,
                        offset=7,
                        commit_timestamp=T0 - 10 * D,
                        expire_timestamp=T0 + D,
                    ),
                    T0,
                ),
                # An offset of a topic that no longer exists (left behind by an older broker).
                (*offset_commit("left-behind", "gone", 0, offset=9, commit_timestamp=T0 + 2 * H), T0),
                # A Stable KIP-848 group: m1 subscribes to orders by name, m2 by the regex pay.* (resolved).
                *[
                    (key, value, T0)
                    for key, value in consumer_group(
                        "kip848-app",
                        {"m1": (["orders"], None), "m2": ([], "pay.*")},
                        {"pay.*": ["payments"]},
                        epoch=4,
                        resolved_at=T0,
                    )
                ],
                *[
                    (*offset_commit("kip848-app", t, 0, offset=5, commit_timestamp=T0 - 3 * D), T0)
                    for t in ("orders", "payments", "audit")
                ],
            ]
        )

        # T0+3h: a live group subscribed to orders still has an offset of payments (KIP-496).
        clock.advance(hours=1)
        stable = GroupConsumer(bootstrap, "stable-dropped", ["orders"])
        wait_until(lambda: len(stable.assignment) == 2, what="stable-dropped's assignment")
        stable.commit({("orders", 0): 20, ("payments", 0): 21})
        try:
            yield Scenario(broker, clock, stable)
        finally:
            stable.close()


def analyze(
    spark: SparkSession, scenario: Scenario, now_ms: int
) -> tuple[Analysis, dict[tuple[str, str, int], tuple[Any, ...]]]:
    request = AnalysisRequest(scenario.broker.bootstrap_servers, POLICY, now_ms=now_ms)
    analysis = run_analysis(spark, request)
    results = {
        (r["group"], r["topic"], r["partition"]): (
            r["groupType"],
            r["groupState"],
            r["protocolType"],
            r["brokerExpiresAt"],
            r["candidate"],
            r["reason"],
        )
        for r in results_as_dicts(analysis.report["offsets"])
    }
    return analysis, results


EMPTY = ("classic", "Empty", "consumer")
SIMPLE = ("classic", "Empty", "")
STABLE = ("classic", "Stable", "consumer")
KIP848 = ("consumer", "Stable", "consumer")


def test_now_after_the_last_commit(spark: SparkSession, scenario: Scenario) -> None:
    now = scenario.clock.now_ms()
    assert now == T0 + 3 * H
    analysis, results = analyze(spark, scenario, now)
    assert analysis.retention_ms == RETENTION  # read from the broker with DescribeConfigs
    assert results == {
        ("empty-group", "orders", 0): (*EMPTY, T0 + H + RETENTION, False, "WithinRetention"),
        ("empty-group", "orders", 1): (*EMPTY, T0 + H + RETENTION, False, "WithinRetention"),
        ("billing-monthly", "payments", 0): (*EMPTY, T0 + 2 * H + RETENTION, False, "Protected"),
        ("standalone", "orders", 0): (*SIMPLE, T0 + 2 * H + RETENTION, False, "WithinRetention"),
        ("tmp-scratch", "audit", 0): (*SIMPLE, T0 + 2 * H + RETENTION, False, "Excluded"),
        ("legacy-v1", "orders", 1): (*SIMPLE, T0 + D, False, "WithinRetention"),
        ("left-behind", "gone", 0): (*SIMPLE, T0 + 2 * H + RETENTION, True, "DeletedTopic"),
        ("kip848-app", "orders", 0): (*KIP848, None, False, "ActiveSubscription"),
        ("kip848-app", "payments", 0): (*KIP848, None, False, "ActiveSubscription"),
        ("kip848-app", "audit", 0): (*KIP848, T0 - 3 * D + RETENTION, True, "UnsubscribedTopic"),
        ("stable-dropped", "orders", 0): (*STABLE, None, False, "ActiveSubscription"),
        ("stable-dropped", "payments", 0): (*STABLE, T0 + 3 * H + RETENTION, False, "WithinRetention"),
    }
    summary = analysis.report["summary"]
    assert (summary["groups"], summary["offsets"], summary["candidates"], summary["skippedRecords"]) == (
        8,
        12,
        2,
        0,
    )


def test_four_days_later(spark: SparkSession, scenario: Scenario) -> None:
    _, results = analyze(spark, scenario, T0 + 4 * D)
    candidates = {key: value[-1] for key, value in results.items() if value[-2]}
    assert candidates == {
        ("empty-group", "orders", 0): "EmptyGroup",
        ("empty-group", "orders", 1): "EmptyGroup",
        ("standalone", "orders", 0): "Standalone",
        ("legacy-v1", "orders", 1): "ExpireTimestamp",
        ("left-behind", "gone", 0): "DeletedTopic",
        ("kip848-app", "audit", 0): "UnsubscribedTopic",
        ("stable-dropped", "payments", 0): "UnsubscribedTopic",
    }


def test_the_broker_expires_what_was_predicted(spark: SparkSession, scenario: Scenario) -> None:
    _, before = analyze(spark, scenario, scenario.clock.now_ms())
    scenario.clock.advance(days=6, hours=23, minutes=30)
    now = scenario.clock.now_ms()
    assert (
        now == T0 + 7 * D + 2 * H + 30 * 60_000
    )  # past every Empty and simple group's expiry, before KIP-496's
    scenario.broker.expire_offsets()
    predicted_to_stay = {key for key, value in before.items() if value[3] is None or value[3] > now}
    assert predicted_to_stay == {
        ("kip848-app", "orders", 0),
        ("kip848-app", "payments", 0),
        ("stable-dropped", "orders", 0),
        ("stable-dropped", "payments", 0),
    }
    wait_until(lambda: scenario.stable.assignment, what="stable-dropped to stay a member")
    _, after = analyze(spark, scenario, now)
    assert set(after) == predicted_to_stay
