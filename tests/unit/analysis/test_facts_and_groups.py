"""Records to facts (the fast path agrees with the codec) and facts to group state."""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_offsets_model.codec import (
    CodecError,
    decode_record,
    encode_consumer_protocol,
    encode_key,
    encode_value,
    group_metadata,
    offset_commit,
    offset_commit_tombstone,
)
from kafka_offsets_model.codec.schemas import CONSUMER_PROTOCOL_SUBSCRIPTION
from kafka_offsets_model.rules import GroupType, GroupView
from kafka_sandbox.synthetic import generate
from offset_expiry.columnar import _Bytes, decode_records, offset_commit_mask
from offset_expiry.facts import (
    Fact,
    _fact_from_decoded,
    _fast_offset_commit,
    fact_from_record,
    subscription_topics_v0,
)
from offset_expiry.groups import rebuild_group, simple_group

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"  # Kafka's base64 form of a uuid


def slow(key: bytes, value: bytes | None) -> Fact:
    return _fact_from_decoded(decode_record(key, value))


def test_fast_path_agrees_with_the_codec_on_every_synthetic_record() -> None:
    fast_hits = 0
    for record in generate(7, groups=80).records:
        try:
            expected: Fact | None = slow(record.key, record.value)
        except CodecError:
            expected = None
        fast = _fast_offset_commit(record.key, record.value)
        if fast is not None:
            fast_hits += 1
            assert fast == expected
        if expected is None:
            try:
                fact = fact_from_record(record.key, record.value)
            except CodecError:
                pass
            else:  # only an undecodable streams topology is kept, as "topics unknown"
                assert (fact.type, fact.topics) == (23, None), (
                    "fact_from_record accepted what the codec refuses"
                )
        else:
            assert fact_from_record(record.key, record.value) == expected
    assert fast_hits > 100


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(
        [
            offset_commit("g", "t", 1, offset=5, commit_timestamp=9, metadata="m"),
            offset_commit("g", "t", 1, offset=5, commit_timestamp=9, expire_timestamp=20),
            offset_commit_tombstone("gg", "topic", 3),
            offset_commit("g", "t", 1, offset=5, commit_timestamp=9, metadata="m", value_version=4),
            offset_commit("g", "t", 1, offset=5, commit_timestamp=9, value_version=4, topic_id=TOPIC_ID),
        ]
    ),
    st.integers(0, 40),
    st.integers(0, 255),
    st.booleans(),
)
def test_fast_path_never_accepts_what_the_codec_refuses(base: Any, at: int, byte: int, in_key: bool) -> None:
    key, value = base
    if in_key or value is None:
        key = key[:at] + bytes([byte]) + key[at + 1 :] if at < len(key) else key + bytes([byte])
    else:
        value = value[:at] + bytes([byte]) + value[at + 1 :] if at < len(value) else value + bytes([byte])
    fast = _fast_offset_commit(key, value)
    if fast is None:
        return
    assert fast == slow(key, value)


def test_fast_paths_take_what_kafka_4_1_writes() -> None:
    """Kafka 4.1+ writes OffsetCommitValue v4 (flexible; the topic id as tagged field 0 from 4.3): on such a
    cluster nearly every record is one, so both fast paths (the row one and the vectorised one) take them,
    and give what the codec gives. Metadata of 127 bytes or more (a two-byte compact length) and unknown
    tagged fields go the general way."""
    records = [
        offset_commit("g", "t", 1, offset=5, commit_timestamp=9, value_version=4),
        offset_commit("g", "t", 2, offset=6, commit_timestamp=10, metadata="m" * 126, value_version=4),
        offset_commit("g", "t", 3, offset=7, commit_timestamp=11, leader_epoch=4, value_version=4, topic_id=TOPIC_ID),
        offset_commit("g", "t", 4, offset=8, commit_timestamp=12, metadata="m" * 127, value_version=4),
    ]
    key, value = records[0]
    unknown_tag = (key, value[:-1] + bytes([1, 5, 1, 0]))  # tag 5, one byte
    for k, v in records[:3]:
        assert _fast_offset_commit(k, v) == slow(k, v)
    assert [_fast_offset_commit(k, v) is not None for k, v in [*records, unknown_tag]] == [True] * 3 + [False] * 2
    keys, values = _Bytes(pa.array([k for k, _ in records], pa.binary())), _Bytes(pa.array([v for _, v in records]))
    assert offset_commit_mask(keys, values)["ok"].tolist() == [True, True, True, False]
    n = len(records) + 1
    all_keys = pa.array([k for k, _ in records] + [unknown_tag[0]], pa.binary())
    all_values = pa.array([v for _, v in records] + [unknown_tag[1]], pa.binary())
    batch = decode_records(pa.array([0] * n, pa.int32()), pa.array(range(n), pa.int64()), pa.array([1] * n, pa.int64()),
                           all_keys, all_values).to_pylist()
    expected = [slow(k, v) for k, v in [*records, unknown_tag]]
    assert [(r["partition"], r["committed_offset"], r["commit_timestamp"]) for r in batch] == [
        (f.partition, f.committed_offset, f.commit_timestamp) for f in expected]


def test_offset_commit_facts() -> None:
    fact = fact_from_record(
        *offset_commit("g", "t", 2, offset=10, commit_timestamp=100, expire_timestamp=500)
    )
    assert fact == Fact(1, "g", "t", 2, committed_offset=10, commit_timestamp=100, expire_timestamp=500)
    # Kafka's -1 sentinel means "no expire timestamp".
    raw = encode_value(
        "OffsetCommit", {"offset": 1, "metadata": "", "commitTimestamp": 5, "expireTimestamp": -1}, 1
    )
    assert (
        fact_from_record(
            encode_key("OffsetCommit", {"group": "g", "topic": "t", "partition": 0}), raw
        ).expire_timestamp
        is None
    )
    # Key type 0 is the same logical offset as type 1.
    legacy = encode_key("OffsetCommit", {"group": "g", "topic": "t", "partition": 2}, 0)
    v0 = encode_value("OffsetCommit", {"offset": 1, "metadata": "", "commitTimestamp": 5}, 0)
    assert fact_from_record(legacy, v0).logical_key() == fact.logical_key()
    assert fact_from_record(*offset_commit_tombstone("g", "t", 2)).tombstone


def member(member_id: str, subscription: Any) -> dict[str, Any]:
    return {
        "memberId": member_id,
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/h",
        "rebalanceTimeout": 1,
        "sessionTimeout": 1,
        "subscription": subscription,
        "assignment": b"",
    }


def classic_fact(**kwargs: Any) -> Fact:
    args: dict[str, Any] = {
        "protocol_type": "consumer",
        "generation": 3,
        "protocol": "range",
        "leader": None,
        "current_state_timestamp": 77,
    }
    args.update(kwargs)
    return fact_from_record(*group_metadata("g", **args))


def test_classic_subscriptions() -> None:
    sub_v3 = {"version": 3, "topics": ["b", "a"], "rackId": "r1"}
    fact = classic_fact(members=[member("m1", sub_v3), member("m2", {"version": 0, "topics": ["c"]})])
    assert fact.topics == ("a", "b", "c") and fact.member_count == 2 and fact.state_timestamp == 77
    assert classic_fact(members=[]).topics == ()
    # No selected protocol, or one member's bytes unreadable: subscriptions unknown.
    assert classic_fact(protocol=None, members=[member("m1", sub_v3)]).topics is None
    assert classic_fact(members=[member("m1", sub_v3), member("m2", b"\x00\x00\x00")]).topics is None
    # Kafka reads only the v0 prefix: a v1 subscription cut after its user data still counts.
    full = encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, {"version": 1, "topics": ["x"]}, "s")
    v0_prefix = full[: 2 + 4 + 2 + 1 + 4]
    assert subscription_topics_v0(v0_prefix) == ["x"]
    assert classic_fact(members=[member("m1", v0_prefix)]).topics == ("x",)
    # Other protocol types have no known subscriptions.
    assert classic_fact(protocol_type="connect", members=[member("m1", b"opaque")]).topics is None
    assert classic_fact(current_state_timestamp=-1).state_timestamp is None


def test_rebuild_classic_and_simple_groups() -> None:
    stable = rebuild_group("g", [classic_fact(members=[member("m1", {"version": 1, "topics": ["a"]})])])
    assert stable == GroupView("g", GroupType.CLASSIC, "Stable", "consumer", 77, frozenset({"a"}))
    empty = rebuild_group("g", [classic_fact()])
    assert empty == GroupView("g", GroupType.CLASSIC, "Empty", "consumer", 77, frozenset())
    assert rebuild_group("g", [classic_fact(protocol_type="")]).is_simple
    assert rebuild_group("g", []) == simple_group("g")


def kip848(type_name: str, key: dict[str, Any], value: dict[str, Any]) -> Fact:
    return fact_from_record(encode_key(type_name, {"GroupId": "g", **key}), encode_value(type_name, value, 0))


def member848(member_id: str, names: list[str], regex: str | None = None) -> Fact:
    return kip848(
        "ConsumerGroupMemberMetadata",
        {"MemberId": member_id},
        {
            "InstanceId": None,
            "RackId": None,
            "ClientId": "c",
            "ClientHost": "/h",
            "SubscribedTopicNames": names,
            "SubscribedTopicRegex": regex,
            "RebalanceTimeoutMs": 1,
            "ServerAssignor": None,
        },
    )


def assignment848(member_id: str, epoch: int, state: int = 0) -> Fact:
    return kip848(
        "ConsumerGroupCurrentMemberAssignment",
        {"MemberId": member_id},
        {
            "MemberEpoch": epoch,
            "PreviousMemberEpoch": epoch - 1,
            "State": state,
            "AssignedPartitions": [],
            "PartitionsPendingRevocation": [],
        },
    )


def test_rebuild_kip848_groups() -> None:
    meta = kip848("ConsumerGroupMetadata", {}, {"Epoch": 5})
    target = kip848("ConsumerGroupTargetAssignmentMetadata", {}, {"AssignmentEpoch": 5})
    regex = kip848(
        "ConsumerGroupRegularExpression",
        {"RegularExpression": "rx.*"},
        {"Topics": ["rx-1", "rx-2"], "Version": 1, "Timestamp": 1},
    )
    group = rebuild_group(
        "g",
        [
            meta,
            target,
            member848("m1", ["a"]),
            member848("m2", [], "rx.*"),
            regex,
            assignment848("m1", 5),
            assignment848("m2", 5),
        ],
    )
    assert group == GroupView(
        "g", GroupType.CONSUMER, "Stable", "consumer", None, frozenset({"a", "rx-1", "rx-2"}), False
    )
    assert (
        rebuild_group("g", [meta, target, member848("m1", ["a"]), assignment848("m1", 4)]).state
        == "Reconciling"
    )
    assert (
        rebuild_group("g", [meta, target, member848("m1", ["a"]), assignment848("m1", 5, 1)]).state
        == "Reconciling"
    )
    older_target = kip848("ConsumerGroupTargetAssignmentMetadata", {}, {"AssignmentEpoch": 4})
    assert rebuild_group("g", [meta, older_target, member848("m1", ["a"])]).state == "Assigning"
    unresolved = rebuild_group("g", [meta, target, member848("m1", ["a"], "other.*"), assignment848("m1", 5)])
    assert unresolved.unresolved_regex and unresolved.subscribed_topics == frozenset({"a"})
    assert rebuild_group("g", [meta, target]) == GroupView(
        "g", GroupType.CONSUMER, "Empty", "consumer", None, frozenset()
    )


def test_rebuild_streams_and_share_groups() -> None:
    def opaque(type_name: str, key: dict[str, Any]) -> Fact:
        return fact_from_record(
            encode_key(type_name, {"GroupId": "g", **key}), encode_value(type_name, {"_raw": b"x"}, 0)
        )

    streams = opaque("StreamsGroupMetadata", {})
    member = opaque("StreamsGroupMemberMetadata", {"MemberId": "m"})
    assignment = opaque("StreamsGroupCurrentMemberAssignment", {"MemberId": "m"})
    topology = fact_from_record(
        encode_key("StreamsGroupTopology", {"GroupId": "g"}),
        encode_value("StreamsGroupTopology", TOPOLOGY, 0),
    )
    # Empty: nothing subscribed, whatever the topology (StreamsGroup.isSubscribedToTopic).
    assert rebuild_group("g", [streams, topology]) == GroupView(
        "g", GroupType.STREAMS, "Empty", "streams", None, frozenset()
    )
    # Members (type 19 or 22): the topology's source and repartition-source topics, not its changelogs,
    # sinks or regexes; a regex makes the rest unknown to the policy.
    for members in ([member], [assignment]):
        busy = rebuild_group("g", [streams, *members, topology])
        assert (busy.type, busy.state) == (GroupType.STREAMS, "Unknown")
        assert busy.subscribed_topics == frozenset({"orders", "customers", "app-rep"})
        assert busy.unresolved_regex
    # Without a topology record a live group is subscribed to nothing.
    assert rebuild_group("g", [streams, member]).subscribed_topics == frozenset()
    # A topology that does not decode: unknown, never "no topics".
    garbled = fact_from_record(encode_key("StreamsGroupTopology", {"GroupId": "g"}), b"\x00\x00\x01")
    assert garbled == Fact(23, "g")
    assert rebuild_group("g", [streams, member, garbled]).subscribed_topics is None
    assert rebuild_group("g", [opaque("ShareGroupMetadata", {})]).type is GroupType.SHARE
    # Empty, it became so when its newest live record was written (the epoch record that comes with the
    # last member's tombstones), as for a KIP-848 group: emptyGroupRetention and staleGroups count from there.
    emptied = rebuild_group("g", [streams._replace(record_timestamp=5_000), topology._replace(record_timestamp=3_000)])
    assert (emptied.state, emptied.current_state_timestamp) == ("Empty", 5_000)


TOPOLOGY = {
    "Epoch": 1,
    "Subtopologies": [
        {
            "SubtopologyId": "0",
            "SourceTopics": ["orders", "customers"],
            "SourceTopicRegex": ["audit-.*"],
            "StateChangelogTopics": [
                {"Name": "app-changelog", "Partitions": 0, "ReplicationFactor": 0, "TopicConfigs": []}
            ],
            "RepartitionSinkTopics": ["app-rep"],
            "RepartitionSourceTopics": [],
            "CopartitionGroups": [],
        },
        {
            "SubtopologyId": "1",
            "SourceTopics": [],
            "SourceTopicRegex": [],
            "StateChangelogTopics": [],
            "RepartitionSinkTopics": [],
            "RepartitionSourceTopics": [
                {"Name": "app-rep", "Partitions": 2, "ReplicationFactor": 0, "TopicConfigs": []}
            ],
            "CopartitionGroups": [],
        },
    ],
}
