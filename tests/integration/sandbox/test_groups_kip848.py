"""KIP-848 ("consumer" protocol) groups seeded into the sandbox broker's `__consumer_offsets`, seen
through the classic admin APIs: Kafka 4.x's offset rules for them (OffsetCommit refused while members
exist, OffsetDelete refused for subscribed and regex-resolved topics, expiry by commit time)."""

from __future__ import annotations

import kafka.errors as Errors
from group_clients import dump, group_records, kip848_records, record_shape
from kafka import KafkaAdminClient, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka_sandbox import SandboxBroker
from offset_expiry.codec import offset_commit


def test_a_seeded_kip848_group_under_the_admin_apis(broker: SandboxBroker) -> None:
    for topic in ("orders", "payments", "audit"):
        broker.create_topic(topic, 1)
    now = broker.clock.now_ms()
    records = kip848_records(
        "modern", {"m1": (["orders"], None), "m2": ([], "pay.*")}, {"pay.*": ["payments"]}, now
    )
    records += [
        (*offset_commit("modern", t, 0, offset=5, commit_timestamp=now), now)
        for t in ("orders", "payments", "audit")
    ]
    broker.append_offsets_records(records)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        [listed] = admin.list_groups()
        assert (listed["group_id"], listed["group_type"], listed["group_state"]) == (
            "modern",
            "consumer",
            "Stable",
        )
        refused = admin.alter_group_offsets(
            "modern", {TopicPartition("audit", 0): OffsetAndMetadata(9, "", -1)}
        )
        assert refused == {TopicPartition("audit", 0): Errors.UnknownMemberIdError}
        deleted = admin.delete_group_offsets(
            "modern", [TopicPartition("payments", 0), TopicPartition("orders", 0)]
        )
        assert deleted == {
            TopicPartition("payments", 0): Errors.GroupSubscribedToTopicError,  # resolved from the regex
            TopicPartition("orders", 0): Errors.GroupSubscribedToTopicError,
        }
        assert dict(admin.delete_groups(["modern"])) == {"modern": "NonEmptyGroupError"}

        broker.clock.advance(days=7)
        broker.expire_offsets()
        offsets = admin.list_group_offsets({"modern": None})["modern"]
        assert {tp.topic for tp in offsets} == {"orders", "payments"}  # audit expired by its commit time
    finally:
        admin.close()
    tombstones = [
        record_shape(r) for r in group_records(dump(broker.bootstrap_servers), "modern") if r["value"] is None
    ]
    assert tombstones == [("OffsetCommit", "modern", "audit", 0, "tombstone")]
