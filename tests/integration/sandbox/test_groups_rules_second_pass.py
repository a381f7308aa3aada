"""Issue 11, items 2, 3 and 7: what the analysis predicts for a group, then what the sandbox broker does
with it once its clock is advanced past the prediction (the reference analysis, read over the wire with
the operator's own topic reader: no Spark here).

- Streams groups (KIP-1071): a live group keeps its topology's source topics and loses the rest by
  commit time; once Empty it loses everything (StreamsGroup.isSubscribedToTopic, offsetExpirationCondition).
- Share groups (KIP-932): never expired by offsets.retention.minutes (ShareGroup.shouldExpire).
- Subscription bytes: Kafka ignores the version short and takes any negative UserData length as null
  (ClassicGroup.computeSubscribedTopics); bytes its reader fails on leave the group's subscriptions
  unknown, and nothing of it expires.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kafka.errors as Errors
import pytest
from analysis_reference import analyze_records
from brokers import make_topics
from group_clients import dump, group_records, record_shape
from kafka import KafkaAdminClient, TopicPartition

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offsets_model.codec import (
    encode_key,
    group_metadata,
    offset_commit,
    share_group,
    streams_group,
    streams_group_topology,
)
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from kafka_sandbox import SandboxBroker

DAY_MS = 86_400_000
RETENTION_MS = 7 * DAY_MS  # brokers.DEFAULTS
POLICY = parse_policy({"rules": {"emptyGroupRetention": "1d", "unsubscribedTopicRetention": "1d"}})


def analysis(broker: SandboxBroker, group: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    """(topic, partition) -> (brokerExpiresAt, reason, candidate) of `group`, as of the broker's clock."""
    with OffsetsTopicReader(broker.bootstrap_servers) as reader:
        records = [
            RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
            for r in reader.records(None, from_beginning=True, follow=False)
        ]
    report = analyze_records(
        records, POLICY, now_ms=broker.clock.now_ms(), retention_ms=RETENTION_MS, existing_topics=None
    )
    return {
        (r["topic"], r["partition"]): (r["brokerExpiresAt"], r["reason"], r["candidate"])
        for r in report["offsets"]
        if r["group"] == group
    }


def seed(broker: SandboxBroker, records: list[tuple[bytes, bytes | None]], now: int | None = None) -> int:
    """Appends `records` at `now` (the broker's clock by default; pass the time the records were built at when
    they carry it, as a commit timestamp does: the clock moves between two reads)."""
    now = broker.clock.now_ms() if now is None else now
    broker.append_offsets_records([(key, value, now) for key, value in records])
    return now


def tombstones(broker: SandboxBroker, group: str) -> list[tuple[Any, ...]]:
    return [
        record_shape(r) for r in group_records(dump(broker.bootstrap_servers), group) if r["value"] is None
    ]


@pytest.fixture
def admin(broker: SandboxBroker) -> Iterator[KafkaAdminClient]:
    make_topics(broker, {"orders": 1, "app-rep": 1, "payments": 1})
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


def committed(admin: KafkaAdminClient, group: str) -> set[str]:
    return {tp.topic for tp in admin.list_group_offsets({group: None})[group]}


# ---- item 2: streams groups ----


def streams_app(broker: SandboxBroker, members: list[str]) -> int:
    """Streams group "app": reads orders, and app-rep as a repartition source; committed all three topics."""
    topology = streams_group_topology("app", source_topics=["orders"], repartition_source_topics=["app-rep"])
    now = broker.clock.now_ms()
    return seed(
        broker,
        streams_group("app", members, topology)
        + [offset_commit("app", t, 0, offset=3, commit_timestamp=now) for t in ("orders", "app-rep", "payments")],
        now,
    )


def test_a_live_streams_group_keeps_its_source_topics_and_loses_the_rest_at_the_predicted_time(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    committed_at = streams_app(broker, ["m1"])
    predicted = analysis(broker, "app")
    assert predicted == {
        ("orders", 0): (None, "ActiveSubscription", False),
        ("app-rep", 0): (None, "ActiveSubscription", False),
        ("payments", 0): (committed_at + RETENTION_MS, "WithinRetention", False),
    }
    deleted = admin.delete_group_offsets("app", [TopicPartition("orders", 0), TopicPartition("app-rep", 0)])
    assert set(deleted.values()) == {Errors.GroupSubscribedToTopicError}

    # The broker's clock is wall time plus the jumps: a margin of a minute, so a slow machine cannot carry it
    # past the due time between the jump and the cleanup.
    broker.clock.advance(ms=committed_at + RETENTION_MS - 60_000 - broker.clock.now_ms())
    broker.expire_offsets()
    assert committed(admin, "app") == {"orders", "app-rep", "payments"}
    broker.clock.advance(ms=committed_at + RETENTION_MS - broker.clock.now_ms())
    broker.expire_offsets()
    assert committed(admin, "app") == {"orders", "app-rep"}
    assert tombstones(broker, "app") == [("OffsetCommit", "app", "payments", 0, "tombstone")]


def test_an_empty_streams_group_loses_everything_and_goes(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    committed_at = streams_app(broker, ["m1"])
    broker.clock.advance(days=2)
    # The last member left: its records are tombstoned, the topology stays (StreamsGroup is Empty).
    seed(broker, [(encode_key("StreamsGroupMemberMetadata", {"GroupId": "app", "MemberId": "m1"}), None)])
    predicted = analysis(broker, "app")
    assert {k: v[:2] for k, v in predicted.items()} == {
        (t, 0): (committed_at + RETENTION_MS, "EmptyGroup") for t in ("orders", "app-rep", "payments")
    }
    assert all(candidate for _, _, candidate in predicted.values())  # the policy's 1d has passed

    broker.clock.advance(ms=committed_at + RETENTION_MS - broker.clock.now_ms())
    broker.expire_offsets()
    assert "app" not in {g["group_id"] for g in admin.list_groups()}
    assert tombstones(broker, "app")[-6:] == [
        ("OffsetCommit", "app", "orders", 0, "tombstone"),
        ("OffsetCommit", "app", "app-rep", 0, "tombstone"),
        ("OffsetCommit", "app", "payments", 0, "tombstone"),
        ("StreamsGroupTargetAssignmentMetadata", "app", "tombstone"),
        ("StreamsGroupMetadata", "app", "tombstone"),
        ("StreamsGroupTopology", "app", "tombstone"),
    ]


# ---- item 3: share groups ----


def test_a_share_group_is_never_expired_and_the_report_says_why(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    seed(broker, share_group("sharers", ["s1"]))
    seed(broker, [offset_commit("sharers", "orders", 0, offset=3, commit_timestamp=broker.clock.now_ms())])
    assert analysis(broker, "sharers") == {("orders", 0): (None, "ShareGroup", False)}
    assert [(g["group_id"], g["group_type"]) for g in admin.list_groups()] == [("sharers", "share")]

    broker.clock.advance(days=30)
    broker.expire_offsets()
    assert tombstones(broker, "sharers") == []
    assert analysis(broker, "sharers") == {("orders", 0): (None, "ShareGroup", False)}


# ---- item 7: Kafka's leniency with subscription bytes ----


def lenient_subscription(*topics: str) -> bytes:
    """A subscription a strict reader refuses and Kafka reads: version -1, UserData length -2."""
    out = b"\xff\xff" + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return out + b"\xff\xff\xff\xfe"


def classic_group(broker: SandboxBroker, group: str, subscription: bytes) -> int:
    """A Stable classic consumer group with one member whose session outlasts the test's clock jumps."""
    now = broker.clock.now_ms()
    member = {
        "memberId": "m1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/10.0.0.9",
        "rebalanceTimeout": -1,
        "sessionTimeout": 2_000_000_000,  # 23 days
        "subscription": subscription,
        "assignment": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff",
    }
    seed(
        broker,
        [
            group_metadata(
                group,
                protocol_type="consumer",
                generation=1,
                protocol="range",
                leader="m1",
                current_state_timestamp=now,
                members=[member],
            ),
            offset_commit(group, "orders", 0, offset=3, commit_timestamp=now),
            offset_commit(group, "payments", 0, offset=3, commit_timestamp=now),
        ],
    )
    return now


def test_subscription_bytes_kafka_reads_leniently_keep_their_topics(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    committed_at = classic_group(broker, "lenient", lenient_subscription("orders"))
    assert analysis(broker, "lenient") == {
        ("orders", 0): (None, "ActiveSubscription", False),
        ("payments", 0): (committed_at + RETENTION_MS, "WithinRetention", False),
    }
    broker.clock.advance(ms=RETENTION_MS)
    broker.expire_offsets()
    assert committed(admin, "lenient") == {"orders"}


def test_subscription_bytes_kafka_fails_on_expire_nothing(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    # A negative topics count: the generated reader throws a RuntimeException, not a SchemaException,
    # so Kafka's load of the partition fails; the group's offsets never expire.
    classic_group(broker, "broken", b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")
    assert analysis(broker, "broken") == {
        ("orders", 0): (None, "UnknownSubscription", False),
        ("payments", 0): (None, "UnknownSubscription", False),
    }
    broker.clock.advance(days=8)
    broker.expire_offsets()
    assert committed(admin, "broken") == {"orders", "payments"}
    # `dump` keeps the bytes raw and says why, next to them (item 9).
    [group] = [
        r for r in group_records(dump(broker.bootstrap_servers), "broken") if r["type"] == "GroupMetadata"
    ]
    [member] = group["value"]["members"]
    assert member["subscription"] == "0000ffffffffffffffff"
    assert member["_subscriptionError"] == {
        "error": "ConsumerProtocolSubscription.topics is null or has negative length -1",
        "byte": 2,
        "coordinator": "reader error at byte 2: Kafka fails to load the partition",
    }
