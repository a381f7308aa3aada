"""Records found in `__consumer_offsets` become coordinator state, as when a Kafka shard loads its
partition (GroupCoordinatorShard.replay, GroupMetadataManager.replay / onLoaded)."""

from __future__ import annotations

import kafka.errors as Errors
from coordinator_harness import T0, Harness, assignment, subscription

from kafka_offsets_model.codec import (
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
)
from kafka_sandbox.coordinator.classic import GroupState


def stable_group_record(
    group: str, *topics: str, session_ms: int = 45_000
) -> tuple[bytes, bytes | None, int]:
    key, value = group_metadata(
        group,
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m1",
        current_state_timestamp=T0 - 1000,
        members=[
            {
                "memberId": "m1",
                "groupInstanceId": None,
                "clientId": "c",
                "clientHost": "/10.0.0.9",
                "rebalanceTimeout": -1,
                "sessionTimeout": session_ms,
                "subscription": subscription(*topics),
                "assignment": assignment(orders=[0]),
            }
        ],
    )
    return key, value, T0


def test_a_loaded_group_with_members_is_stable_and_its_members_get_sessions() -> None:
    h = Harness()
    report = h.coord.load(
        [
            stable_group_record("g1", "orders"),
            (*offset_commit("g1", "payments", 0, offset=3, commit_timestamp=T0), T0),
        ]
    )
    assert (report.applied, report.skipped) == (2, 0)
    group = h.coord.state.classic_group("g1")
    assert group is not None and group.state is GroupState.STABLE
    assert group.generation_id == 4 and group.subscribed_topics == frozenset({"orders"})
    assert group.members["m1"].rebalance_timeout_ms == 45_000  # -1 means "use the session timeout"
    [described] = h.coord.describe_groups(["g1"])
    assert described.state == "Stable" and described.members[0].metadata == subscription("orders")
    assert h.commit("g1", {("orders", 0): 1}) == {("orders", 0): Errors.UnknownMemberIdError}
    # GroupMetadataManager.onLoaded schedules each member's session: nobody heartbeats, so it ends.
    h.clock.advance(ms=45_000)
    h.coord.tick()
    assert group.state is GroupState.EMPTY


def test_offsets_without_a_group_belong_to_a_simple_group_and_tombstones_remove() -> None:
    h = Harness()
    h.coord.load(
        [
            (
                *offset_commit(
                    "lone", "orders", 0, offset=1, commit_timestamp=T0 - 5, expire_timestamp=T0 + 9
                ),
                T0,
            ),
            (*offset_commit("lone", "orders", 1, offset=2, commit_timestamp=T0 - 5), T0),
            (*offset_commit_tombstone("lone", "orders", 1), T0),
        ]
    )
    stored = {(t, p): v for t, p, v in h.coord.state.offsets.entries("lone")}
    assert list(stored) == [("orders", 0)]
    assert stored["orders", 0].expire_timestamp == T0 + 9
    [listed] = h.coord.list_groups()
    assert (listed.protocol_type, listed.state) == ("", "Empty")


def test_a_group_tombstone_removes_the_group() -> None:
    h = Harness()
    h.coord.load([stable_group_record("g1", "orders"), (*group_metadata_tombstone("g1"), T0)])
    assert h.coord.list_groups() == []
    assert len(h.coord.state.timers) == 1  # only the expiration task: the member's session went too


def test_records_that_do_not_decode_are_counted_and_skipped() -> None:
    h = Harness()
    report = h.coord.load([(b"\x00\x63garbage", b"x", T0), (b"\x00\x02\x00\x01g", b"\x00\x03\x00", T0)])
    assert (report.applied, report.skipped) == (0, 2)
    assert h.coord.list_groups() == []


def test_the_offset_commit_fast_path_reads_what_the_codec_reads() -> None:
    from kafka_offsets_model.codec import decode_record, encode_key, encode_value
    from kafka_sandbox.coordinator.loader import fast_offset_commit
    from kafka_sandbox.coordinator.offsets import OffsetAndMetadata

    key1 = encode_key("OffsetCommit", {"group": "g", "topic": "tópico", "partition": 7})
    key0 = encode_key("OffsetCommit", {"group": "g", "topic": "t", "partition": 1}, key_version=0)
    values = [
        encode_value("OffsetCommit", {"offset": 5, "metadata": "m", "commitTimestamp": T0}, 0),
        encode_value(
            "OffsetCommit", {"offset": 5, "metadata": "", "commitTimestamp": T0, "expireTimestamp": T0 + 1}, 1
        ),
        encode_value("OffsetCommit", {"offset": 5, "metadata": "x", "commitTimestamp": T0}, 2),
        encode_value(
            "OffsetCommit", {"offset": 5, "leaderEpoch": 3, "metadata": "é", "commitTimestamp": T0}, 3
        ),
    ]
    for key in (key0, key1):
        for value in values:
            fast = fast_offset_commit(key, value)
            assert fast is not None
            decoded = decode_record(key, value)
            group, topic, partition, stored = fast
            assert (group, topic, partition) == tuple(decoded["key"].values())
            assert stored is not None
            assert stored.offset == decoded["value"]["offset"]
            assert stored.leader_epoch == decoded["value"].get("leaderEpoch", -1)
            assert stored.metadata == decoded["value"]["metadata"]
            assert stored.commit_timestamp == decoded["value"]["commitTimestamp"]
            assert (stored.expire_timestamp or -1) == decoded["value"].get("expireTimestamp", -1)
        assert fast_offset_commit(key, None) is not None
        assert fast_offset_commit(key, values[3] + b"\x00") is None  # odd bytes go to the codec
    flexible = encode_value(
        "OffsetCommit", {"offset": 5, "leaderEpoch": 3, "metadata": "", "commitTimestamp": T0}, 4
    )
    # Flexible v4 (Kafka 4.1+) takes the codec's straight-line path too.
    assert fast_offset_commit(key1, flexible) == ("g", "tópico", 7, OffsetAndMetadata(5, 3, "", T0, None))


def test_subscription_bytes_that_would_fail_kafkas_load_are_reported_and_expire_nothing() -> None:
    """GroupMetadataManager.replay computes the subscriptions; a reader error other than a SchemaException
    (here a negative topics count) fails Kafka's load of the partition. The sandbox loads the group with
    unknown subscriptions and says so."""
    h = Harness()
    key, value = group_metadata(
        "g1",
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m1",
        current_state_timestamp=T0,
        members=[
            {
                "memberId": "m1",
                "groupInstanceId": None,
                "clientId": "c",
                "clientHost": "/10.0.0.9",
                "rebalanceTimeout": -1,
                "sessionTimeout": 45_000,
                "subscription": bytes.fromhex("0000ffffffffffffffff"),
                "assignment": assignment(orders=[0]),
            }
        ],
    )
    report = h.coord.load([(key, value, T0)])
    assert report.problems == [
        "Kafka would fail to load this partition: member 'm1': subscription byte 2: topics count is negative (null)"
    ]
    group = h.coord.state.classic_group("g1")
    assert group is not None and group.subscribed_topics is None
