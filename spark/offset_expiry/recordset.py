"""Records out of the bytes of a Fetch response partition (a Kafka "record set"), read_committed.

The analysis reads millions of records; kafka-python's consumer builds several Python objects per record
(about 20 µs each here), this straight-line parser of the v2 batch format (DefaultRecordBatch.java,
DefaultRecord.java) takes about 1.3 µs, with kafka-python's header layout and varint decoder. What it
does not handle itself it hands to kafka-python's own record classes: compressed batches and the legacy
v0/v1 message format.

read_committed, as KafkaConsumer does it (Fetcher's CompletedFetch._unpack_records) and as
OffsetMetadataManager.replayEndTransactionMarker applies it: control batches (transaction markers) are
never records; a transactional batch is dropped if its producer is in the response's aborted list (from
the transaction's first offset until that producer's ABORT marker).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.util import decode_varint

# The RecordBatch v2 header as kafka-python lays it out (DefaultRecordBatch.java's field order).
_HEADER = DefaultRecordBatch.HEADER_STRUCT
_LENGTH = struct.Struct(">qi")
HEADER_SIZE = _HEADER.size  # 61
_LOG_OVERHEAD = DefaultRecordBatch.AFTER_LEN_OFFSET  # baseOffset + batchLength
_MAGIC_AT = DefaultRecordBatch.CRC_OFFSET - 1
_COMPRESSION_MASK = DefaultRecordBatch.CODEC_MASK
_TRANSACTIONAL = DefaultRecordBatch.TRANSACTIONAL_MASK
_CONTROL = DefaultRecordBatch.CONTROL_MASK
_ABORT = 0  # ControlRecordType.ABORT


class CorruptRecordSet(ValueError):
    pass


class AbortedTransaction(NamedTuple):
    producer_id: int
    first_offset: int


class ParsedRecords(NamedTuple):
    """Parallel lists of the records kept, and the offset to fetch next (after the last complete batch)."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    next_offset: int


class Batch(NamedTuple):
    """A batch whose records a parser must read: `kind` V2 (uncompressed v2: records from `pos` to `end`),
    COMPRESSED (v2, the batch's bytes from `pos`) or LEGACY (v0/v1, from `pos`)."""

    kind: int
    pos: int
    end: int
    records: int
    base_offset: int
    base_ts: int


V2, COMPRESSED, LEGACY = 0, 1, 2


class BatchWalk:
    """The batches of a record set a read_committed consumer reads (control batches and aborted
    transactions dropped), in order; `next_offset` after the walk is where the next fetch starts (legacy
    batches advance it by the offsets their parser finds: `legacy_read`)."""

    def __init__(
        self, data: bytes, fetch_offset: int, aborted: Iterable[AbortedTransaction], read_committed: bool
    ) -> None:
        self.data = data
        self.fetch_offset = fetch_offset
        self.next_offset = fetch_offset
        self.pending_aborts = deque(sorted(aborted, key=lambda t: t.first_offset))
        self.read_committed = read_committed

    def legacy_read(self, last_offset: int | None) -> None:
        if last_offset is not None:
            self.next_offset = max(self.next_offset, last_offset + 1)

    def __iter__(self) -> Iterator[Batch]:
        data = self.data
        pending_aborts = self.pending_aborts
        aborted_producers: set[int] = set()
        read_committed = self.read_committed
        header = _HEADER.unpack_from
        unpack_length = _LENGTH.unpack_from
        pos = 0
        size = len(data)
        while pos + _LOG_OVERHEAD <= size:
            base_offset, length = unpack_length(data, pos)
            end = pos + _LOG_OVERHEAD + length
            if end > size:
                break  # a partial batch at the end of the response
            if length < 0 or end < pos + _MAGIC_AT + 1:
                raise CorruptRecordSet(f"batch at offset {base_offset} has length {length}")
            magic = data[pos + _MAGIC_AT]
            if magic == 2 and length < HEADER_SIZE - _LOG_OVERHEAD:
                raise CorruptRecordSet(f"batch at offset {base_offset} has length {length}")
            if magic != 2:
                yield Batch(LEGACY, pos, end, 0, base_offset, 0)
                pos = end
                continue
            (_, _, _, _, _, attributes, last_delta, base_ts, _, producer_id, _, _, count) = header(data, pos)
            last_offset = base_offset + last_delta
            if last_offset + 1 > self.next_offset:
                self.next_offset = last_offset + 1
            if read_committed and producer_id >= 0:
                while pending_aborts and pending_aborts[0].first_offset <= last_offset:
                    aborted_producers.add(pending_aborts.popleft().producer_id)
                if attributes & _CONTROL:
                    if _control_type(data, pos + HEADER_SIZE, end, base_offset) == _ABORT:
                        aborted_producers.discard(producer_id)
                    pos = end
                    continue
                if attributes & _TRANSACTIONAL and producer_id in aborted_producers:
                    pos = end
                    continue
            if attributes & _CONTROL:
                pos = end
                continue
            if attributes & _COMPRESSION_MASK:
                yield Batch(COMPRESSED, pos, end, count, base_offset, base_ts)
            else:
                yield Batch(V2, pos + HEADER_SIZE, end, count, base_offset, base_ts)
            pos = end


def parse_record_set(
    data: bytes, fetch_offset: int, aborted: Iterable[AbortedTransaction] = (), read_committed: bool = True
) -> ParsedRecords:
    """Parses every complete batch in `data` (a fetch may end with a partial one, which is left for the
    next fetch). Records below `fetch_offset` (a batch can start before it) are skipped."""
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    walk = BatchWalk(data, fetch_offset, aborted, read_committed)
    for batch in walk:
        if batch.kind == V2:
            _records(
                data,
                batch.pos,
                batch.end,
                batch.records,
                batch.base_offset,
                batch.base_ts,
                fetch_offset,
                offsets,
                timestamps,
                keys,
                values,
            )
        elif batch.kind == COMPRESSED:
            _compressed(data[batch.pos : batch.end], fetch_offset, offsets, timestamps, keys, values)
        else:
            _legacy(data[batch.pos : batch.end], fetch_offset, offsets, timestamps, keys, values)
            walk.legacy_read(offsets[-1] if offsets else None)
    return ParsedRecords(offsets, timestamps, keys, values, walk.next_offset)


def _records(
    buf: bytes,
    p: int,
    end: int,
    count: int,
    base_offset: int,
    base_ts: int,
    fetch_offset: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
) -> None:
    """The records of an uncompressed v2 batch (DefaultRecord.java: zig-zag varints, read with
    kafka-python's decoder; headers are skipped by the record's length)."""
    varint = decode_varint  # a local: looked up once per batch, not per field
    try:
        for _ in range(count):
            length, p = varint(buf, p)
            record_end = p + length
            ts_delta, p = varint(buf, p + 1)  # after the record's attributes (unused)
            offset_delta, p = varint(buf, p)
            offset = base_offset + offset_delta
            n, p = varint(buf, p)
            if n >= 0:
                key: bytes | None = buf[p : p + n]
                p += n
            else:
                key = None
            n, p = varint(buf, p)
            if n >= 0:
                value: bytes | None = buf[p : p + n]
                p += n
            else:
                value = None
            if p > record_end or record_end > end:
                raise CorruptRecordSet(f"record at offset {offset} overruns its length")
            p = record_end  # skip the headers
            if offset >= fetch_offset:
                offsets.append(offset)
                timestamps.append(base_ts + ts_delta)
                keys.append(key)
                values.append(value)
    except (IndexError, ValueError):  # ValueError: a varint longer than 64 bits
        raise CorruptRecordSet(f"batch at offset {base_offset} is truncated") from None


def _control_type(buf: bytes, p: int, end: int, base_offset: int) -> int:
    """The marker type of a control batch's record, whose key is (int16 version, int16 type)
    (ControlRecordType.parse): 0 ABORT, 1 COMMIT; -1 if unreadable."""
    keys: list[bytes | None] = []
    _records(buf, p, end, 1, base_offset, 0, base_offset, [], [], keys, [])
    key = keys[0] if keys else None
    if key is None or len(key) < 4:
        return -1
    return int(struct.unpack_from(">h", key, 2)[0])


def _compressed(
    batch: bytes,
    fetch_offset: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
) -> None:
    for record in DefaultRecordBatch(batch):
        if record.offset >= fetch_offset:
            offsets.append(record.offset)
            timestamps.append(record.timestamp)
            keys.append(record.key)
            values.append(record.value)


def _legacy(
    data: bytes,
    fetch_offset: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
) -> None:
    """Message format v0/v1 (before Kafka 0.11), possibly compressed with inner messages."""
    magic = data[_MAGIC_AT]
    for record in LegacyRecordBatch(data, magic):
        if record.offset >= fetch_offset:
            offsets.append(record.offset)
            timestamps.append(record.timestamp if record.timestamp is not None else -1)
            keys.append(record.key)
            values.append(record.value)
