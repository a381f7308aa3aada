"""Property tests: whatever bytes arrive, decode_record answers with a record or a CodecError (never
another exception), and every value the schemas allow survives encode -> decode -> encode."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from codec_samples import all_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import records

from kafka_offsets_model.codec import CodecError, decode_record, encode_record, to_jsonable

# A few seconds in the suite; CODEC_FUZZ_EXAMPLES=20000 for a deeper search before a release.
EXAMPLES = int(os.environ.get("CODEC_FUZZ_EXAMPLES", "300"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ENCODED = [encode_record(rec) for _, rec in all_records()]


def _decode_or_codec_error(key: bytes, value: bytes | None) -> dict[str, Any] | None:
    try:
        rec = decode_record(key, value)
    except CodecError as exc:
        assert exc.part in ("key", "value") and str(exc)
        return None
    # Anything decoded must re-encode, and decode again to the same record.
    assert decode_record(*encode_record(rec)) == rec
    return rec


# Keys that start with a known record type reach the field decoders instead of stopping at byte 0.
KEY_PREFIXES = st.sampled_from(
    [b"", b"\x00\x00", b"\x00\x01", b"\x00\x02", b"\x00\x05", b"\x00\x10", b"\x00\x11"]
)


@FAST
@given(prefix=KEY_PREFIXES, key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_random_bytes_give_a_record_or_a_codec_error(prefix: bytes, key: bytes, value: bytes | None) -> None:
    _decode_or_codec_error(prefix + key, value)


def test_every_truncation_of_every_sample_is_a_codec_error_or_a_record() -> None:
    for key, value in ENCODED:
        for cut in range(len(key)):
            _decode_or_codec_error(key[:cut], value)
        for cut in range(len(value or b"")):
            assert value is not None
            _decode_or_codec_error(key, value[:cut])


@FAST
@given(data=st.data())
def test_bit_flips_give_a_record_or_a_codec_error(data: st.DataObject) -> None:
    key, value = data.draw(st.sampled_from(ENCODED))
    blob = bytearray(key + (value or b""))
    for bit in data.draw(st.lists(st.integers(0, len(blob) * 8 - 1), min_size=1, max_size=4)):
        blob[bit // 8] ^= 1 << (bit % 8)
    _decode_or_codec_error(bytes(blob[: len(key)]), None if value is None else bytes(blob[len(key) :]))


@FAST
@given(rec=records())
def test_schema_generated_records_round_trip(rec: dict[str, Any]) -> None:
    key, value = encode_record(rec)
    decoded = decode_record(key, value)
    assert decoded == rec
    assert encode_record(decoded) == (key, value)
    # ...and through the CLI's JSON form (bytes as hex).
    assert encode_record(json.loads(json.dumps(to_jsonable(decoded)))) == (key, value)


@settings(max_examples=max(EXAMPLES // 3, 1), deadline=None)
@given(rec=records(), junk=st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)))
def test_encoding_malformed_dicts_raises_codec_error_only(rec: dict[str, Any], junk: Any) -> None:
    # Replace one field of the key or value by a value of the wrong shape.
    for part in ("key", "value"):
        fields = rec.get(part)
        if isinstance(fields, dict) and fields:
            name = sorted(fields)[0]
            broken = {**rec, part: {**fields, name: junk}}
            with contextlib.suppress(CodecError):
                encode_record(broken)
