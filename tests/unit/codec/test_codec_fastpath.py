"""The OffsetCommit fast path returns exactly what the schema interpreter returns, for every version,
and leaves everything else (errors included) to the interpreter."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from schema_strategies import TEXT, UUIDS

from kafka_offsets_model.codec import CodecError, decode_record, encode_key, encode_value
from kafka_offsets_model.codec.fastpath import offset_commit_record
from kafka_offsets_model.codec.records import decode_record_generic

EXAMPLES = int(os.environ.get("CODEC_FUZZ_EXAMPLES", "300"))
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# Metadata longer than 126 bytes needs a two-byte varint in v4: the fast path hands it over.
METADATA = TEXT | st.text(min_size=120, max_size=200)


@st.composite
def offset_commits(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    key = encode_key(
        "OffsetCommit",
        {"group": draw(TEXT), "topic": draw(TEXT), "partition": draw(INT32)},
        draw(st.sampled_from([0, 1])),
    )
    if draw(st.integers(0, 9)) == 0:
        return key, None
    version = draw(st.integers(0, 4))
    value: dict[str, Any] = {
        "offset": draw(INT64),
        "metadata": draw(METADATA),
        "commitTimestamp": draw(INT64),
    }
    if version == 1:
        value["expireTimestamp"] = draw(INT64)
    if version >= 3:
        value["leaderEpoch"] = draw(INT32)
    if version == 4 and draw(st.booleans()):
        value["topicId"] = draw(UUIDS)
    return key, encode_value("OffsetCommit", value, version)


def _outcome(decode: Any, key: bytes, value: bytes | None) -> Any:
    try:
        return decode(key, value)
    except CodecError as exc:
        return ("error", str(exc))


@settings(max_examples=EXAMPLES, deadline=None)
@given(record=offset_commits())
def test_fast_path_equals_the_interpreter_on_valid_records(record: tuple[bytes, bytes | None]) -> None:
    key, value = record
    generic = decode_record_generic(key, value)
    assert decode_record(key, value) == generic
    assert list(decode_record(key, value)["value"] or ()) == list(generic["value"] or ())  # same field order
    fast = offset_commit_record(key, value)
    assert fast is None or fast == generic


@settings(max_examples=EXAMPLES, deadline=None)
@given(record=offset_commits(), data=st.data())
def test_fast_path_equals_the_interpreter_on_damaged_records(
    record: tuple[bytes, bytes | None], data: st.DataObject
) -> None:
    key, value = record
    # Truncate, extend or overwrite a byte of the key or the value.
    part = data.draw(st.sampled_from(["key", "value"] if value is not None else ["key"]))
    blob = bytearray(key if part == "key" else value or b"")
    action = data.draw(st.sampled_from(["cut", "extend", "set"]))
    if action == "cut":
        del blob[data.draw(st.integers(0, len(blob))) :]
    elif action == "extend":
        blob += data.draw(st.binary(min_size=1, max_size=3))
    elif blob:
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    key, value = (bytes(blob), value) if part == "key" else (key, bytes(blob))
    assert _outcome(decode_record, key, value) == _outcome(decode_record_generic, key, value)


def test_bytes_like_inputs_take_the_same_path() -> None:
    key = encode_key("OffsetCommit", {"group": "g", "topic": "t", "partition": 1})
    value = encode_value(
        "OffsetCommit", {"offset": 1, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 3}, 3
    )
    expected = decode_record(key, value)
    assert decode_record(bytearray(key), memoryview(value)) == expected


def test_the_fast_path_takes_every_common_shape() -> None:
    # Otherwise the equality tests above would pass with a fast path that always declines.
    for key_version in (0, 1):
        key = encode_key("OffsetCommit", {"group": "grüße", "topic": "t", "partition": 1}, key_version)
        assert offset_commit_record(key, None) is not None
        for version in range(5):
            value: dict[str, Any] = {"offset": 1, "metadata": "ok", "commitTimestamp": 3}
            value.update({"expireTimestamp": 4} if version == 1 else {})
            value.update({"leaderEpoch": 2} if version >= 3 else {})
            assert offset_commit_record(key, encode_value("OffsetCommit", value, version)) is not None
