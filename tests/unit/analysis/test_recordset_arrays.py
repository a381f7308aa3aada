"""The vectorised record-set parser (recordset_arrays) gives what the row parser (recordset) gives, record
for record, on bytes written by kafka-python's own record builders: batches of every size (the lock-step
rounds and the one-by-one tail of long batches), multi-byte varints, null and empty keys and values,
headers, fetches from the middle of a batch, partial batches, compressed and legacy batches (handed to the
row parser), read_committed, and corrupt bytes (the row parser's CorruptRecordSet)."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from kafka.record.memory_records import MemoryRecordsBuilder
from kafka.record.util import calc_crc32c

from offset_expiry.recordset import AbortedTransaction, CorruptRecordSet, parse_record_set
from offset_expiry.recordset_arrays import RecordArrays, parse_record_arrays

Row = tuple[bytes | None, bytes | None, int]


def build(
    rows: list[Row],
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
        assert builder.append(ts, key, value, [("h", b"x" * 20)] if headers else []) is not None
    builder.close()
    return bytes(builder.buffer())


def control(base: int, producer_id: int, marker: int) -> bytes:
    raw = bytearray(
        build(
            [(struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 0), 0)],
            base=base,
            producer_id=producer_id,
            transactional=True,
        )
    )
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def random_rows(rng: random.Random, n: int) -> list[Row]:
    rows: list[Row] = []
    ts = 1_700_000_000_000
    for _ in range(n):
        ts += rng.choice([0, 1, 1000, -5000, 10**9])
        key = (
            None
            if rng.random() < 0.02
            else bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 12, 13, 40, 70, 300])))
        )
        value = (
            None
            if rng.random() < 0.1
            else bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 12, 30, 200])))
        )
        rows.append((key, value, ts))
    return rows


def random_topic(rng: random.Random, sizes: list[int], **kwargs: object) -> bytes:
    out, base = [], 0
    for size in sizes:
        out.append(build(random_rows(rng, size), base=base, **kwargs))  # type: ignore[arg-type]
        base += size
    return b"".join(out)


def as_rows(parsed: RecordArrays) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return list(
        zip(
            parsed.offsets.tolist(),
            parsed.timestamps.tolist(),
            parsed.keys.to_pylist(),
            parsed.values.to_pylist(),
            strict=True,
        )
    )


def agree(data: bytes, fetch_offset: int = 0, **kwargs: object) -> RecordArrays:
    expected = parse_record_set(data, fetch_offset, **kwargs)  # type: ignore[arg-type]
    got = parse_record_arrays(data, fetch_offset, **kwargs)  # type: ignore[arg-type]
    assert as_rows(got) == list(
        zip(expected.offsets, expected.timestamps, expected.keys, expected.values, strict=True)
    )
    assert got.next_offset == expected.next_offset
    assert got.offsets.dtype == np.int64 and got.timestamps.dtype == np.int64
    return got


@pytest.mark.parametrize("seed", range(4))
def test_many_small_batches_and_a_few_long_ones(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.randint(1, 20) for _ in range(300)] + [200, 45] + [rng.randint(1, 3) for _ in range(50)]
    rng.shuffle(sizes)
    data = random_topic(rng, sizes)
    got = agree(data)
    assert len(got) == sum(sizes)
    agree(data, fetch_offset=sum(sizes[:7]) + 1)  # from the middle of a batch
    agree(data[: len(data) - 17])  # a partial batch at the end


def test_headers_and_only_long_batches() -> None:
    rng = random.Random(9)
    agree(random_topic(rng, [100, 100, 3], headers=True))
    agree(random_topic(rng, [1]))
    agree(b"")


def test_compressed_and_legacy_batches_go_to_the_row_parser() -> None:
    rng = random.Random(3)
    agree(random_topic(rng, [5, 7]) + build(random_rows(rng, 9), base=12, compression=1))
    agree(build(random_rows(rng, 9), magic=1) + build(random_rows(rng, 4), base=9))


def test_read_committed() -> None:
    rng = random.Random(5)
    rows = random_rows(rng, 12)
    data = (
        build(rows[:3])
        + build(rows[3:6], base=3, producer_id=7, transactional=True)
        + build(rows[6:8], base=6, producer_id=8, transactional=True)
        + control(8, 7, 0)
        + control(9, 8, 1)
        + build(rows[10:12], base=10, producer_id=7, transactional=True)
        + control(12, 7, 1)
    )
    aborted = [AbortedTransaction(7, 3)]
    assert agree(data, aborted=aborted).offsets.tolist() == [0, 1, 2, 6, 7, 10, 11]
    assert len(agree(data, aborted=aborted, read_committed=False)) == 10


@pytest.mark.parametrize("at", [61, 62, 65, 70])
def test_corrupt_records_raise_as_in_the_row_parser(at: int) -> None:
    rng = random.Random(at)
    for size in (5, 40):
        data = bytearray(random_topic(rng, [size] * 40))
        data[at] = 0xFF
        data[at + 1] = 0xFF
        try:
            expected = parse_record_set(bytes(data), 0)
        except CorruptRecordSet:
            with pytest.raises(CorruptRecordSet):
                parse_record_arrays(bytes(data), 0)
        else:
            got = parse_record_arrays(bytes(data), 0)
            assert got.offsets.tolist() == expected.offsets


def test_below_cuts_at_the_snapshot_end() -> None:
    got = parse_record_arrays(random_topic(random.Random(1), [10, 10]), 0)
    assert got.below(15).offsets.tolist() == list(range(15))
    assert got.below(15).keys.to_pylist() == got.keys.to_pylist()[:15]
    assert got.below(99) is got
