"""Decoding bytes this project did not produce.

1. Records captured from real brokers and published in other decoders' test suites or bug reports
   (copied as data only, each with its source).
2. Hand-computed vectors: bytes written out field by field from Apache Kafka's message specs
   (group-coordinator/src/main/resources/common/message/*.json, clients' ConsumerProtocol*.json).

Each vector is decoded, compared with the values its source states, and re-encoded to the same bytes.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offsets_model.codec import (
    CodecError,
    decode_record,
    encode_record,
    subscription_topics,
)


def h(*parts: str) -> bytes:
    """Hex written in groups, one group per field."""
    return bytes.fromhex("".join(parts))


def s(text: str) -> str:
    """A classic (int16-length) string, as hex."""
    data = text.encode()
    return len(data).to_bytes(2, "big").hex() + data.hex()


def cs(text: str) -> str:
    """A compact (unsigned-varint length + 1) string shorter than 127 bytes, as hex."""
    data = text.encode()
    return (len(data) + 1).to_bytes(1, "big").hex() + data.hex()


def decoded_and_reencoded(key: bytes, value: bytes | None) -> dict[str, Any]:
    rec = decode_record(key, value)
    assert encode_record(rec) == (key, value)
    return rec


# ---------------------------------------------------------------------------------------------------
# 1a. kafkesc/konsumer_offsets, commit 52fcd348103311e916876754acb49245b138d124:
#     fixtures/tests/{offset_commit,group_metadata}/NN.{key,payload} are records read from the
#     __consumer_offsets topic of a development Kafka cluster with librdkafka consumers; the expected
#     values are that repository's NN.ts_int.fmt files.
# ---------------------------------------------------------------------------------------------------

KONSUMER_OFFSET_COMMITS = [
    # (fixture, key hex, payload hex, group, topic, partition, offset, commitTimestamp)
    (
        "offset_commit/01",
        "0001001a6976616e2d6578706572696d656e74616c2d636f6e73756d657200125f5f636f6e73756d65725f6f6666736574730000002e",
        "00030000000000017ce3ffffffff0000000001857ee1dbd0",
        "ivan-experimental-consumer", "__consumer_offsets", 46, 97507, 1672871009232,
    ),
    (
        "offset_commit/02",
        "0001001a6976616e2d6578706572696d656e74616c2d636f6e73756d657200125f5f636f6e73756d65725f6f6666736574730000002e",
        "00030000000000017d12ffffffff0000000001857ee1dc02",
        "ivan-experimental-consumer", "__consumer_offsets", 46, 97554, 1672871009282,
    ),
    (
        "offset_commit/03",
        "0001001b6b61666b6573632d646576636c75737465722d67726f75702d6964000374303100000000",
        "0003000000000000006affffffff00000000018579eff58c",
        "kafkesc-devcluster-group-id", "t01", 0, 106, 1672788047244,
    ),
    (
        "offset_commit/04",
        "0001001a6976616e2d6578706572696d656e74616c2d636f6e73756d657200125f5f636f6e73756d65725f6f6666736574730000002e",
        "00030000000000018356ffffffff0000000001857ee1e07c",
        "ivan-experimental-consumer", "__consumer_offsets", 46, 99158, 1672871010428,
    ),
    (
        "offset_commit/05",
        "0001001b6b61666b6573632d646576636c75737465722d67726f75702d6964000374303100000000",
        "00030000000000003b1effffffff0000000001857ede99f3",
        "kafkesc-devcluster-group-id", "t01", 0, 15134, 1672870795763,
    ),
]  # fmt: skip


@pytest.mark.parametrize("vector", KONSUMER_OFFSET_COMMITS, ids=[v[0] for v in KONSUMER_OFFSET_COMMITS])
def test_konsumer_offsets_offset_commits(vector: tuple[Any, ...]) -> None:
    _, key, payload, group, topic, partition, offset, commit_ts = vector
    rec = decoded_and_reencoded(bytes.fromhex(key), bytes.fromhex(payload))
    assert (rec["type"], rec["keyVersion"], rec["valueVersion"]) == ("OffsetCommit", 1, 3)
    assert rec["key"] == {"group": group, "topic": topic, "partition": partition}
    assert rec["value"] == {"offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": commit_ts}


KONSUMER_GROUP_KEY = (
    "0002001b6b61666b6573632d646576636c75737465722d67726f75702d6964"  # kafkesc-devcluster-group-id
)
RDKAFKA_LEADER = "rdkafka-9f4fc1b0-1d7d-4471-90e8-e0f64f3c9d9f"


def _rdkafka_member(member_id: str, partitions: list[int], topic: str = "t01") -> dict[str, Any]:
    # librdkafka sends ConsumerProtocolSubscription v1 with empty (not null) user data and no owned
    # partitions, and ConsumerProtocolAssignment v0.
    return {
        "memberId": member_id,
        "groupInstanceId": None,
        "clientId": "rdkafka",
        "clientHost": "/172.18.0.1",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": {"version": 1, "topics": [topic], "userData": b"", "ownedPartitions": []},
        "assignment": {
            "version": 0,
            "partitions": [{"topic": topic, "partitions": partitions}],
            "userData": b"",
        },
    }


def test_konsumer_offsets_group_metadata_01_stable_one_member() -> None:
    payload = (
        "00030008636f6e73756d657200000007000572616e6765002c72646b61666b612d39663466633162302d316437642d3434"
        "37312d393065382d653066363466336339643966000001857ee10d9500000001002c72646b61666b612d39663466633162"
        "302d316437642d343437312d393065382d653066363466336339643966ffff000772646b61666b61000b2f3137322e3138"
        "2e302e31000493e00000afc800000013000100000001000374303100000000000000000000001f00000000000100037430"
        "310000000300000000000000010000000200000000"
    )
    rec = decoded_and_reencoded(bytes.fromhex(KONSUMER_GROUP_KEY), bytes.fromhex(payload))
    assert rec["key"] == {"group": "kafkesc-devcluster-group-id"}
    assert rec["valueVersion"] == 3
    assert rec["value"] == {
        "protocolType": "consumer",
        "generation": 7,
        "protocol": "range",
        "leader": RDKAFKA_LEADER,
        "currentStateTimestamp": 1672870956437,
        "members": [_rdkafka_member(RDKAFKA_LEADER, [0, 1, 2])],
    }


def test_konsumer_offsets_group_metadata_03_fifty_partition_assignment() -> None:
    key = "0002001a6976616e2d6578706572696d656e74616c2d636f6e73756d6572"  # ivan-experimental-consumer
    payload = (
        "00030008636f6e73756d657200000001000572616e6765002c72646b61666b612d35373733363239322d663038642d3461"
        "62302d386138352d623939353165646262313365000001857ee0a29000000001002c72646b61666b612d35373733363239"
        "322d663038642d346162302d386138352d623939353165646262313365ffff000772646b61666b61000b2f3137322e3138"
        "2e302e31000493e00000afc80000002200010000000100125f5f636f6e73756d65725f6f6666736574730000000000000000"
        "000000ea00000000000100125f5f636f6e73756d65725f6f66667365747300000032000000000000000100000002000000"
        "030000000400000005000000060000000700000008000000090000000a0000000b0000000c0000000d0000000e0000000f"
        "000000100000001100000012000000130000001400000015000000160000001700000018000000190000001a0000001b00"
        "00001c0000001d0000001e0000001f000000200000002100000022000000230000002400000025000000260000002700000028"
        "000000290000002a0000002b0000002c0000002d0000002e0000002f000000300000003100000000"
    )
    rec = decoded_and_reencoded(bytes.fromhex(key), bytes.fromhex(payload))
    leader = "rdkafka-57736292-f08d-4ab0-8a85-b9951edbb13e"
    assert (rec["value"]["generation"], rec["value"]["leader"]) == (1, leader)
    assert rec["value"]["currentStateTimestamp"] == 1672870929040
    assert rec["value"]["members"] == [_rdkafka_member(leader, list(range(50)), topic="__consumer_offsets")]


def test_konsumer_offsets_group_metadata_04_two_members() -> None:
    payload = (
        "00030008636f6e73756d657200000006000572616e6765002c72646b61666b612d39663466633162302d316437642d3434"
        "37312d393065382d653066363466336339643966000001857ee0d2dc00000002002c72646b61666b612d39663466633162"
        "302d316437642d343437312d393065382d653066363466336339643966ffff000772646b61666b61000b2f3137322e3138"
        "2e302e31000493e00000afc8000000130001000000010003743031000000000000000000000017000000000001000374"
        "3031000000010000000200000000002c72646b61666b612d36666463343061652d323936622d346365342d386138622d"
        "366233666134633961393332ffff000772646b61666b61000b2f3137322e31382e302e31000493e00000afc800000013"
        "000100000001000374303100000000000000000000001b0000000000010003743031000000020000000000000001000000"
        "00"
    )
    rec = decoded_and_reencoded(bytes.fromhex(KONSUMER_GROUP_KEY), bytes.fromhex(payload))
    assert (rec["value"]["generation"], rec["value"]["currentStateTimestamp"]) == (6, 1672870941404)
    assert rec["value"]["members"] == [
        _rdkafka_member(RDKAFKA_LEADER, [2]),
        _rdkafka_member("rdkafka-6fdc40ae-296b-4ce4-8a8b-6b3fa4c9a932", [0, 1]),
    ]


def test_konsumer_offsets_group_metadata_05_empty_group() -> None:
    # The group after its last member left: no protocol, no leader (both null), no members.
    payload = "00030008636f6e73756d657200000008ffffffff000001857ee12e3800000000"
    rec = decoded_and_reencoded(bytes.fromhex(KONSUMER_GROUP_KEY), bytes.fromhex(payload))
    assert rec["value"] == {
        "protocolType": "consumer",
        "generation": 8,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": 1672870964792,
        "members": [],
    }


# ---------------------------------------------------------------------------------------------------
# 1b. Kafka 4.1.0 OffsetCommitValue v4, read from a real cluster's __consumer_offsets and posted in
#     twmb/franz-go issue #1105 ("Kafka 4.1.0 offset commit value decoding issue",
#     https://github.com/twmb/franz-go/issues/1105). franz-go's fix (PR #1109; its
#     generate/definitions/misc at commit adb3a18abe14bdb230f1cd738d03623301013d42) documents
#     "KAFKA-19141 ... included in 4.1.0 released version 4" with "TopicID: uuid // tag 0".
# ---------------------------------------------------------------------------------------------------


def test_kafka_4_1_writes_offset_commit_value_v4() -> None:
    value = bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600")
    key = h("0001", s("group"), s("topic"), "00000000")  # the issue shows the value only
    rec = decoded_and_reencoded(key, value)
    assert rec["valueVersion"] == 4
    # The issue's own reading: offset 2217128, leader epoch -1, then (once read as a compact string)
    # empty metadata and commit time 1758335260726; the final 00 is the empty tagged-field section.
    assert rec["value"] == {
        "offset": 2217128,
        "leaderEpoch": -1,
        "metadata": "",
        "commitTimestamp": 1758335260726,
    }


# ---------------------------------------------------------------------------------------------------
# 1c. linkedin/Burrow, commit ced55ba90f6b833a45a124d411fd5eef63a70933,
#     core/internal/consumer/kafka_client_test.go (Go string literals converted to hex).
# ---------------------------------------------------------------------------------------------------

BURROW_OFFSET_KEY = "000100097465737467726f7570000974657374746f7069630000000b"  # testgroup/testtopic/11
BURROW_GROUP_KEY = "000200097465737467726f7570"  # TestKafkaClient_processConsumerOffsetsMessage_Offset


def test_burrow_offset_commit_value_v0() -> None:
    # TestKafkaClient_processConsumerOffsetsMessage_Metadata: offset 8372, timestamp 1637.
    value = "000000000000000020b4000874657374646174610000000000000665"
    rec = decoded_and_reencoded(bytes.fromhex(BURROW_OFFSET_KEY), bytes.fromhex(value))
    assert rec["key"] == {"group": "testgroup", "topic": "testtopic", "partition": 11}
    assert (rec["valueVersion"], rec["value"]) == (
        0,
        {"offset": 8372, "metadata": "testdata", "commitTimestamp": 1637},
    )


def test_burrow_group_metadata_v1_with_empty_subscription_bytes() -> None:
    # TestKafkaClient_processConsumerOffsetsMessage_Offset: one member owning topic1 partition 11.
    value = (
        "00010008636f6e73756d657200000001000c7465737470726f746f636f6c000a746573746c6561646572000000010"
        "00c746573746d656d6265726964000c74657374636c69656e746964000e74657374636c69656e74686f737400000004"
        "00000008000000000000001a0000000000010006746f70696331000000010000000b00000000"
    )
    rec = decoded_and_reencoded(bytes.fromhex(BURROW_GROUP_KEY), bytes.fromhex(value))
    (m,) = rec["value"]["members"]
    assert (m["memberId"], m["clientId"], m["clientHost"]) == (
        "testmemberid",
        "testclientid",
        "testclienthost",
    )
    assert (m["rebalanceTimeout"], m["sessionTimeout"]) == (4, 8)
    # Zero subscription bytes are not a ConsumerProtocolSubscription: kept raw, as the broker keeps them.
    assert m["subscription"] == b""
    assert m["assignment"] == {
        "version": 0,
        "partitions": [{"topic": "topic1", "partitions": [11]}],
        "userData": b"",
    }


def test_burrow_group_metadata_v2() -> None:
    # TestKafkaClient_decodeMetadataValueHeaderV2 (the whole value, version included).
    value = (
        "00020008636f6e73756d657200000003000572616e6765002c744c65616465722d61343264326261612d626661612d34"
        "6239362d396561322d646565356634326232616232000001695f1c4a4a00000001002c744c65616465722d613432643262"
        "61612d626661612d346239362d396561322d6465653566343262326162320007744d656d626572000b2f3137322e31382e"
        "302e31000075300000753000000015000000000001000974657374746f706963000000000000003d00000000000100097465"
        "7374746f7069630000000900000000000000010000000200000003000000040000000500000006000000070000000800000000"
    )
    rec = decoded_and_reencoded(bytes.fromhex(BURROW_GROUP_KEY), bytes.fromhex(value))
    v = rec["value"]
    assert (v["protocolType"], v["generation"], v["protocol"]) == ("consumer", 3, "range")
    assert v["leader"] == "tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"
    assert v["currentStateTimestamp"] == 1552078883402
    (m,) = v["members"]
    assert m["subscription"] == {"version": 0, "topics": ["testtopic"], "userData": b""}
    assert m["assignment"]["partitions"] == [{"topic": "testtopic", "partitions": list(range(9))}]


def test_burrow_group_metadata_v3_static_member_fields() -> None:
    # TestKafkaClient_decodeMetadataValueHeaderV3 / decodeMetadataMemberV3: groupInstanceId null,
    # rebalanceTimeout -1, and an 18-byte "v1" subscription that stops after UserData.
    value = (
        "00030008636f6e73756d6572000000010012526f756e64526f62696e41737369676e6572002c744c65616465722d6134"
        "3264326261612d626661612d346239362d396561322d6465653566343262326162320000016cdf35076b00000001000"
        "66d656d626572ffff0006636c69656e74000d2f31302e31302e31302e313030ffffffff000075300000001200010000"
        "00010006746f70696331000000000000001a0001000000010006746f70696331000000010000000000000000"
    )
    rec = decoded_and_reencoded(bytes.fromhex(BURROW_GROUP_KEY), bytes.fromhex(value))
    v = rec["value"]
    assert (v["protocol"], v["currentStateTimestamp"]) == ("RoundRobinAssigner", 1567112890219)
    (m,) = v["members"]
    assert (m["memberId"], m["groupInstanceId"], m["rebalanceTimeout"]) == ("member", None, -1)
    # A v1 subscription needs OwnedPartitions: the full decode fails and the bytes stay raw, but the
    # coordinator reads only the v0 prefix and still learns the member's topics.
    assert m["subscription"] == bytes.fromhex("0001000000010006746f7069633100000000")
    assert subscription_topics(m["subscription"]) == ["topic1"]
    assert m["assignment"] == {
        "version": 1,
        "partitions": [{"topic": "topic1", "partitions": [0]}],
        "userData": b"",
    }


def test_burrow_v4_vector_lacks_the_tagged_field_section_kafka_writes() -> None:
    # TestKafkaClient_decodeKeyAndOffset_ValueVersion4 builds a v4 value by hand without the trailing
    # tagged-field count. Kafka's generated reader needs it (compare the 4.1.0 bytes above, ending 00),
    # so the value is truncated, and the error says where.
    value = "000400000000000020b4000000000974657374646174610000000000000665"
    with pytest.raises(CodecError) as err:
        decode_record(bytes.fromhex(BURROW_OFFSET_KEY), bytes.fromhex(value))
    assert (err.value.part, err.value.offset) == ("value", 31)
    assert "tagged-field count" in str(err.value)
    rec = decoded_and_reencoded(bytes.fromhex(BURROW_OFFSET_KEY), bytes.fromhex(value + "00"))
    assert rec["value"] == {"offset": 8372, "leaderEpoch": 0, "metadata": "testdata", "commitTimestamp": 1637}


@pytest.mark.parametrize(
    ("key", "value", "part", "offset"),
    [
        # TestKafkaClient_processConsumerOffsetsMessage_Errors: a one-byte key.
        ("00", "000000000000000020b4000874657374646174610000000000000665", "key", 0),
        # decodeKeyAndOffsetErrors: a one-byte value, and a key cut inside the topic.
        (BURROW_OFFSET_KEY, "00", "value", 0),
        ("000100097465737467726f7570000974657374", "00000000000000000001000000000000000000", "key", 15),
        # decodeGroupMetadataErrors: a GroupMetadataValue cut inside protocolType.
        (BURROW_GROUP_KEY, "0001000874657374", "value", 4),
    ],
)
def test_burrow_truncated_records_name_the_part_and_byte(
    key: str, value: str, part: str, offset: int
) -> None:
    with pytest.raises(CodecError) as err:
        decode_record(bytes.fromhex(key), bytes.fromhex(value))
    assert (err.value.part, err.value.offset) == (part, offset)
    assert "truncated" in str(err.value)


def test_burrow_key_type_3_is_a_kip_848_record_now() -> None:
    # Burrow's "bad key version" vector uses record type 3, which KIP-848 made ConsumerGroupMetadata.
    # Kafka's reader (CoordinatorRecordSerde.readMessage) reads the key's and value's fields and ignores
    # what follows; the codec keeps those bytes under _trailing so nothing is lost.
    key = "00030009" + b"testgroup".hex() + "0009" + b"testtopic".hex() + "0000000b"
    value = "000000000000000020b4000874657374646174610000000000000665"
    rec = decoded_and_reencoded(bytes.fromhex(key), bytes.fromhex(value))
    assert rec["type"] == "ConsumerGroupMetadata" and rec["key"]["GroupId"] == "testgroup"
    assert rec["value"]["Epoch"] == 0 and rec["value"]["_trailing"] == bytes.fromhex(value)[7:]


# ---------------------------------------------------------------------------------------------------
# 2. Hand-computed vectors from the message specs.
# ---------------------------------------------------------------------------------------------------

T0 = "0000019aa4b64500"  # 1763700000000
T1 = "0000019aa9dca100"  # 1763786400000 (T0 + 1 day)
UUID = "ab9132daf8f14b7bbfd557bc5e1d24ce"  # Kafka prints it as q5Ey2vjxS3u_1Ve8Xh0kzg
KEY_APP_LOGS_3 = h(
    "0001",  # record type 1 (OffsetCommitKey, written by Kafka 0.9+)
    s("app"),  # group: int16 length 3, "app"
    s("logs"),  # topic
    "00000003",  # partition 3
)


def test_offset_commit_v1_with_expire_timestamp() -> None:
    value = h(
        "0001",  # value version 1 (OffsetCommitValue.json: expireTimestamp "versions": "1")
        "000000000000002a",  # offset 42
        s("ok"),  # metadata
        T0,  # commitTimestamp
        T1,  # expireTimestamp
    )
    rec = decoded_and_reencoded(KEY_APP_LOGS_3, value)
    assert rec["value"] == {"offset": 42, "metadata": "ok", "commitTimestamp": 1763700000000,
                            "expireTimestamp": 1763786400000}  # fmt: skip


def test_offset_commit_key_type_0_is_the_legacy_key_with_the_same_fields() -> None:
    key = h("0000", s("app"), s("logs"), "00000003")
    value = h("0000", "000000000000002a", s(""), T0)  # v0: offset, metadata, commitTimestamp
    rec = decoded_and_reencoded(key, value)
    assert (rec["type"], rec["keyVersion"], rec["valueVersion"]) == ("OffsetCommit", 0, 0)
    assert rec["key"] == {"group": "app", "topic": "logs", "partition": 3}


def test_offset_commit_v4_with_topic_id() -> None:
    value = h(
        "0004",  # value version 4, the first flexible one
        "000000000000002a",  # offset
        "00000007",  # leaderEpoch 7 (v3+)
        cs("ok"),  # metadata: compact string, varint length+1 = 3
        T0,  # commitTimestamp
        "01",  # one tagged field
        "00",  # tag 0: topicId
        "10",  # 16 bytes
        UUID,
    )
    rec = decoded_and_reencoded(KEY_APP_LOGS_3, value)
    assert rec["value"] == {"offset": 42, "leaderEpoch": 7, "metadata": "ok", "commitTimestamp": 1763700000000,
                            "topicId": "q5Ey2vjxS3u_1Ve8Xh0kzg"}  # fmt: skip


def test_group_metadata_v4_flexible_with_tags() -> None:
    sub = h("0000", "00000001", s("logs"), "ffffffff")  # ConsumerProtocolSubscription v0, null user data
    asg = h("0000", "00000001", s("logs"), "00000001", "00000003", "ffffffff")  # assignment v0: logs-3
    value = h(
        "0004",  # GroupMetadataValue v4 (flexible since KIP-915)
        cs("consumer"),  # protocolType
        "00000005",  # generation 5
        cs("range"),  # protocol
        "00",  # leader: compact null
        T0,  # currentStateTimestamp (v2+)
        "02",  # members: compact array of 1
        cs("m-1"),  # memberId
        "00",  # groupInstanceId: null (v3+)
        cs("c"),  # clientId
        cs("/h"),  # clientHost
        "000493e0",  # rebalanceTimeout 300000 (v1+)
        "0000afc8",  # sessionTimeout 45000
        f"{len(sub) + 1:02x}" + sub.hex(),  # subscription: compact bytes
        f"{len(asg) + 1:02x}" + asg.hex(),  # assignment
        "01" + "05" + "01" + "ee",  # member's tagged fields: 1 field, unknown tag 5, 1 byte, 0xee
        "00",  # value's tagged fields: none
    )
    rec = decoded_and_reencoded(h("0002", s("app")), value)
    v = rec["value"]
    assert (v["protocolType"], v["generation"], v["protocol"], v["leader"]) == ("consumer", 5, "range", None)
    (m,) = v["members"]
    assert m["_unknownTaggedFields"] == {"5": b"\xee"}
    assert m["subscription"] == {"version": 0, "topics": ["logs"], "userData": None}
    assert m["assignment"] == {
        "version": 0,
        "partitions": [{"topic": "logs", "partitions": [3]}],
        "userData": None,
    }


def test_consumer_subscription_v3_every_field() -> None:
    sub = h(
        "0003",  # ConsumerProtocolSubscription version 3
        "00000002" + s("a") + s("b"),  # Topics: int32 count, strings
        "00000002" + "cafe",  # UserData: int32 length, bytes
        "00000001" + s("a") + "00000001" + "00000000",  # OwnedPartitions: a-0 (v1+)
        "00000004",  # GenerationId 4 (v2+)
        s("r1"),  # RackId (v3+)
    )
    value = h("0003", s("consumer"), "00000004", s("range"), s("m"), T0, "00000001",
              s("m"), "ffff", s("c"), s("/h"), "ffffffff", "0000afc8",
              f"{len(sub):08x}", sub.hex(), "00000000")  # fmt: skip
    rec = decoded_and_reencoded(h("0002", s("g")), value)
    (m,) = rec["value"]["members"]
    assert m["subscription"] == {"version": 3, "topics": ["a", "b"], "userData": b"\xca\xfe",
                                 "ownedPartitions": [{"topic": "a", "partitions": [0]}], "generationId": 4,
                                 "rackId": "r1"}  # fmt: skip
    assert m["assignment"] == b""  # 0 bytes: not an assignment, kept raw


def test_consumer_group_member_metadata_with_classic_member_metadata() -> None:
    protocol_metadata = "0000000000010001610000000000"  # any bytes; kept as they are
    value = h(
        "0000",  # ConsumerGroupMemberMetadataValue v0 (flexible)
        "00",  # InstanceId: null
        cs("rack-a"),  # RackId
        cs("c"),  # ClientId
        cs("/h"),  # ClientHost
        "03" + cs("a") + cs("b"),  # SubscribedTopicNames: compact array of 2
        "00",  # SubscribedTopicRegex: null
        "0000ea60",  # RebalanceTimeoutMs 60000
        "00",  # ServerAssignor: null
        "01",  # one tagged field
        "00",  # tag 0: ClassicMemberMetadata
        f"{1 + 4 + 1 + 6 + 1 + 14 + 1 + 1:02x}",  # its size: the 29 bytes below
        "01",  # presence marker (an unsigned varint inside a tagged field)
        "0000afc8",  # SessionTimeoutMs 45000
        "02",  # SupportedProtocols: 1
        cs("range"),  # Name
        "0f" + protocol_metadata,  # Metadata: compact bytes, 14 bytes
        "00",  # ClassicProtocol tagged fields
        "00",  # ClassicMemberMetadata tagged fields
        "00",  # value tagged fields
    )
    key = h("0005", s("g"), s("member-1"))  # ConsumerGroupMemberMetadataKey: GroupId, MemberId
    rec = decoded_and_reencoded(key, value)
    assert rec["key"] == {"GroupId": "g", "MemberId": "member-1"}
    assert rec["value"]["SubscribedTopicNames"] == ["a", "b"]
    assert rec["value"]["ClassicMemberMetadata"] == {
        "SessionTimeoutMs": 45000,
        "SupportedProtocols": [{"Name": "range", "Metadata": bytes.fromhex(protocol_metadata)}],
    }


def test_consumer_group_current_member_assignment() -> None:
    value = h(
        "0000",  # ConsumerGroupCurrentMemberAssignmentValue v0
        "0000000a",  # MemberEpoch 10
        "00000009",  # PreviousMemberEpoch 9
        "01",  # State (int8)
        "02" + UUID + "03" + "00000000" + "00000001" + "00",  # AssignedPartitions: [uuid: 0, 1], tags
        "01",  # PartitionsPendingRevocation: []
        "00",  # tagged fields
    )
    rec = decoded_and_reencoded(h("0008", s("g"), s("m")), value)
    assert rec["value"] == {
        "MemberEpoch": 10,
        "PreviousMemberEpoch": 9,
        "State": 1,
        "AssignedPartitions": [{"TopicId": "q5Ey2vjxS3u_1Ve8Xh0kzg", "Partitions": [0, 1]}],
        "PartitionsPendingRevocation": [],
    }


def test_consumer_group_regular_expression() -> None:
    key = h("0010", s("g"), s("orders-.*"))  # type 16: GroupId, RegularExpression
    value = h("0000", "03", cs("orders-eu"), cs("orders-us"), "00000000000004d2", T0, "00")
    rec = decoded_and_reencoded(key, value)
    assert rec["key"] == {"GroupId": "g", "RegularExpression": "orders-.*"}
    assert rec["value"] == {"Topics": ["orders-eu", "orders-us"], "Version": 1234, "Timestamp": 1763700000000}


def test_consumer_group_metadata_with_kip_1101_hash() -> None:
    value = h(
        "0000",  # ConsumerGroupMetadataValue v0
        "0000002a",  # Epoch 42
        "01",  # one tagged field
        "00",  # tag 0: MetadataHash (KIP-1101)
        "08",  # 8 bytes
        "fffffffffffffff9",  # -7
    )
    rec = decoded_and_reencoded(h("0003", s("g")), value)
    assert rec["value"] == {"Epoch": 42, "MetadataHash": -7}


@pytest.mark.parametrize(
    ("type_id", "name", "member"),
    [(9, "ShareGroupPartitionMetadata", False), (10, "ShareGroupMemberMetadata", True),
     (15, "ShareGroupStatePartitionMetadata", False), (17, "StreamsGroupMetadata", False),
     (19, "StreamsGroupMemberMetadata", True), (22, "StreamsGroupCurrentMemberAssignment", True),
     (24, "StreamsGroupTargetAssignmentResolvedTopicIds", False)],
)  # fmt: skip
def test_share_and_streams_keys_decode_and_values_stay_raw(type_id: int, name: str, member: bool) -> None:
    key = h(f"{type_id:04x}", s("g"), s("m") if member else "")
    value = h("0000", "0000002a00")  # whatever the value holds, it is kept as bytes
    rec = decoded_and_reencoded(key, value)
    assert rec["type"] == name and rec["unsupported"] is True
    assert rec["key"] == ({"GroupId": "g", "MemberId": "m"} if member else {"GroupId": "g"})
    assert rec["value"] == {"_raw": bytes.fromhex("0000002a00")}


def test_streams_group_topology_value_v0_by_hand() -> None:
    """StreamsGroupTopologyValue v0 (Kafka 4.1/4.2, flexible), written byte by byte from its JSON spec:
    Epoch, then Subtopologies[{SubtopologyId, SourceTopics, SourceTopicRegex, StateChangelogTopics,
    RepartitionSinkTopics, RepartitionSourceTopics[TopicInfo], CopartitionGroups[int16 indexes]}]."""
    value = h(
        "0000",  # value version 0
        "00000007",  # Epoch 7
        "02",  # one subtopology
        cs("1"),  # SubtopologyId
        "02",
        cs("orders"),  # SourceTopics
        "01",  # SourceTopicRegex: none
        "01",  # StateChangelogTopics: none
        "01",  # RepartitionSinkTopics: none
        "02",
        cs("app-rep"),
        "00000004",
        "ffff",
        "01",
        "00",  # RepartitionSourceTopics: one TopicInfo
        "02",
        "02",
        "0000",
        "01",
        "02",
        "0000",
        "00",  # CopartitionGroups: {[0], [], [0]}
        "00",  # subtopology tags
        "00",  # value tags
    )
    rec = decoded_and_reencoded(h("0017", s("app")), value)
    assert rec["type"] == "StreamsGroupTopology" and "unsupported" not in rec
    [sub] = rec["value"]["Subtopologies"]
    assert rec["value"]["Epoch"] == 7
    assert sub["SourceTopics"] == ["orders"]
    assert sub["RepartitionSourceTopics"] == [
        {"Name": "app-rep", "Partitions": 4, "ReplicationFactor": -1, "TopicConfigs": []}
    ]
    assert sub["CopartitionGroups"] == [
        {"SourceTopics": [0], "SourceTopicRegex": [], "RepartitionSourceTopics": [0]}
    ]


def test_unknown_record_type_and_value_version_are_errors_at_byte_0() -> None:
    with pytest.raises(CodecError, match="unknown record type 25") as err:
        decode_record(h("0019", s("g")), None)
    assert (err.value.part, err.value.offset) == ("key", 0)
    with pytest.raises(
        CodecError, match=r"unknown OffsetCommitValue version 5 \(known versions 0..4\)"
    ) as err:
        decode_record(KEY_APP_LOGS_3, h("0005", "00" * 30))
    assert (err.value.part, err.value.offset) == ("value", 0)
