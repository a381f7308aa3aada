"""KIP-848 ("consumer" protocol) groups seeded into the sandbox broker's `__consumer_offsets`, seen
through the classic admin APIs: Kafka 4.x's offset rules for them (OffsetCommit refused while members
exist, OffsetDelete refused for subscribed and regex-resolved topics, expiry by commit time)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kafka.errors as Errors
import pytest
from brokers import seed_kip848_group
from group_clients import dump, group_records, record_shape
from kafka import KafkaAdminClient, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka_sandbox import SandboxBroker


@pytest.fixture
def modern(broker: SandboxBroker) -> Iterator[KafkaAdminClient]:
    """Group "modern": m1 subscribes to orders by name, m2 to pay.* (resolved to payments); it committed
    orders, payments and audit, partition 0 each, at 5. Returns an admin client of its broker."""
    for topic in ("orders", "payments", "audit"):
        broker.create_topic(topic, 1)
    seed_kip848_group(
        broker,
        "modern",
        {(t, 0): 5 for t in ("orders", "payments", "audit")},
        {"m1": (["orders"], None), "m2": ([], "pay.*")},
        {"pay.*": ["payments"]},
    )
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    yield client
    client.close()


def tombstones(broker: SandboxBroker) -> list[tuple[Any, ...]]:
    return [
        record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "modern") if r["value"] is None
    ]


def test_a_seeded_kip848_group_is_listed_as_a_stable_consumer_group(modern: KafkaAdminClient) -> None:
    [listed] = modern.list_groups()
    assert (listed["group_id"], listed["group_type"], listed["group_state"]) == ("modern", "consumer", "Stable")


def test_admin_commits_are_refused_while_it_has_members(modern: KafkaAdminClient, broker: SandboxBroker) -> None:
    refused = modern.alter_group_offsets("modern", {TopicPartition("audit", 0): OffsetAndMetadata(9, "", -1)})
    assert refused == {TopicPartition("audit", 0): Errors.UnknownMemberIdError}
    assert tombstones(broker) == []


def test_offset_delete_is_refused_for_subscribed_and_regex_resolved_topics(
    modern: KafkaAdminClient, broker: SandboxBroker
) -> None:
    deleted = modern.delete_group_offsets("modern", [TopicPartition("payments", 0), TopicPartition("orders", 0)])
    assert deleted == {
        TopicPartition("payments", 0): Errors.GroupSubscribedToTopicError,  # resolved from the regex
        TopicPartition("orders", 0): Errors.GroupSubscribedToTopicError,
    }
    assert tombstones(broker) == []


def test_a_group_with_members_cannot_be_deleted(modern: KafkaAdminClient, broker: SandboxBroker) -> None:
    assert dict(modern.delete_groups(["modern"])) == {"modern": "NonEmptyGroupError"}
    assert tombstones(broker) == []


def test_offsets_of_topics_it_does_not_subscribe_to_expire_by_commit_time(
    modern: KafkaAdminClient, broker: SandboxBroker
) -> None:
    broker.clock.advance(days=7)
    broker.expire_offsets()
    offsets = modern.list_group_offsets({"modern": None})["modern"]
    assert {tp.topic for tp in offsets} == {"orders", "payments"}  # audit expired by its commit time
    assert tombstones(broker) == [("OffsetCommit", "modern", "audit", 0, "tombstone")]
