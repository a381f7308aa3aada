"""A straight-line decoder for OffsetCommit records, the bulk of `__consumer_offsets`.

The schema interpreter walks field lists and builds error paths for every value; at millions of records
that dominates the Spark job's decode time. This module reads the common, well-formed shapes of the
OffsetCommit key (types 0 and 1) and value (versions 0..4) with `struct` and returns exactly the dict
the interpreter would. Anything unusual (non-UTF-8 text, tagged fields, long compact strings, trailing
bytes, truncation) returns None, and the caller falls back to the interpreter, which produces the
value or the precise error. tests/unit/codec/test_codec_fastpath.py proves the two agree.
"""

from __future__ import annotations

import struct
from typing import Any

_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_QQ = struct.Struct(">qq")
_QH = struct.Struct(">qh")  # offset, metadata length (v0..v2)
_QIH = struct.Struct(">qih")  # offset, leaderEpoch, metadata length (v3)
_QI = struct.Struct(">qi")  # offset, leaderEpoch (v4)


def offset_commit_key(key: bytes) -> tuple[int, dict[str, Any]] | None:
    """(key type, {group, topic, partition}) for a type 0/1 key with nothing after it."""
    n = len(key)
    if n < 10 or key[0] != 0 or key[1] > 1 or key[2] & 0x80:
        return None
    topic_at = 4 + ((key[2] << 8) | key[3])
    if topic_at + 2 > n or key[topic_at] & 0x80:
        return None
    partition_at = topic_at + 2 + ((key[topic_at] << 8) | key[topic_at + 1])
    if partition_at + 4 != n:
        return None
    try:
        group = key[4:topic_at].decode("utf-8")
        topic = key[topic_at + 2 : partition_at].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return key[1], {"group": group, "topic": topic, "partition": _I.unpack_from(key, partition_at)[0]}


def offset_commit_value(value: bytes) -> tuple[int, dict[str, Any]] | None:
    """(version, fields) for an OffsetCommitValue v0..v4 without tagged fields or trailing bytes."""
    n = len(value)
    if n < 12 or value[0] != 0 or value[1] > 4:
        return None
    version = value[1]
    try:
        if version == 3:
            if n < 24:
                return None
            offset, leader_epoch, length = _QIH.unpack_from(value, 2)
            end = 16 + length
            if length < 0 or end + 8 != n:
                return None
            return 3, {
                "offset": offset,
                "leaderEpoch": leader_epoch,
                "metadata": value[16:end].decode("utf-8"),
                "commitTimestamp": _Q.unpack_from(value, end)[0],
            }
        if version == 4:
            # A compact string whose length fits one varint byte, the commit time, and an empty
            # tagged-field section.
            if n < 24 or value[14] & 0x80 or value[14] == 0:
                return None
            end = 14 + value[14]
            if end + 9 != n or value[end + 8] != 0:
                return None
            offset, leader_epoch = _QI.unpack_from(value, 2)
            return 4, {
                "offset": offset,
                "leaderEpoch": leader_epoch,
                "metadata": value[15:end].decode("utf-8"),
                "commitTimestamp": _Q.unpack_from(value, end)[0],
            }
        offset, length = _QH.unpack_from(value, 2)
        end = 12 + length
        if length < 0 or end + (16 if version == 1 else 8) != n:
            return None
        fields: dict[str, Any] = {"offset": offset, "metadata": value[12:end].decode("utf-8")}
        if version == 1:
            fields["commitTimestamp"], fields["expireTimestamp"] = _QQ.unpack_from(value, end)
        else:
            fields["commitTimestamp"] = _Q.unpack_from(value, end)[0]
        return version, fields
    except UnicodeDecodeError:
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
