"""Record batches the sandbox broker writes and checks: the same bytes kafka-python's builder writes, and
the header checks Kafka makes before appending."""

from __future__ import annotations

import struct

import kafka.errors as Errors
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from kafka_sandbox import producer_state
from kafka_sandbox.topics import (
    InvalidBatch,
    PartitionLog,
    build_batch,
    check_crc,
    read_header,
    split_batches,
)

records_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=300)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.integers(min_value=0, max_value=2**41),
    ),
    min_size=1,
    max_size=40,
)


def kafka_python_batch(records: list[tuple[bytes | None, bytes | None, int]]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=2**31 - 1,
    )
    for delta, (key, value, ts) in enumerate(records):
        builder.append(delta, timestamp=ts, key=key, value=value, headers=[])
    return bytes(builder.build())


@given(records_strategy)
def test_build_batch_writes_what_kafka_pythons_builder_writes(records: list) -> None:  # type: ignore[type-arg]
    assert bytes(build_batch(records)) == kafka_python_batch(records)


@given(records_strategy)
def test_appended_batches_keep_a_valid_crc_and_get_consecutive_offsets(records: list) -> None:  # type: ignore[type-arg]
    log = PartitionLog()
    first = log.append(build_batch(records))
    second = log.append(build_batch(records))
    assert (first, second, log.high_watermark) == (0, len(records), 2 * len(records))
    stored = [DefaultRecordBatch(bytes(view)) for view in split_batches(log.read(0, 2**31 - 1, min_one=True))]
    assert [b.base_offset for b in stored] == [0, len(records)]
    assert all(b.validate_crc() for b in stored)
    assert [(r.key, r.value, r.timestamp) for r in stored[1]] == [(k, v, t) for k, v, t in records]


def test_read_serves_whole_batches_within_the_limit_or_one_when_asked() -> None:
    log = PartitionLog()
    sizes = [len(build_batch([(b"k", b"x" * 100, 1)])) for _ in range(3)]
    for _ in range(3):
        log.append(build_batch([(b"k", b"x" * 100, 1)]))
    assert len(log.read(0, sizes[0] * 2 + 5, min_one=False)) == sizes[0] * 2
    assert len(log.read(1, 10, min_one=True)) == sizes[0]
    assert len(log.read(1, 10, min_one=False)) == 0
    assert len(log.read(3, 10_000, min_one=True)) == 0


def test_header_checks() -> None:
    good = build_batch([(b"k", b"v", 1), (b"k", b"v", 2)])
    header = read_header(good)
    assert (header.records_count, header.last_offset_delta, header.producer_id) == (2, 1, -1)
    check_crc(header)

    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    with pytest.raises(InvalidBatch) as crc:
        check_crc(read_header(corrupt))
    assert crc.value.error_code == Errors.CorruptRecordError.errno

    wrong_count = bytearray(good)
    struct.pack_into(">i", wrong_count, 57, 5)
    with pytest.raises(InvalidBatch) as count:
        read_header(wrong_count)
    assert count.value.error_code == Errors.InvalidRecordError.errno

    old_magic = bytearray(good)
    old_magic[16] = 1
    with pytest.raises(InvalidBatch) as magic:
        read_header(old_magic)
    assert magic.value.error_code == Errors.InvalidRecordError.errno

    with pytest.raises(InvalidBatch):
        read_header(good[:30])


def idempotent(batch: bytearray, producer_id: int, epoch: int, base_sequence: int) -> bytearray:
    """`batch` as an idempotent producer writes it: producer id, epoch and first sequence set, CRC redone."""
    struct.pack_into(">qhi", batch, 43, producer_id, epoch, base_sequence)
    struct.pack_into(">I", batch, 17, calc_crc32c(memoryview(batch)[21:]))
    return batch


def test_sequence_numbers_wrap_at_int32_max() -> None:
    one = idempotent(build_batch([(b"k", b"v", 1)]), 7, 0, 2**31 - 1)
    four = idempotent(build_batch([(b"k", b"v", 1)] * 4), 7, 0, 2**31 - 2)
    assert read_header(one).last_sequence == 2**31 - 1
    assert read_header(four).last_sequence == 1
    check_crc(read_header(four))
    entry = producer_state.ProducerEntry(epoch=0)
    entry.batches.append(producer_state.BatchSequence(2**31 - 5, 2**31 - 1, 10))
    assert producer_state.check(entry, 0, 0, 3) == (Errors.NoError.errno, None)
    assert producer_state.check(entry, 0, 1, 3) == (Errors.OutOfOrderSequenceNumberError.errno, None)
    assert producer_state.check(None, 7, 42, 43) == (Errors.NoError.errno, None)  # no state: any sequence
