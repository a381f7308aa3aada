"""The record-set parser against bytes written by kafka-python's own record builders (an independent
encoder of Kafka's formats): plain, compressed and legacy batches, headers, nulls, partial batches, and
read_committed with transaction markers."""

from __future__ import annotations

import struct

import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from kafka.record.util import calc_crc32c

from offset_expiry.recordset import AbortedTransaction, CorruptRecordSet, parse_record_set

ROWS = [
    (b"key-%d" % i, None if i % 7 == 3 else b"value-" * (i % 40), 1_700_000_000_000 + i * 1000)
    for i in range(300)
]
ROWS[5] = (None, b"no key", ROWS[5][2])


def build(
    rows: list[tuple[bytes | None, bytes | None, int]],
    *,
    base: int = 0,
    magic: int = 2,
    compression: int = 0,
    headers: bool = False,
    producer_id: int = -1,
    transactional: bool = False,
) -> bytes:
    builder = MemoryRecordsBuilder(
        magic=magic,
        compression_type=compression,
        batch_size=1 << 30,
        offset=base,
        transactional=transactional,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
    )
    for key, value, ts in rows:
        assert builder.append(ts, key, value, [("h", b"x")] if headers else []) is not None
    builder.close()
    return bytes(builder.buffer())


def control(base: int, producer_id: int, marker: int) -> bytes:
    """A transaction marker batch: a transactional batch whose record key is (version 0, type)."""
    raw = bytearray(
        build(
            [(struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 0), 0)],
            base=base,
            producer_id=producer_id,
            transactional=True,
        )
    )
    attributes_at = 21
    struct.pack_into(">h", raw, attributes_at, struct.unpack_from(">h", raw, attributes_at)[0] | 0x20)
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[attributes_at:])))
    return bytes(raw)


def kafka_python_view(
    data: bytes, fetch_offset: int = 0
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        out += [(r.offset, r.timestamp, r.key, r.value) for r in batch if r.offset >= fetch_offset]
    return out


def ours(
    data: bytes, fetch_offset: int = 0, **kwargs: object
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    parsed = parse_record_set(data, fetch_offset, **kwargs)  # type: ignore[arg-type]
    return list(zip(parsed.offsets, parsed.timestamps, parsed.keys, parsed.values, strict=True))


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip
@pytest.mark.parametrize("headers", [False, True])
def test_v2_batches_as_kafka_python_reads_them(compression: int, headers: bool) -> None:
    data = build(ROWS[:100], compression=compression, headers=headers) + build(
        ROWS[100:], base=100, compression=compression, headers=headers
    )
    assert ours(data) == kafka_python_view(data)
    assert len(ours(data)) == 300
    assert parse_record_set(data, 0).next_offset == 300
    # A fetch from the middle of a batch returns only what follows.
    assert ours(data, 150) == kafka_python_view(data, 150)


def test_legacy_message_format() -> None:
    data = build(ROWS[:50], magic=1) + build(ROWS[50:60], magic=0, base=50)
    assert [(o, k, v) for o, _, k, v in ours(data)] == [(o, k, v) for o, _, k, v in kafka_python_view(data)]


def test_a_partial_batch_at_the_end_is_left_for_the_next_fetch() -> None:
    first, second = build(ROWS[:10]), build(ROWS[10:20], base=10)
    parsed = parse_record_set(first + second[: len(second) // 2], 0)
    assert parsed.offsets == list(range(10)) and parsed.next_offset == 10


def test_read_committed_drops_aborted_transactions_and_markers() -> None:
    data = (
        build(ROWS[:3])  # 0-2, not transactional
        + build(ROWS[3:6], base=3, producer_id=7, transactional=True)  # 3-5, aborted below
        + build(ROWS[6:8], base=6, producer_id=8, transactional=True)  # 6-7, committed below
        + control(8, 7, 0)  # ABORT for producer 7
        + control(9, 8, 1)  # COMMIT for producer 8
        + build(
            ROWS[10:12], base=10, producer_id=7, transactional=True
        )  # 10-11: a later, committed transaction
        + control(12, 7, 1)
    )
    aborted = [AbortedTransaction(7, 3)]
    assert [r[0] for r in ours(data, aborted=aborted)] == [0, 1, 2, 6, 7, 10, 11]
    assert [r[0] for r in ours(data, aborted=aborted, read_committed=False)] == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        10,
        11,
    ]
    assert parse_record_set(data, 0, aborted).next_offset == 13


def test_corrupt_batches_raise() -> None:
    data = bytearray(build(ROWS[:5]))
    data[61] = 0xFF  # the first record's length varint now claims more than the batch holds
    data[62] = 0xFF
    with pytest.raises(CorruptRecordSet):
        parse_record_set(bytes(data), 0)
