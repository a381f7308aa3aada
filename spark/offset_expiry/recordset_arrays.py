"""Records of a Fetch response partition as arrays, parsed a whole response at a time (numpy).

recordset.parse_record_set reads a record at a time in Python (about 1.5 µs a record, five varints
each): at millions of records it was the largest cost of the analysis' reader. Here the uncompressed v2
batches of a response (what `__consumer_offsets` holds: Kafka writes it uncompressed by default,
offsets.topic.compression.codec) are read in lock-step: iteration j reads the j-th record of every
batch that has one, so a response of thousands of batches of 1-20 records costs about 20 rounds of
numpy calls. The records' keys and values are not copied: they are Arrow binary views into the
response's bytes (a view is 16 bytes: length and either the bytes inline or a prefix and an offset).

The batch walk (read_committed, control batches, aborted transactions) is recordset.BatchWalk, the same
as the row parser's. Anything this parser does not read itself (compressed or legacy batches, a batch
whose bytes do not parse) sends the whole response to parse_record_set, which reads it or raises
CorruptRecordSet as it always did; tests/unit/analysis/test_recordset_arrays.py holds the two together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from kafka.record.util import decode_varint

from .recordset import V2, AbortedTransaction, Batch, BatchWalk, ParsedRecords, parse_record_set

_PAD = 32
_INLINE = 12  # an Arrow binary view holds up to 12 bytes inline
_AR_INLINE = np.arange(_INLINE)
_SCALAR_BELOW = 32  # fewer active batches than this: their remaining records are read one by one
_U1 = np.uint64(1)


class RecordArrays(NamedTuple):
    """The records kept, in offset order, and the offset to fetch next. keys and values are Arrow
    binary_view arrays (null for a null key or value)."""

    offsets: np.ndarray
    timestamps: np.ndarray
    keys: pa.Array
    values: pa.Array
    next_offset: int

    def __len__(self) -> int:
        return len(self.offsets)

    def below(self, end: int) -> RecordArrays:
        """The records with offset < end."""
        if not len(self.offsets) or self.offsets[-1] < end:
            return self
        n = int(np.searchsorted(self.offsets, end))
        return RecordArrays(
            self.offsets[:n], self.timestamps[:n], self.keys[:n], self.values[:n], self.next_offset
        )


class _Unreadable(Exception):
    """The vectorised pass met something it does not read: the row parser decides."""


def parse_record_arrays(
    data: bytes, fetch_offset: int, aborted: Iterable[AbortedTransaction] = (), read_committed: bool = True
) -> RecordArrays:
    """What parse_record_set returns for the same arguments, as arrays."""
    aborted = list(aborted)
    walk = BatchWalk(data, fetch_offset, aborted, read_committed)
    batches = list(walk)
    if any(b.kind != V2 for b in batches):
        return from_parsed(parse_record_set(data, fetch_offset, aborted, read_committed))
    try:
        return _vectorised(data, batches, fetch_offset, walk.next_offset)
    except _Unreadable:
        return from_parsed(parse_record_set(data, fetch_offset, aborted, read_committed))


def from_parsed(parsed: ParsedRecords) -> RecordArrays:
    return RecordArrays(
        np.asarray(parsed.offsets, np.int64),
        np.asarray(parsed.timestamps, np.int64),
        pa.array(parsed.keys, pa.binary()).cast(pa.binary_view()),
        pa.array(parsed.values, pa.binary()).cast(pa.binary_view()),
        parsed.next_offset,
    )


def _varints(buf: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at positions p (kafka-python's decode_varint, at most 10 bytes): values, and the
    positions after them."""
    if len(p) and int(p.max()) >= len(buf):
        raise _Unreadable
    b = buf[p]
    value = (b & 0x7F).astype(np.uint64)
    more = np.flatnonzero(b & 0x80)
    q = p + 1
    shift = 7
    while more.size:
        if shift >= 70:
            raise _Unreadable
        at = q[more]
        if int(at.max()) >= len(buf):
            raise _Unreadable
        b = buf[at]
        value[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        q[more] = at + 1
        more = more[(b & 0x80) != 0]
        shift += 7
    signed = (value >> _U1).astype(np.int64) ^ -((value & _U1).astype(np.int64))
    return signed, q


def _vectorised(data: bytes, batches: list[Batch], fetch_offset: int, next_offset: int) -> RecordArrays:
    if not batches:
        return from_parsed(ParsedRecords([], [], [], [], next_offset))
    table = np.array([(b.pos, b.end, b.records, b.base_offset, b.base_ts) for b in batches], np.int64)
    pos, end, count, base_offset, base_ts = table.T
    if (count < 0).any() or (count > end - pos).any():
        raise _Unreadable  # the row parser reads a negative count as none, a huge one as truncated
    buf = np.concatenate([np.frombuffer(data, np.uint8), np.zeros(_PAD, np.uint8)])
    total = int(count.sum())
    first = np.cumsum(count) - count  # where each batch's first record goes (offset order)
    offsets = np.empty(total, np.int64)
    timestamps = np.empty(total, np.int64)
    key_at = np.empty(total, np.int64)
    key_len = np.empty(total, np.int64)
    value_at = np.empty(total, np.int64)
    value_len = np.empty(total, np.int64)

    order = np.argsort(-count, kind="stable")  # the batches with a j-th record are a prefix
    count, p, end = count[order], pos[order].copy(), end[order]
    base_offset, base_ts, first = base_offset[order], base_ts[order], first[order]
    most = int(count[0])
    j = 0
    while j < most:
        k = int(np.searchsorted(-count, -j, side="left"))  # the batches with count > j
        if k < _SCALAR_BELOW:
            break
        q = p[:k]
        length, q = _varints(buf, q)
        record_end = q + length
        ts_delta, q = _varints(buf, q + 1)  # after the record's attributes (unused)
        offset_delta, q = _varints(buf, q)
        klen, q = _varints(buf, q)
        kat = q
        q = q + np.maximum(klen, 0)
        vlen, q = _varints(buf, q)
        vat = q
        q = q + np.maximum(vlen, 0)
        if ((q > record_end) | (record_end > end[:k])).any():
            raise _Unreadable
        at = first[:k] + j
        offsets[at] = base_offset[:k] + offset_delta
        timestamps[at] = base_ts[:k] + ts_delta
        key_at[at], key_len[at], value_at[at], value_len[at] = kat, klen, vat, vlen
        p[:k] = record_end
        j += 1
    # The few long batches left: the rest of their records one by one.
    k = int(np.searchsorted(-count, -j, side="left")) if j < most else 0
    for b in range(k):
        _scalar(
            data,
            int(p[b]),
            int(end[b]),
            int(count[b]) - j,
            int(first[b]) + j,
            int(base_offset[b]),
            int(base_ts[b]),
            offsets,
            timestamps,
            key_at,
            key_len,
            value_at,
            value_len,
        )
    keep = offsets >= fetch_offset
    if not keep.all():
        offsets, timestamps = offsets[keep], timestamps[keep]
        key_at, key_len, value_at, value_len = key_at[keep], key_len[keep], value_at[keep], value_len[keep]
    buffer = pa.py_buffer(buf)
    return RecordArrays(
        offsets,
        timestamps,
        _views(buf, buffer, key_at, key_len),
        _views(buf, buffer, value_at, value_len),
        next_offset,
    )


def _scalar(
    data: bytes,
    p: int,
    end: int,
    n: int,
    at: int,
    base_offset: int,
    base_ts: int,
    offsets: np.ndarray,
    timestamps: np.ndarray,
    key_at: np.ndarray,
    key_len: np.ndarray,
    value_at: np.ndarray,
    value_len: np.ndarray,
) -> None:
    """n records of one batch from p, as recordset._records reads them, into the arrays from `at`."""
    varint = decode_varint
    try:
        for i in range(at, at + n):
            length, p = varint(data, p)
            record_end = p + length
            ts_delta, p = varint(data, p + 1)
            offset_delta, p = varint(data, p)
            klen, p = varint(data, p)
            kat = p
            if klen > 0:
                p += klen
            vlen, p = varint(data, p)
            vat = p
            if vlen > 0:
                p += vlen
            if p > record_end or record_end > end:
                raise _Unreadable
            offsets[i] = base_offset + offset_delta
            timestamps[i] = base_ts + ts_delta
            key_at[i], key_len[i], value_at[i], value_len[i] = kat, klen, vat, vlen
            p = record_end
    except (IndexError, ValueError, OverflowError):
        raise _Unreadable from None


def _views(buf: np.ndarray, buffer: pa.Buffer, at: np.ndarray, length: np.ndarray) -> pa.Array:
    """Arrow binary views of buf[at : at + length] (null where length < 0), sharing `buffer` (buf's)."""
    n = len(at)
    valid = length >= 0
    ln = np.where(valid, length, 0).astype(np.int32)
    views = np.zeros((n, 4), np.int32)
    views[:, 0] = ln
    inline = buf[np.minimum(at, len(buf) - _INLINE)[:, None] + _AR_INLINE]
    inline[_AR_INLINE[None, :] >= ln[:, None]] = 0
    views.view(np.uint8).reshape(n, 16)[:, 4:] = inline
    out_of_line = ln > _INLINE
    views[out_of_line, 2] = 0  # buffer index: prefix (bytes 4-8) stays as gathered
    views[out_of_line, 3] = at[out_of_line]
    nulls = n - int(np.count_nonzero(valid))
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(
        pa.binary_view(), n, [validity, pa.py_buffer(views), buffer], null_count=nulls
    )
