"""How the group coordinator reads a classic member's subscription bytes (item 7 of issue 11), byte by
byte: ClassicGroup.computeSubscribedTopics reads the version with ConsumerProtocol.deserializeVersion and
ignores it, then the version-0 fields with the generated ConsumerProtocolSubscription reader."""

from __future__ import annotations

import json

import pytest

from kafka_offsets_model.codec import (
    SubscriptionError,
    decode_record,
    encode_record,
    group_metadata,
    subscription_topics,
    to_jsonable,
)
from offset_expiry.facts import classic_subscribed_topics


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


def s(text: str) -> str:
    data = text.encode()
    return len(data).to_bytes(2, "big").hex() + data.hex()


ORDERS = h("00000001", s("orders"))  # topics: ["orders"]


@pytest.mark.parametrize(
    ("raw", "topics"),
    [
        (h("0000") + ORDERS + h("ffffffff"), ["orders"]),  # v0, null user data
        (h("ffff") + ORDERS + h("ffffffff"), ["orders"]),  # a negative version is read and ignored
        (h("7fff") + ORDERS + h("00000000"), ["orders"]),  # so is one far ahead of Kafka's
        (h("0001") + ORDERS + h("fffffffe"), ["orders"]),  # any negative user-data length is null
        (h("0001") + ORDERS + h("80000000"), ["orders"]),
        (h("0003") + ORDERS + h("00000002", "abcd", "00000000"), ["orders"]),  # v3 fields after: ignored
        (h("0000", "00000001", "0003", "6fff72") + h("ffffffff"), ["o\ufffdr"]),  # not UTF-8: replaced
        (h("0000", "00000000", "ffffffff"), []),
    ],
)
def test_what_kafka_reads(raw: bytes, topics: list[str]) -> None:
    assert subscription_topics(raw) == topics


@pytest.mark.parametrize(
    ("raw", "offset", "schema_error"),
    [
        # BufferUnderflowException -> SchemaException: computeSubscribedTopics makes them unknown.
        (h("00"), 0, True),
        (h("0000", "0000"), 2, True),
        (h("0000") + ORDERS, 2 + 4 + 8, True),  # no user data length
        (h("0000", "00000001", "00"), 6, True),  # topic length cut
        # Other RuntimeExceptions of the generated reader: not caught, Kafka fails the load.
        (h("0000", "ffffffff", "ffffffff"), 2, False),  # "non-nullable field topics was serialized as null"
        (h("0000", "00000009", "ffffffff"), 2, False),  # "Tried to allocate a collection of size 9"
        (h("0000", "00000001", "ffff", "ffffffff"), 6, False),  # a null topic name
        (h("0000", "00000001", "0009", "6f72") + h("00000000"), 6, False),  # name past the end
        (h("0000") + ORDERS + h("00000005", "00"), 14, False),  # user data past the end
    ],
)
def test_what_kafka_cannot_read(raw: bytes, offset: int, schema_error: bool) -> None:
    with pytest.raises(SubscriptionError) as err:
        subscription_topics(raw)
    assert (err.value.part, err.value.offset, err.value.schema_error) == (
        "subscription",
        offset,
        schema_error,
    )


def test_the_analysis_reads_a_group_as_kafka_does() -> None:
    lenient = h("ffff") + ORDERS + h("fffffffe")
    member = {"memberId": "m", "subscription": lenient}
    assert classic_subscribed_topics("consumer", "range", [member]) == ("orders",)
    broken = {"memberId": "n", "subscription": h("0000", "ffffffff", "ffffffff")}
    assert classic_subscribed_topics("consumer", "range", [member, broken]) is None


def test_embedded_bytes_that_stay_raw_say_why_and_what_kafka_reads() -> None:
    """Issue 11 item 9: a member's subscription/assignment that does not decode in full is kept as bytes,
    with the reason and the byte next to it (and re-encodes unchanged: encoding ignores the note)."""
    member = {
        "memberId": "m",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "h",
        "rebalanceTimeout": 1,
        "sessionTimeout": 1,
        "subscription": h("ffff") + ORDERS + h("fffffffe"),
        "assignment": h("0000", "00000009"),
    }
    broken = {**member, "memberId": "n", "subscription": h("0000", "ffffffff", "ffffffff"), "assignment": b""}
    cut = {**member, "memberId": "o", "subscription": h("0000", "0000"), "assignment": b""}
    key, value = group_metadata(
        "g",
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader="m",
        current_state_timestamp=5,
        members=[member, broken, cut],
    )
    rec = decode_record(key, value)
    m, n, o = rec["value"]["members"]
    assert m["subscription"] == member["subscription"]
    assert m["_subscriptionError"] == {
        "error": "negative ConsumerProtocolSubscription version -1",
        "byte": 0,
        "coordinator": {"topics": ["orders"]},
    }
    assert m["_assignmentError"] == {
        "error": "truncated: ConsumerProtocolAssignment.partitions claims 9 elements, only 0 bytes left",
        "byte": 2,
    }
    assert n["_subscriptionError"]["coordinator"] == (
        "reader error at byte 2: Kafka fails to load the partition"
    )
    assert o["_subscriptionError"]["coordinator"] == (
        "SchemaException at byte 2: the group's subscriptions are unknown"
    )
    assert encode_record(json.loads(json.dumps(to_jsonable(rec)))) == (key, value)
