"""encode -> decode -> encode is byte-identical for every record type and value version, and the decoded
dict is exactly the one we started from (nothing dropped, nothing invented)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from codec_samples import (
    OFFSET_KEY,
    OFFSET_VALUES,
    T0,
    TOPIC_ID,
    all_records,
    assignment,
    consumer_protocol_bytes,
    group_value,
    member,
    record,
    subscription,
)

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    RECORD_TYPES,
    CodecError,
    decode_consumer_protocol,
    decode_record,
    encode_consumer_protocol,
    encode_key,
    encode_record,
    encode_value,
    offset_commit,
    subscription_topics,
    to_jsonable,
)
from kafka_offsets_model.codec.records import decode_record_generic

RECORDS = all_records()


def _roundtrip(rec: dict[str, Any]) -> tuple[bytes, bytes | None, dict[str, Any]]:
    key, value = encode_record(rec)
    decoded = decode_record(key, value)
    assert encode_record(decoded) == (key, value)
    return key, value, decoded


def _json_shape(rec: dict[str, Any]) -> Any:
    return json.loads(json.dumps(to_jsonable(rec)))


@pytest.mark.parametrize("rec", [r for _, r in RECORDS], ids=[i for i, _ in RECORDS])
def test_every_record_round_trips_byte_for_byte(rec: dict[str, Any]) -> None:
    key, value, decoded = _roundtrip(rec)
    assert _json_shape(decoded) == _json_shape(rec)
    # The JSON the CLI prints (bytes as hex) encodes back to the same bytes.
    assert encode_record(_json_shape(decoded)) == (key, value)
    assert decode_record_generic(key, value) == decoded


def test_the_catalogue_covers_every_record_type_and_value_version() -> None:
    seen = {(r["keyVersion"], r["valueVersion"]) for _, r in RECORDS}
    assert {k for k, _ in seen} == set(RECORD_TYPES)
    assert {(k, v) for k, v in seen if k in (0, 1)} >= {(k, v) for k in (0, 1) for v in (0, 1, 2, 3, 4, None)}
    assert {v for k, v in seen if k == 2} == {0, 1, 2, 3, 4, None}


@pytest.mark.parametrize("version", range(5))
def test_offset_commit_value_has_exactly_its_versions_fields(version: int) -> None:
    _, _, decoded = _roundtrip(record("OffsetCommit", 1, OFFSET_KEY, version, OFFSET_VALUES[version]))
    expected = {"offset", "metadata", "commitTimestamp"}
    expected |= {"expireTimestamp"} if version == 1 else set()
    expected |= {"leaderEpoch"} if version >= 3 else set()
    expected |= {"topicId"} if version == 4 else set()
    assert set(decoded["value"]) == expected


def test_fields_a_version_lacks_are_not_written() -> None:
    # leaderEpoch given to a v1 value and expireTimestamp to a v3 value are simply not part of those layouts.
    v1 = encode_value("OffsetCommit", {**OFFSET_VALUES[1], "leaderEpoch": 9}, 1)
    v3 = encode_value("OffsetCommit", {**OFFSET_VALUES[3], "expireTimestamp": 9}, 3)
    assert v1 == encode_value("OffsetCommit", OFFSET_VALUES[1], 1)
    assert v3 == encode_value("OffsetCommit", OFFSET_VALUES[3], 3)


def test_v4_without_topic_id_leaves_the_tag_out_like_kafka() -> None:
    value = {k: v for k, v in OFFSET_VALUES[4].items() if k != "topicId"}
    raw = encode_value("OffsetCommit", value, 4)
    assert raw.endswith(b"\x00")  # empty tagged-field section
    assert "topicId" not in decode_record(encode_key("OffsetCommit", OFFSET_KEY), raw)["value"]


def test_v4_topic_id_is_tag_0_holding_16_bytes() -> None:
    raw = encode_value("OffsetCommit", OFFSET_VALUES[4], 4)
    # ... commitTimestamp, then 1 tagged field: tag 0, size 16, the uuid.
    assert raw[-19:-16] == b"\x01\x00\x10"
    assert decode_record(encode_key("OffsetCommit", OFFSET_KEY), raw)["value"]["topicId"] == TOPIC_ID


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_members_keep_every_field_of_their_version(version: int) -> None:
    _, _, decoded = _roundtrip(record("GroupMetadata", 2, {"group": "g"}, version, group_value(version)))
    value = decoded["value"]
    assert ("currentStateTimestamp" in value) == (version >= 2)
    first = value["members"][0]
    assert ("groupInstanceId" in first) == (version >= 3)
    assert ("rebalanceTimeout" in first) == (version >= 1)
    assert isinstance(first["subscription"], dict) and isinstance(first["assignment"], dict)


@pytest.mark.parametrize("version", range(4))
def test_consumer_subscription_and_assignment_versions(version: int) -> None:
    for kind, schema, expected in (
        ("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION, subscription(version)),
        ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT, assignment(version)),
    ):
        raw = consumer_protocol_bytes(kind, version)
        decoded = decode_consumer_protocol(schema, raw, kind)
        assert decoded == expected
        assert encode_consumer_protocol(schema, decoded, kind) == raw
    value = group_value(3, members=1)
    value["members"][0] = {
        **member(3, version),
        "subscription": subscription(version),
        "assignment": assignment(version),
    }
    _, _, decoded_record = _roundtrip(record("GroupMetadata", 2, {"group": "g"}, 3, value))
    assert decoded_record["value"]["members"][0]["subscription"]["version"] == version


def test_newer_consumer_protocol_versions_parse_with_the_newest_layout_and_keep_the_rest() -> None:
    # ConsumerProtocol.java reads versions it does not know with its newest layout; whatever a future
    # version appends is kept so the member bytes re-encode unchanged.
    v3 = consumer_protocol_bytes("subscription", 3)
    v5 = b"\x00\x05" + v3[2:] + b"\xca\xfe"
    decoded = decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, v5, "subscription")
    assert decoded["version"] == 5 and decoded["rackId"] == "rack-a" and decoded["_trailing"] == b"\xca\xfe"
    assert encode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, decoded, "subscription") == v5


def test_member_bytes_of_other_protocol_types_stay_raw() -> None:
    value = group_value(3, protocol_type="connect")
    connect_metadata = b"\x00\x01\x00\x0fhttp://w1:8083/" + (12).to_bytes(8, "big") + b"\xff\xff\xff\xff"
    for m in value["members"]:
        m["subscription"] = connect_metadata
        m["assignment"] = b""
    _, _, decoded = _roundtrip(record("GroupMetadata", 2, {"group": "connect-cluster"}, 3, value))
    assert decoded["value"]["members"][0]["subscription"] == connect_metadata
    assert decoded["value"]["members"][0]["assignment"] == b""


def test_consumer_member_bytes_that_do_not_parse_stay_raw() -> None:
    # The broker treats such a group's subscription as unknown; the codec keeps the bytes as they are.
    value = group_value(3, members=1)
    value["members"][0]["subscription"] = b"\x00"
    value["members"][0]["assignment"] = b"\x00\x00\x00\x00\x00\x05"
    _, _, decoded = _roundtrip(record("GroupMetadata", 2, {"group": "g"}, 3, value))
    assert decoded["value"]["members"][0]["subscription"] == b"\x00"


def test_subscription_topics_reads_the_v0_prefix_like_the_coordinator() -> None:
    # ClassicGroup.computeSubscribedTopics reads the version, then only the v0 fields (Topics, UserData):
    # a v1 subscription cut off before its OwnedPartitions still names its topics for the broker.
    v1 = consumer_protocol_bytes("subscription", 1)
    cut = v1[: 2 + 4 + 2 + len("orders") + 2 + len("payments") + 4 + 2]
    with pytest.raises(CodecError):
        decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, cut, "subscription")
    assert subscription_topics(v1) == subscription_topics(cut) == ["orders", "payments"]
    assert subscription_topics(subscription(3)) == ["orders", "payments"]
    with pytest.raises(CodecError):
        subscription_topics(b"\xff\xff\x00\x00\x00\x00")


def test_unknown_tagged_fields_are_kept_in_every_flexible_struct() -> None:
    unknown = {"5": b"\x01\x02", "100": b""}
    offset = record("OffsetCommit", 1, OFFSET_KEY, 4, {**OFFSET_VALUES[4], "_unknownTaggedFields": unknown})
    group = record("GroupMetadata", 2, {"group": "g"}, 4, group_value(4))
    group["value"]["_unknownTaggedFields"] = {"0": b"\xaa"}
    group["value"]["members"][1]["_unknownTaggedFields"] = {"3": b"\xbb\xcc"}
    member_metadata = record(
        "ConsumerGroupMemberMetadata",
        5,
        {"GroupId": "g", "MemberId": "m"},
        0,
        {
            "InstanceId": None,
            "RackId": None,
            "ClientId": "c",
            "ClientHost": "h",
            "SubscribedTopicNames": ["t"],
            "SubscribedTopicRegex": None,
            "RebalanceTimeoutMs": -1,
            "ServerAssignor": None,
            "ClassicMemberMetadata": {
                "SessionTimeoutMs": 1,
                "SupportedProtocols": [],
                "_unknownTaggedFields": {"9": b"\x07"},
            },
            "_unknownTaggedFields": {"1": b"\x08"},
        },
    )
    for rec in (offset, group, member_metadata):
        _, _, decoded = _roundtrip(rec)
        assert _json_shape(decoded) == _json_shape(rec)


def test_known_tags_out_of_order_are_read_as_kafka_reads_them() -> None:
    # Kafka's writers sort tags; its readers accept any order. ConsumerGroupMetadataValue with tags 1, 0.
    in_order = encode_value("ConsumerGroupMetadata", {"Epoch": 1, "MetadataHash": 2, "CreationTimeMs": 3}, 0)
    tag0, tag1 = b"\x00\x08" + (2).to_bytes(8, "big"), b"\x01\x08" + (3).to_bytes(8, "big")
    assert in_order == b"\x00\x00" + (1).to_bytes(4, "big") + b"\x02" + tag0 + tag1
    swapped = b"\x00\x00" + (1).to_bytes(4, "big") + b"\x02" + tag1 + tag0
    decoded = decode_record(encode_key("ConsumerGroupMetadata", {"GroupId": "g"}), swapped)
    assert decoded["value"] == {"Epoch": 1, "MetadataHash": 2, "CreationTimeMs": 3}


def test_trailing_bytes_are_kept_because_kafka_ignores_them() -> None:
    key, value = offset_commit("g", "t", 0, offset=1, commit_timestamp=T0)
    decoded = decode_record(key + b"\x01", value + b"\x02\x03")
    assert decoded["key"]["_trailing"] == b"\x01"
    assert decoded["value"]["_trailing"] == b"\x02\x03"
    assert encode_record(decoded) == (key + b"\x01", value + b"\x02\x03")


def test_tombstones_are_first_class() -> None:
    for _, rec in RECORDS:
        if rec["value"] is None:
            key, value = encode_record(rec)
            assert value is None
            assert decode_record(key, None)["valueVersion"] is None


def test_unsupported_records_keep_their_key_fields_and_raw_value() -> None:
    for _, rec in RECORDS:
        if rec.get("unsupported"):
            key, value = encode_record(rec)
            decoded = decode_record(key, value)
            assert decoded["unsupported"] is True
            assert decoded["key"] == rec["key"]


def test_fields_missing_from_a_dict_get_kafkas_defaults() -> None:
    # Generator FieldSpec.fieldDefault: "default" when given, "" for strings without one (even nullable
    # ones), null only for "default": "null".
    key = encode_key("GroupMetadata", {"group": "g"})
    value = decode_record(key, encode_value("GroupMetadata", {"protocolType": "", "generation": 0}, 3))[
        "value"
    ]
    assert value == {"protocolType": "", "generation": 0, "protocol": "", "leader": "",
                     "currentStateTimestamp": -1, "members": []}  # fmt: skip
    offset = decode_record(
        encode_key("OffsetCommit", OFFSET_KEY), encode_value("OffsetCommit", {"offset": 1, "metadata": "",
                                                                               "commitTimestamp": 2}, 3)
    )["value"]  # fmt: skip
    assert offset["leaderEpoch"] == -1
    member = {"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 1,
              "subscription": b"", "assignment": b""}  # fmt: skip
    value = decode_record(
        key, encode_value("GroupMetadata", {"protocolType": "x", "generation": 1, "members": [member]}, 3)
    )["value"]
    assert value["members"][0]["groupInstanceId"] is None and value["members"][0]["rebalanceTimeout"] == -1
    with pytest.raises(CodecError, match=r"value\.offset: missing \(required in version 3\)"):
        encode_value("OffsetCommit", {"metadata": "", "commitTimestamp": 2}, 3)
