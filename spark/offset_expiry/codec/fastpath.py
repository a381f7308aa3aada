"""A straight-line decoder for OffsetCommit records, the bulk of `__consumer_offsets`.

The schema interpreter walks field lists and builds error paths for every value; at millions of records
that dominates the Spark job's decode time. This module reads the common, well-formed shapes of the
OffsetCommit key (types 0 and 1) and value (versions 0..4) with `struct` and returns exactly the dict
the interpreter would. Anything unusual (non-UTF-8 text, tagged fields, long compact strings, trailing
bytes, truncation) returns None, and the caller falls back to the interpreter, which produces the
value or the precise error. tests/unit/codec/test_fastpath.py proves the two agree.
"""

from __future__ import annotations

import struct
from typing import Any

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_QI = struct.Struct(">qi")


def _classic_string(buf: bytes, pos: int) -> tuple[str, int] | None:
    """A non-null int16-length string at `pos`, and the position after it."""
    if pos + 2 > len(buf):
        return None
    n = _H.unpack_from(buf, pos)[0]
    end = pos + 2 + n
    if n < 0 or end > len(buf):
        return None
    try:
        return buf[pos + 2 : end].decode("utf-8"), end
    except UnicodeDecodeError:
        return None


def offset_commit_key(key: bytes) -> tuple[int, dict[str, Any]] | None:
    """(key type, {group, topic, partition}) for a type 0/1 key with nothing after it."""
    if len(key) < 10:
        return None
    type_id = _H.unpack_from(key, 0)[0]
    if type_id != 1 and type_id != 0:
        return None
    group = _classic_string(key, 2)
    if group is None:
        return None
    topic = _classic_string(key, group[1])
    if topic is None or topic[1] + 4 != len(key):
        return None
    return type_id, {"group": group[0], "topic": topic[0], "partition": _I.unpack_from(key, topic[1])[0]}


def offset_commit_value(value: bytes) -> tuple[int, dict[str, Any]] | None:
    """(version, fields) for an OffsetCommitValue v0..v4 without tagged fields or trailing bytes."""
    n = len(value)
    if n < 2:
        return None
    version = _H.unpack_from(value, 0)[0]
    if version == 3 or version == 4:
        if n < 14:
            return None
        offset, leader_epoch = _QI.unpack_from(value, 2)
        if version == 3:
            metadata = _classic_string(value, 14)
            if metadata is None or metadata[1] + 8 != n:
                return None
            text, pos = metadata
        else:
            # A compact string whose length fits one varint byte, then the commit time and an empty
            # tagged-field section.
            length = value[14] - 1 if n > 14 else -1
            pos = 15 + length
            if length < 0 or value[14] & 0x80 or pos + 9 != n or value[n - 1] != 0:
                return None
            try:
                text = value[15:pos].decode("utf-8")
            except UnicodeDecodeError:
                return None
        return version, {
            "offset": offset,
            "leaderEpoch": leader_epoch,
            "metadata": text,
            "commitTimestamp": _Q.unpack_from(value, pos)[0],
        }
    if 0 <= version <= 2:
        if n < 12:
            return None
        metadata = _classic_string(value, 10)
        if metadata is None:
            return None
        text, pos = metadata
        if pos + (16 if version == 1 else 8) != n:
            return None
        fields: dict[str, Any] = {
            "offset": _Q.unpack_from(value, 2)[0],
            "metadata": text,
            "commitTimestamp": _Q.unpack_from(value, pos)[0],
        }
        if version == 1:
            fields["expireTimestamp"] = _Q.unpack_from(value, pos + 8)[0]
        return version, fields
    return None


def offset_commit_record(key: bytes, value: bytes | None) -> dict[str, Any] | None:
    """The whole decoded record, or None to let the interpreter handle it."""
    k = offset_commit_key(key)
    if k is None:
        return None
    if value is None:
        return {"type": "OffsetCommit", "keyVersion": k[0], "key": k[1], "valueVersion": None, "value": None}
    v = offset_commit_value(value)
    if v is None:
        return None
    return {"type": "OffsetCommit", "keyVersion": k[0], "key": k[1], "valueVersion": v[0], "value": v[1]}
