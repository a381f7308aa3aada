"""Topics and partition logs kept in memory, as the v2 record batches clients produced.

A partition's log is one growing bytearray of batches plus an index of where each batch starts and which
offsets it holds, so Fetch serves a slice of the stored bytes without decoding or re-encoding anything
(Kafka's broker also hands out stored batches as they are: `LocalLog.read` returns file slices).

Used on the broker's event-loop thread only (see context.py).
"""

from __future__ import annotations

import asyncio
import bisect
import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import kafka.errors as Errors
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import calc_crc32c, encode_varint

from .producer_state import ProducerEntry

# The RecordBatch v2 header (baseOffset .. recordCount), as kafka-python lays it out.
_HEADER = DefaultRecordBatch.HEADER_STRUCT
HEADER_SIZE = _HEADER.size  # 61
_LOG_ENTRY = struct.Struct(">qi")  # baseOffset, batchLength: they precede what batchLength counts
LOG_OVERHEAD = DefaultRecordBatch.AFTER_LEN_OFFSET  # 12, _LOG_ENTRY's size


class InvalidBatch(ValueError):
    """A produced batch Kafka would refuse; `error_code` is the Kafka error to answer with."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class InvalidRecord(InvalidBatch):
    """Kafka's InvalidRecordException: INVALID_RECORD."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.InvalidRecordError.errno, message)


@dataclass(frozen=True)
class BatchInfo:
    """What the log needs to know about one batch: where it is and what it holds."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    producer_id: int
    transactional: bool
    control: bool


def read_header(data: bytes | bytearray | memoryview) -> DefaultRecordBatch:
    """Read and sanity-check one v2 batch header (DefaultRecordBatch / ProduceRequest.validateRecords); the
    header's fields are read by kafka-python's DefaultRecordBatch, which is returned. Raises InvalidBatch;
    the CRC is checked separately (`check_crc`), after the size limit, as Kafka does."""
    if len(data) < HEADER_SIZE:
        raise InvalidBatch(
            Errors.CorruptRecordError.errno, f"{len(data)}-byte batch is shorter than a header"
        )
    _, length = _LOG_ENTRY.unpack_from(data)
    size = length + LOG_OVERHEAD
    if length < HEADER_SIZE - LOG_OVERHEAD or size > len(data):
        raise InvalidBatch(
            Errors.CorruptRecordError.errno, f"record batch length {length} does not match the data"
        )
    batch = DefaultRecordBatch(memoryview(data)[:size])
    if batch.magic != 2:
        raise InvalidBatch(
            Errors.InvalidRecordError.errno, f"record batch magic {batch.magic}: Produce v3+ needs magic 2"
        )
    # LogValidator.validateBatch
    if batch.last_offset_delta < 0:
        raise InvalidRecord("Batch has an invalid offset range")
    if batch.records_count <= 0:
        raise InvalidRecord("Invalid reported count for record batch")
    if batch.last_offset_delta + 1 != batch.records_count:
        raise InvalidRecord("Inconsistent batch offset range and record count")
    if batch.is_control_batch:
        raise InvalidRecord("Clients are not allowed to write control records")
    return batch


def check_crc(batch: DefaultRecordBatch) -> None:
    """DefaultRecordBatch.ensureValid: the CRC-32C over attributes .. end must match."""
    if not batch.validate_crc():
        raise InvalidBatch(
            Errors.CorruptRecordError.errno, "Record is corrupt (stored crc does not match computed crc)"
        )


def split_batches(records: bytes | bytearray | memoryview) -> list[memoryview]:
    """Cut a produced `records` field into its batches (Kafka requires exactly one for Produce v3+)."""
    view = memoryview(records)
    out = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < LOG_OVERHEAD:
            raise InvalidBatch(Errors.CorruptRecordError.errno, "truncated record batch")
        _, length = _LOG_ENTRY.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + length
        if length <= 0 or end > len(view):
            raise InvalidBatch(Errors.CorruptRecordError.errno, "truncated record batch")
        out.append(view[pos:end])
        pos = end
    return out


def build_batch(records: Sequence[tuple[bytes | None, bytes | None, int]]) -> bytearray:
    """A non-transactional, uncompressed v2 batch with offsets 0..n-1 (base offset patched on append),
    laid out as Kafka's MemoryRecordsBuilder writes it, with kafka-python's header layout and varints. The
    loop is not kafka-python's DefaultRecordBatchBuilder because seeding millions of records through it
    (type checks and a metadata object per record) takes about 1.8 times as long."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    first_ts = int(records[0][2])
    max_ts = first_ts
    out = bytearray(HEADER_SIZE)
    body = bytearray()
    add = body.append
    for delta, (key, value, timestamp_ms) in enumerate(records):
        ts = int(timestamp_ms)
        max_ts = max(max_ts, ts)
        body.clear()
        add(0)  # record attributes
        encode_varint(ts - first_ts, add)
        encode_varint(delta, add)
        if key is None:
            add(1)  # varint -1
        else:
            encode_varint(len(key), add)
            body += key
        if value is None:
            add(1)
        else:
            encode_varint(len(value), add)
            body += value
        add(0)  # no headers
        encode_varint(len(body), out.append)
        out += body
    count = len(records)
    _HEADER.pack_into(
        out, 0, 0, len(out) - LOG_OVERHEAD, 0, 2, 0, 0, count - 1, first_ts, max_ts, -1, -1, -1, count
    )
    crc = calc_crc32c(memoryview(out)[DefaultRecordBatch.ATTRIBUTES_OFFSET :])
    struct.pack_into(">I", out, DefaultRecordBatch.CRC_OFFSET, crc)
    return out


class PartitionLog:
    """One partition: the stored batches, back to back, and an index by offset."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.batches: list[BatchInfo] = []
        self._bases: list[int] = []  # base offsets, for bisect
        self.log_start_offset = 0
        self.high_watermark = 0
        self.producers: dict[int, ProducerEntry] = {}  # idempotent producers' sequence state

    def append(self, batch: bytes | bytearray | memoryview, leader_epoch: int = 0) -> int:
        """Append one validated batch, assigning it the next offsets; return its base offset.

        baseOffset and partitionLeaderEpoch lie before the CRC-covered range, so patching them keeps
        the client's CRC valid and the batch is stored byte for byte otherwise.
        """
        base = self.high_watermark
        position = len(self.data)
        self.data += batch
        struct.pack_into(">q", self.data, position, base)  # baseOffset
        struct.pack_into(">i", self.data, position + LOG_OVERHEAD, leader_epoch)  # partitionLeaderEpoch
        (_, _, _, _, _, attributes, last_delta, _, max_ts, producer_id, _, _, _) = _HEADER.unpack_from(
            self.data, position
        )
        info = BatchInfo(
            position,
            len(batch),
            base,
            base + last_delta,
            max_ts,
            producer_id,
            bool(attributes & DefaultRecordBatch.TRANSACTIONAL_MASK),
            bool(attributes & DefaultRecordBatch.CONTROL_MASK),
        )
        self.batches.append(info)
        self._bases.append(base)
        self.high_watermark = info.last_offset + 1
        return base

    def batch_index_for(self, offset: int) -> int:
        """Index of the first batch holding `offset` or later offsets (len(batches) at the end)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self.batches[i].last_offset < offset:
            return i + 1
        return i

    def read(self, offset: int, max_bytes: int, *, min_one: bool) -> memoryview:
        """Whole batches from the one holding `offset`, up to `max_bytes` (KIP-74: at least one batch
        when `min_one`, even if it is larger). A zero-copy view of the stored bytes."""
        i = self.batch_index_for(offset)
        if i >= len(self.batches):
            return memoryview(b"")
        start = self.batches[i].position
        limit = start + max_bytes
        j = i
        while j < len(self.batches) and self.batches[j].position + self.batches[j].size <= limit:
            j += 1
        if j == i:
            if not min_one:
                return memoryview(b"")
            j = i + 1
        end = self.batches[j - 1].position + self.batches[j - 1].size
        return memoryview(self.data)[start:end]

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp_ms`, as ListOffsets wants
        (UnifiedLog.fetchOffsetByTimestamp); None when no record is that late."""
        for info in self.batches:
            if info.max_timestamp < timestamp_ms or info.control:
                continue
            batch = DefaultRecordBatch(bytes(self.data[info.position : info.position + info.size]))
            for record in batch:
                if record.timestamp >= timestamp_ms:
                    return record.offset, record.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the latest-stamped record (ListOffsets MAX_TIMESTAMP, KIP-734)."""
        best: BatchInfo | None = None
        for info in self.batches:
            if not info.control and (best is None or info.max_timestamp > best.max_timestamp):
                best = info
        if best is None:
            return None
        batch = DefaultRecordBatch(bytes(self.data[best.position : best.position + best.size]))
        for record in batch:
            if record.timestamp == best.max_timestamp:
                return record.offset, record.timestamp
        return best.last_offset, best.max_timestamp


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


class TopicStore:
    """All topics of the broker. Appends wake Fetch requests waiting for data (`wait_for_append`)."""

    def __init__(self) -> None:
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._waiters: set[asyncio.Future[None]] = set()

    # -- topics

    def create(
        self, name: str, partitions: int, *, internal: bool = False, configs: dict[str, str] | None = None
    ) -> Topic:
        if name in self._topics:
            raise ValueError(f"topic {name} already exists")
        logs = [PartitionLog() for _ in range(partitions)]
        topic = Topic(name, uuid.uuid4(), logs, internal, dict(configs or {}))
        self._topics[name] = topic
        self._by_id[topic.topic_id] = name
        return topic

    def delete(self, name: str) -> Topic:
        topic = self._topics.pop(name)
        self._by_id.pop(topic.topic_id, None)
        self._wake()  # fetchers of a deleted topic answer UNKNOWN_TOPIC_OR_PARTITION now
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        topic = self._topics[name]
        topic.partitions.extend(PartitionLog() for _ in range(total - len(topic.partitions)))

    def exists(self, name: str) -> bool:
        return name in self._topics

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def names(self) -> list[str]:
        return list(self._topics)

    def partition_count(self, name: str) -> int:
        return len(self._topics[name].partitions)

    def topic_id(self, name: str) -> uuid.UUID:
        return self._topics[name].topic_id

    def configs(self, name: str) -> dict[str, str]:
        """The topic's own config overrides (defaults are in configs.py)."""
        return self._topics[name].configs

    def is_internal(self, name: str) -> bool:
        return self._topics[name].internal

    def partition(self, name: str, partition: int) -> PartitionLog | None:
        topic = self._topics.get(name)
        if topic is None or not 0 <= partition < len(topic.partitions):
            return None
        return topic.partitions[partition]

    # -- records

    def append_batch(self, name: str, partition: int, batch: bytes | bytearray | memoryview) -> int:
        """Append one already validated v2 batch; return its base offset."""
        log = self.partition(name, partition)
        if log is None:
            raise KeyError(f"{name}-{partition} does not exist")
        base = log.append(batch)
        self._wake()
        return base

    def append_records(
        self, topic: str, partition: int, records: Iterable[tuple[bytes | None, bytes | None, int]]
    ) -> int:
        """Write records as one v2 batch, as the group coordinator writes to `__consumer_offsets`;
        return the batch's base offset (the log end offset when `records` is empty)."""
        records = list(records)
        log = self.partition(topic, partition)
        if log is None:
            raise KeyError(f"{topic}-{partition} does not exist")
        if not records:
            return log.high_watermark
        return self.append_batch(topic, partition, build_batch(records))

    # -- long polls

    def wait_for_append(self) -> asyncio.Future[None]:
        """A future that completes at the next append (or topic deletion). Callers must discard it
        (`discard_waiter`) when they stop waiting for another reason."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        return fut

    def waiting_fetches(self) -> int:
        """How many long polls wait for an append (tests use it to know a Fetch is parked)."""
        return sum(1 for fut in self._waiters if not fut.done())

    def discard_waiter(self, fut: asyncio.Future[None]) -> None:
        self._waiters.discard(fut)

    def _wake(self) -> None:
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, set()
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
