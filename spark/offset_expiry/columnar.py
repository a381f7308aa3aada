"""Log compaction and decoding of `__consumer_offsets` records a whole Arrow batch at a time (numpy).

Nearly every record of the topic is an OffsetCommit with key version 1 and a value of versions 0-4 (Kafka
4.1+ writes v4: a flexible version whose metadata is a compact string and whose only tagged field is the
topic id): layouts of big-endian integers and length-prefixed strings (codec/schemas.py; Kafka's
OffsetCommitKey and OffsetCommitValue). Those are decoded here with vectorised numpy gathers over the
Arrow buffers, so a batch of 20,000 records costs a few numpy calls instead of 20,000 Python calls.
Everything else, and every record whose bytes are not exactly that layout (other record types, value
v4 with long metadata or other tagged fields, key type 0, negative lengths, trailing bytes, non-ASCII names), takes the Python row path
(facts.fact_from_record), which gives the exact answer or the CodecError. The vectorised path accepts a
record only if facts._fast_offset_commit would, so both paths give the same Fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_offsets_model.codec import CodecError

from .facts import OFFSET_COMMIT, Fact, fact_from_record, history_fact

SKIPPED = -1  # fact type of a record that did not decode

FACT_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("type", pa.int32()),
    ("group", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("member", pa.string()),
    ("tombstone", pa.bool_()),
    ("committed_offset", pa.int64()),
    ("commit_timestamp", pa.int64()),
    ("expire_timestamp", pa.int64()),
    ("protocol_type", pa.string()),
    ("state_timestamp", pa.int64()),
    ("member_count", pa.int32()),
    ("topics", pa.list_(pa.string())),
    ("regex", pa.string()),
    ("epoch", pa.int32()),
    ("member_state", pa.int32()),
    ("record_timestamp", pa.int64()),
    ("generation", pa.int32()),
)
assert tuple(name for name, _ in FACT_FIELDS) == Fact._fields
DECODED_ARROW = pa.schema(
    [("record_partition", pa.int32()), ("record_offset", pa.int64()), ("records", pa.int64()), *FACT_FIELDS]
)
_PAD = 16


def last_per_key(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Log compaction of records in offset order: the row index of each key's last record (ascending)
    and how many records that key had."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = np.asarray(keys.dictionary_encode().indices, dtype=np.int64)
    counts = np.bincount(codes)
    order = np.argsort(codes, kind="stable")  # rows of a key stay in offset order
    last = order[np.cumsum(counts) - 1]
    idx = np.argsort(last, kind="stable")
    return last[idx], counts[idx]


class _Bytes:
    """A binary Arrow array's rows as (start, length) into one padded uint8 buffer."""

    def __init__(self, array: pa.Array) -> None:
        if pa.types.is_large_binary(array.type):
            array = array.cast(pa.binary())
        n = len(array)
        _, offsets_buf, data_buf = array.buffers()
        offsets = np.frombuffer(offsets_buf, np.int32, n + 1, array.offset * 4) if offsets_buf else np.zeros(
            n + 1, np.int32
        )
        base = int(offsets[0])
        size = int(offsets[-1]) - base
        data = np.frombuffer(data_buf, np.uint8, size, base) if data_buf is not None and size else np.zeros(0, np.uint8)
        self.data = np.concatenate([data, np.zeros(_PAD, np.uint8)])
        self.start = offsets[:-1].astype(np.int64) - base
        self.length = np.diff(offsets).astype(np.int64)
        self.valid = (
            np.ones(n, bool) if array.null_count == 0 else np.asarray(array.is_valid(), dtype=bool)
        )

    def _at(self, pos: np.ndarray, width: int) -> np.ndarray:
        """`width` bytes at `pos` (row-relative) of every row, as an (n, width) array; out-of-range
        positions read garbage from the clipped buffer (the caller masks those rows out)."""
        limit = len(self.data) - width
        at = np.clip(self.start + pos, 0, max(limit, 0))
        gathered: np.ndarray = self.data[at[:, None] + np.arange(width)]
        return gathered

    def uint8(self, pos: np.ndarray) -> np.ndarray:
        return self._at(pos, 1).ravel().astype(np.int64)

    def int16(self, pos: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self._at(pos, 2)).view(">i2").ravel().astype(np.int64)

    def int32(self, pos: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self._at(pos, 4)).view(">i4").ravel().astype(np.int64)

    def int64(self, pos: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self._at(pos, 8)).view(">i8").ravel().astype(np.int64)

    def gather(self, rows: np.ndarray, pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bytes at row-relative [pos, pos + length) of `rows`, concatenated, and their offsets."""
        lengths = length[rows]
        ends = np.cumsum(lengths)
        starts = self.start[rows] + pos[rows]
        index = np.repeat(starts - (ends - lengths), lengths) + np.arange(int(ends[-1]) if len(ends) else 0)
        return self.data[index], np.concatenate([[0], ends])


def _non_ascii_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per row of gathered bytes: does it hold a byte >= 0x80 (then only the row path checks UTF-8)."""
    if not len(data) or int(data.max()) < 0x80:
        return np.zeros(len(offsets) - 1, bool)
    high = np.concatenate([[0], np.cumsum(data >= 0x80)])
    flags: np.ndarray = (high[offsets[1:]] - high[offsets[:-1]]) > 0
    return flags


def _strings(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    return pa.StringArray.from_buffers(
        len(offsets) - 1, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data.tobytes())
    )


def offset_commit_mask(keys: _Bytes, values: _Bytes) -> dict[str, Any]:
    """Which rows are OffsetCommit records of the fixed layout (what facts._fast_offset_commit accepts),
    and their fields (garbage where the mask is False)."""
    klen = keys.length
    ok = keys.valid & (klen >= 10)
    ok &= keys.int16(np.zeros_like(klen)) == 1
    glen = keys.int16(np.full_like(klen, 2))
    tpos = 4 + glen
    ok &= (glen >= 0) & (tpos + 2 <= klen)
    tlen = keys.int16(tpos)
    ppos = tpos + 2 + tlen
    ok &= (tlen >= 0) & (ppos + 4 == klen)
    partition = keys.int32(ppos)

    tombstone = ~values.valid
    vlen = values.length
    version = values.int16(np.zeros_like(vlen))
    # v0-v3: an int16 metadata length; v4 (what Kafka 4.1+ writes): a one-byte compact length (metadata
    # under 127 bytes) and, after the commit time, no tagged field or only the topic id (tag 0, 16 bytes).
    v4 = version == 4
    vok = (vlen >= 10) & (version >= 0) & (version <= 4)
    mpos = np.where(version >= 3, 14, 10)
    compact = values.uint8(mpos)
    mlen = np.where(v4, compact - 1, values.int16(mpos))
    vok &= (mpos + 2 <= vlen) & (mlen >= 0) & ~(v4 & (compact >= 0x80))
    metadata_pos = np.where(v4, mpos + 1, mpos + 2)
    cpos = metadata_pos + mlen
    commit = values.int64(cpos)
    epos = cpos + 8
    v1 = version == 1
    expire = values.int64(epos)
    tags = values.uint8(epos)
    topic_id = (tags == 1) & (values.uint8(epos + 1) == 0) & (values.uint8(epos + 2) == 16)
    end = np.where(v1, epos + 8, np.where(v4, np.where(tags == 0, epos + 1, np.where(topic_id, epos + 19, -1)), epos))
    vok &= end == vlen
    ok &= tombstone | vok
    return {
        "ok": ok,
        "group_pos": np.full_like(klen, 4),
        "group_len": glen,
        "topic_pos": tpos + 2,
        "topic_len": tlen,
        "partition": partition,
        "tombstone": tombstone,
        "metadata_pos": metadata_pos,
        "metadata_len": np.where(tombstone, 0, mlen),
        "offset": values.int64(np.full_like(vlen, 2)),
        "commit": commit,
        "expire": expire,
        "has_expire": v1 & (expire != -1),
    }


def decode_records(
    record_partition: pa.Array,
    record_offset: pa.Array,
    records: pa.Array,
    key: pa.Array,
    value: pa.Array,
    timestamp: pa.Array | None = None,
    history: pa.Array | None = None,
) -> pa.RecordBatch:
    """Compacted raw records -> one fact row each (DECODED_ARROW; type SKIPPED for records that do not
    decode), the fixed-layout offset commits vectorised, the rest through facts.fact_from_record.
    `timestamp`: the records' timestamps (record_timestamp; negative ones, Kafka's "none", become null).
    `history`: rows that are GroupMetadata history (facts.history_fact), not survivors of compaction: they
    become GROUP_METADATA_HISTORY facts, or no row at all when they are not a live GroupMetadata value
    (never SKIPPED: they are not counted)."""
    if history is not None and pc.any(history).as_py():
        past = np.asarray(history.fill_null(False), dtype=bool)
        current = np.flatnonzero(~past)
        batch = decode_records(
            record_partition.take(current),
            record_offset.take(current),
            records.take(current),
            key.take(current),
            value.take(current),
            None if timestamp is None else timestamp.take(current),
        )
        rows = np.flatnonzero(past)
        extra = _history_batch(
            record_partition.take(rows),
            record_offset.take(rows),
            records.take(rows),
            key.take(rows).to_pylist(),
            value.take(rows).to_pylist(),
            pa.nulls(len(rows), pa.int64()) if timestamp is None else timestamp.take(rows),
        )
        return pa.Table.from_batches([batch, extra]).combine_chunks().to_batches()[0] if len(extra) else batch
    if timestamp is None:
        timestamp = pa.nulls(len(key), pa.int64())
    else:
        timestamp = pc.if_else(pc.less(timestamp, 0), pa.scalar(None, pa.int64()), timestamp)
    keys, values = _Bytes(key), _Bytes(value)
    f = offset_commit_mask(keys, values)
    ok = f["ok"]
    fast = np.flatnonzero(ok)
    groups = keys.gather(fast, f["group_pos"], f["group_len"])
    topics = keys.gather(fast, f["topic_pos"], f["topic_len"])
    metadata = values.gather(fast, f["metadata_pos"], f["metadata_len"])
    non_ascii = _non_ascii_rows(*groups) | _non_ascii_rows(*topics) | _non_ascii_rows(*metadata)
    if non_ascii.any():  # rare: let the row path check the UTF-8
        ok[fast[non_ascii]] = False
        fast = np.flatnonzero(ok)
        groups = keys.gather(fast, f["group_pos"], f["group_len"])
        topics = keys.gather(fast, f["topic_pos"], f["topic_len"])
    slow = np.flatnonzero(~ok)
    parts = []
    if len(fast):
        n = len(fast)
        live = ~f["tombstone"][fast]
        expire_valid = live & f["has_expire"][fast]
        columns = {
            "record_partition": record_partition.take(fast),
            "record_offset": record_offset.take(fast),
            "records": records.take(fast),
            "type": pa.array(np.full(n, OFFSET_COMMIT, np.int32)),
            "group": _strings(*groups),
            "topic": _strings(*topics),
            "partition": pa.array(f["partition"][fast].astype(np.int32)),
            "tombstone": pa.array(~live),
            "committed_offset": pa.array(f["offset"][fast], mask=~live),
            "commit_timestamp": pa.array(f["commit"][fast], mask=~live),
            "expire_timestamp": pa.array(f["expire"][fast], mask=~expire_valid),
            "record_timestamp": timestamp.take(fast),
        }
        parts.append(
            pa.RecordBatch.from_arrays(
                [columns.get(name, pa.nulls(n, t)) for name, t in zip(DECODED_ARROW.names, DECODED_ARROW.types, strict=True)],
                schema=DECODED_ARROW,
            )
        )
    if len(slow):
        parts.append(
            _facts_batch(
                record_partition.take(slow),
                record_offset.take(slow),
                records.take(slow),
                key.take(slow).to_pylist(),
                value.take(slow).to_pylist(),
                timestamp.take(slow),
            )
        )
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=DECODED_ARROW)
    if len(parts) == 1:
        return parts[0]
    return pa.Table.from_batches(parts).combine_chunks().to_batches()[0]


def _facts_batch(
    record_partition: pa.Array,
    record_offset: pa.Array,
    records: pa.Array,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamp: pa.Array,
) -> pa.RecordBatch:
    """The Python row path. A live GroupMetadata survivor also yields its history copy
    (facts.history_fact, counting no records), so the newest record is not decoded twice."""
    empty_fact = Fact(SKIPPED, "")
    rows = []
    partitions = record_partition.to_pylist()
    offsets = record_offset.to_pylist()
    copies: list[tuple[int, Fact]] = []
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        try:
            fact = fact_from_record(k or b"", v)
        except CodecError:
            fact = empty_fact
        rows.append(fact)
        past = history_fact(fact, partitions[i], offsets[i])
        if past is not None:
            copies.append((i, past))
    if copies:
        index = pa.array([i for i, _ in copies], pa.int64())
        record_partition = pa.concat_arrays([record_partition, record_partition.take(index)])
        record_offset = pa.concat_arrays([record_offset, record_offset.take(index)])
        records = pa.concat_arrays([records, pa.array([0] * len(copies), records.type)])
        timestamp = pa.concat_arrays([timestamp, timestamp.take(index)])
        rows += [past for _, past in copies]
    columns: list[pa.Array] = [record_partition, record_offset, records]
    for i, (name, arrow_type) in enumerate(FACT_FIELDS):
        if name == "record_timestamp":
            columns.append(timestamp)
        else:
            columns.append(pa.array([row[i] for row in rows], arrow_type))
    return pa.RecordBatch.from_arrays(columns, schema=DECODED_ARROW)


def _history_batch(
    record_partition: pa.Array,
    record_offset: pa.Array,
    records: pa.Array,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamp: pa.Array,
) -> pa.RecordBatch:
    """GroupMetadata history rows (decode_records' `history`): one GROUP_METADATA_HISTORY fact per live
    GroupMetadata value; anything else is dropped."""
    keep: list[int] = []
    facts: list[Fact] = []
    partitions = record_partition.to_pylist()
    offsets = record_offset.to_pylist()
    for i, (k, v) in enumerate(zip(keys, values, strict=True)):
        try:
            fact = history_fact(fact_from_record(k or b"", v), partitions[i], offsets[i])
        except CodecError:
            continue
        if fact is not None:
            keep.append(i)
            facts.append(fact)
    index = pa.array(keep, pa.int64())
    timestamps = timestamp.take(index)
    timestamps = pc.if_else(pc.less(timestamps, 0), pa.scalar(None, pa.int64()), timestamps)
    columns: list[pa.Array] = [record_partition.take(index), record_offset.take(index), records.take(index)]
    for i, (name, arrow_type) in enumerate(FACT_FIELDS):
        if name == "record_timestamp":
            columns.append(timestamps)
        else:
            columns.append(pa.array([row[i] for row in facts], arrow_type))
    return pa.RecordBatch.from_arrays(columns, schema=DECODED_ARROW)
