"""Fetch: serve stored batches as they are, with long polls woken by appends.

Follows KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages / readFromLog (KIP-74: the first
partition with data returns at least one whole batch even above the limits; later partitions share what is
left of max_bytes) and DelayedFetch (answer at once when min_bytes are ready, a partition has an error or
max_wait_ms is 0; otherwise wait for appends until max_wait_ms). Fetch sessions (KIP-227) are declined the
way a broker with a full session cache declines them: every response carries session id 0, so clients
send full fetch requests.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.protocol.consumer import FetchRequest, FetchResponse

from .context import BrokerContext
from .registry import api_handler

READ_COMMITTED = 1
FINAL_EPOCH, INITIAL_EPOCH = -1, 0  # FetchMetadata
ZERO_UUID = uuid.UUID(int=0)
EMPTY = b""

TopicResponse = FetchResponse.FetchableTopicResponse
PartitionData = TopicResponse.PartitionData


@dataclass(frozen=True)
class Wanted:
    """One requested partition, its topic resolved (name is None when unknown)."""

    name: str | None
    topic_id: uuid.UUID
    unknown_error: int
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int


@dataclass(frozen=True)
class PartitionRead:
    error: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records: memoryview | bytes = EMPTY


def _wanted(ctx: BrokerContext, request: Any, api_version: int) -> list[Wanted]:
    out = []
    for topic in request.topics:
        if api_version >= 13:
            topic_id = topic.topic_id or ZERO_UUID
            name = ctx.topics.name_for_id(topic_id)
            error = Errors.UnknownTopicIdError.errno
        else:
            topic_id = ZERO_UUID
            name = topic.topic if ctx.topics.exists(topic.topic) else None
            error = Errors.UnknownTopicOrPartitionError.errno
        for p in topic.partitions:
            out.append(
                Wanted(
                    name,
                    topic_id,
                    error,
                    p.partition,
                    p.fetch_offset,
                    p.partition_max_bytes,
                    p.current_leader_epoch,
                )
            )
    return out


def read_partitions(ctx: BrokerContext, wanted: list[Wanted], max_bytes: int) -> list[PartitionRead]:
    """One pass of ReplicaManager.readFromLog over the requested partitions."""
    limit = max_bytes
    min_one = True
    out = []
    for w in wanted:
        log = ctx.topics.partition(w.name, w.partition) if w.name is not None else None
        if log is None:
            out.append(
                PartitionRead(
                    w.unknown_error if w.name is None else Errors.UnknownTopicOrPartitionError.errno
                )
            )
            continue
        if w.current_leader_epoch > 0:  # the only leader epoch is 0
            out.append(PartitionRead(Errors.UnknownLeaderEpochError.errno))
            continue
        if not log.log_start_offset <= w.fetch_offset <= log.high_watermark:
            out.append(PartitionRead(Errors.OffsetOutOfRangeError.errno))
            continue
        data = log.read(w.fetch_offset, min(w.max_bytes, limit), min_one=min_one)
        if len(data):
            min_one = False
            limit = max(0, limit - len(data))
        out.append(PartitionRead(Errors.NoError.errno, log.high_watermark, log.log_start_offset, data))
    return out


def _respond_now(reads: list[PartitionRead], min_bytes: int) -> bool:
    ready = sum(len(r.records) for r in reads)
    return ready >= min_bytes or any(r.error != Errors.NoError.errno for r in reads)


def _response(
    wanted: list[Wanted], reads: list[PartitionRead], read_committed: bool, api_version: int
) -> Any:
    topics: list[Any] = []
    last_key: tuple[Any, ...] | None = None
    for w, r in zip(wanted, reads, strict=True):
        key = (w.name, w.topic_id)
        if key != last_key:
            topics.append(TopicResponse(topic=w.name, topic_id=w.topic_id, partitions=[]))
            last_key = key
        topics[-1].partitions.append(
            PartitionData(
                partition_index=w.partition,
                error_code=r.error,
                high_watermark=r.high_watermark,
                last_stable_offset=r.high_watermark,  # no transactions: the LSO is the high watermark
                log_start_offset=r.log_start_offset,
                aborted_transactions=[] if read_committed else None,
                preferred_read_replica=-1,
                records=r.records,
            )
        )
    return FetchResponse(throttle_time_ms=0, error_code=Errors.NoError.errno, session_id=0, responses=topics)


def _incremental(request: Any, api_version: int) -> bool:
    """FetchManager.newContext: incremental requests need a session, and this broker keeps none."""
    return api_version >= 7 and request.session_epoch not in (FINAL_EPOCH, INITIAL_EPOCH)


@api_handler(FetchRequest, 4, 18)
async def handle_fetch(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    if _incremental(request, api_version):
        return FetchResponse(
            throttle_time_ms=0,
            error_code=Errors.FetchSessionIdNotFoundError.errno,
            session_id=0,
            responses=[],
        )
    wanted = _wanted(ctx, request, api_version)
    read_committed = request.isolation_level == READ_COMMITTED
    max_bytes = request.max_bytes if api_version >= 3 else 2**31 - 1
    reads = read_partitions(ctx, wanted, max_bytes)
    if request.max_wait_ms > 0 and wanted and not _respond_now(reads, request.min_bytes):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.max_wait_ms / 1000
        while True:
            waiter = ctx.topics.wait_for_append()
            try:
                await asyncio.wait_for(waiter, deadline - loop.time())
            except TimeoutError:
                reads = read_partitions(ctx, wanted, max_bytes)
                break
            finally:
                ctx.topics.discard_waiter(waiter)
            reads = read_partitions(ctx, wanted, max_bytes)
            if _respond_now(reads, request.min_bytes) or loop.time() >= deadline:
                break
    return _response(wanted, reads, read_committed, api_version)
