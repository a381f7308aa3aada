"""The Spark pipeline agrees with the plain-Python reference record for record, on seeded random topics
with every record kind (offset values v0-v4, key type 0, classic, simple, KIP-848 and streams groups,
tombstones, corrupt records) under policies that exercise every rule. No broker: the records reach Spark from
memory (spark_pipeline.raw_frame); reading them from Kafka is test_source_over_the_wire.py's part."""

from __future__ import annotations

import random
from typing import Any

import pytest
from analysis_reference import analyze_records
from pyspark.sql import SparkSession
from spark_pipeline import analyze_dataframe, raw_frame, results_as_dicts

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    consumer_group,
    consumer_group_epoch,
    encode_consumer_protocol,
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
)
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from kafka_sandbox.synthetic import DAY_MS, generate

pytestmark = pytest.mark.slow  # Spark

RETENTION = 7 * DAY_MS


def both(
    spark: SparkSession, records: list[RawRecord], **kwargs: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    expected = analyze_records(records, **kwargs)
    got = analyze_dataframe(raw_frame(spark, records), **kwargs)
    return {"summary": got["summary"], "offsets": list(results_as_dicts(got["offsets"]))}, expected


def test_random_topic_with_every_rule(spark: SparkSession) -> None:
    topic = generate(20240501, groups=300, partitions=6, topic_partitions=3, commits=3, corrupt_fraction=0.02)
    policy = parse_policy(
        {
            "groups": {"include": ["*"], "exclude": ["simple-1*", "kip848-2?"]},
            "rules": {
                "emptyGroupRetention": "3d",
                "unsubscribedTopicRetention": "36h",
                "standaloneRetention": "5d",
                "deletedTopics": "Delete",
                "staleGroups": {"emptyFor": "10d"},  # some groups stale, not all (every reason occurs)
            },
            "protect": {"groups": ["billing-*"], "keepAlive": True},
        }
    )
    got, expected = both(
        spark,
        topic.records,
        policy=policy,
        now_ms=topic.now_ms,
        retention_ms=RETENTION,
        existing_topics=topic.existing_topics,
        snapshot={0: 5, 1: 7},
    )
    assert got["summary"] == expected["summary"]
    assert got["offsets"] == expected["offsets"]
    # The data really covers the ground: every reason occurs, and corrupt records were skipped.
    assert all(n > 0 for n in expected["summary"]["byReason"].values()), expected["summary"]["byReason"]
    assert expected["summary"]["skippedRecords"] > 0
    assert {r["groupType"] for r in expected["offsets"]} == {"classic", "consumer", "streams", "share"}


SHORT_RULES = parse_policy(
    {"rules": {"emptyGroupRetention": "1d", "standaloneRetention": "1d", "deletedTopics": "Delete"}}
)


def test_arrival_order_candidates_only_and_unknown_topics(spark: SparkSession) -> None:
    topic = generate(7, groups=120, partitions=3, commits=4)
    shuffled = list(topic.records)
    random.Random(1).shuffle(shuffled)  # the newest record wins by offset, not by arrival
    args: dict[str, Any] = {"policy": SHORT_RULES, "now_ms": topic.now_ms, "retention_ms": 3 * DAY_MS}
    got, expected = both(spark, shuffled, existing_topics=None, candidates_only=True, **args)
    assert got == expected
    assert expected["offsets"] and all(r["candidate"] for r in expected["offsets"])
    assert expected["summary"]["byReason"]["DeletedTopic"] == 0  # no topic list, no DeletedTopic


def test_an_empty_topic(spark: SparkSession) -> None:
    now_ms = generate(7, groups=120, partitions=3, commits=4).now_ms
    args: dict[str, Any] = {"policy": SHORT_RULES, "now_ms": now_ms, "retention_ms": 3 * DAY_MS}
    got, expected = both(spark, [], existing_topics=set(), **args)
    assert got == expected
    assert expected["summary"]["offsets"] == 0 and expected["offsets"] == []


def test_when_kip848_groups_and_odd_classic_groups_became_empty(spark: SparkSession) -> None:
    """Issue 11 items 4 and 8: an Empty KIP-848 group's emptyGroupRetention counts from its records'
    timestamps (groups.emptied_at, a record timestamp of -1 is none), and a classic record with protocol
    type "" and members is a Stable non-simple group: both paths agree on each."""
    t0 = 1_700_000_000_000
    raw: list[tuple[int, bytes, bytes | None]] = []  # (timestamp, key, value)
    for i, emptied in enumerate((t0, t0 + 2 * DAY_MS, t0 + 4 * DAY_MS, -1)):
        group = f"kip848-{i}"
        raw += [(t0, k, v) for k, v in consumer_group(group, {}, epoch=3, resolved_at=t0)]
        raw.append((emptied, *consumer_group_epoch(group, 4)))
        raw.append((t0, *offset_commit(group, "orders", 0, offset=1, commit_timestamp=t0)))
    member = {
        "memberId": "m",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "h",
        "rebalanceTimeout": 1,
        "sessionTimeout": 1,
        "subscription": b"",
        "assignment": b"",
    }
    for group, members in (("odd", [member]), ("plain", [])):
        raw.append(
            (
                t0,
                *group_metadata(
                    group,
                    protocol_type="",
                    generation=1,
                    protocol=None,
                    leader=None,
                    current_state_timestamp=t0,
                    members=members,
                ),
            )
        )
        raw.append((t0, *offset_commit(group, "orders", 0, offset=1, commit_timestamp=t0)))

    # Item 6: two records of one generation with different subscriptions (a static member re-joined), and a
    # deleted group whose older records are still in the log (history alone makes no group).
    def static(topic: str) -> dict[str, Any]:
        sub = {"version": 1, "topics": [topic]}
        return {
            **member,
            "groupInstanceId": "i-1",
            "subscription": encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, sub, "subscription"),
        }

    for topic in ("orders", "payments"):
        raw.append(
            (
                t0,
                *group_metadata(
                    "static",
                    protocol_type="consumer",
                    generation=4,
                    protocol="range",
                    leader="m",
                    current_state_timestamp=t0,
                    members=[static(topic)],
                ),
            )
        )
    raw += [
        (t0, *offset_commit("static", t, 0, offset=1, commit_timestamp=t0))
        for t in ("orders", "payments", "audit")
    ]
    raw.append(
        (
            t0,
            *group_metadata(
                "gone",
                protocol_type="consumer",
                generation=2,
                protocol="range",
                leader="m",
                current_state_timestamp=t0,
                members=[static("orders")],
            ),
        )
    )
    raw.append((t0, *group_metadata_tombstone("gone")))
    raw.append((t0, *offset_commit("gone", "orders", 0, offset=1, commit_timestamp=t0)))
    records = [RawRecord(0, offset, ts, k, v) for offset, (ts, k, v) in enumerate(raw)]
    args: dict[str, Any] = {"policy": SHORT_RULES, "now_ms": t0 + 3 * DAY_MS, "retention_ms": RETENTION}
    got, expected = both(spark, records, existing_topics={"orders", "payments", "audit"}, **args)
    assert got == expected
    reasons = {
        r["group"]: (r["groupState"], r["reason"]) for r in expected["offsets"] if r["group"] != "static"
    }
    assert reasons == {
        "kip848-0": ("Empty", "EmptyGroup"),
        "kip848-1": ("Empty", "EmptyGroup"),
        "kip848-2": ("Empty", "WithinRetention"),  # emptied a day ago less than the retention
        "kip848-3": ("Empty", "EmptyGroup"),  # no timestamp: the commit's, 3 days ago
        "odd": ("Stable", "UnknownSubscription"),
        "plain": ("Empty", "Standalone"),
        "gone": ("Empty", "Standalone"),
    }
    static = {
        r["topic"]: (r["reason"], r["brokerExpiresAt"]) for r in expected["offsets"] if r["group"] == "static"
    }
    assert static == {
        "orders": ("UnknownSubscription", t0 + RETENTION),
        "payments": ("UnknownSubscription", t0 + RETENTION),
        "audit": ("WithinRetention", t0 + RETENTION),  # unsubscribed in both records: SHORT_RULES has no rule
    }
