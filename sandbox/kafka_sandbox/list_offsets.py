"""ListOffsets: earliest, latest, max-timestamp and by-timestamp lookups on the in-memory logs.

Follows KafkaApis.handleListOffsetRequestV1AndAbove, ReplicaManager.fetchOffset,
Partition.fetchOffsetForTimestamp and UnifiedLog.fetchOffsetByTimestamp. There is no tiered storage, so
EARLIEST_LOCAL is EARLIEST and LATEST_TIERED answers offset -1 with leader epoch -1, as Kafka does
without remote storage.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from .context import BrokerContext
from .registry import api_handler
from .topics import PartitionLog

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
UNKNOWN = -1

TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResponse = TopicResponse.ListOffsetsPartitionResponse


def lookup(log: PartitionLog, timestamp: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) for one partition; -1s when nothing matches."""
    epoch = 0 if log.batches else UNKNOWN  # the leader epoch cache has an entry once something is written
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return UNKNOWN, log.log_start_offset, epoch
    if timestamp == LATEST:
        return UNKNOWN, log.high_watermark, epoch
    if timestamp == LATEST_TIERED:
        return UNKNOWN, UNKNOWN, UNKNOWN
    found = log.max_timestamp() if timestamp == MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    if found is None:
        return UNKNOWN, UNKNOWN, UNKNOWN
    offset, ts = found
    return ts, offset, 0


@api_handler(ListOffsetsRequest, 1, 11)
async def handle_list_offsets(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    seen: dict[tuple[str, int], int] = {}
    for topic in request.topics:
        for p in topic.partitions:
            seen[(topic.name, p.partition_index)] = seen.get((topic.name, p.partition_index), 0) + 1
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            error = Errors.NoError.errno
            ts, offset, epoch = UNKNOWN, UNKNOWN, UNKNOWN
            log = ctx.topics.partition(topic.name, p.partition_index)
            if seen[(topic.name, p.partition_index)] > 1:
                error = Errors.InvalidRequestError.errno  # ListOffsetsRequest.duplicatePartitions
            elif log is None:
                error = Errors.UnknownTopicOrPartitionError.errno
            elif p.current_leader_epoch > 0:
                error = Errors.UnknownLeaderEpochError.errno
            else:
                ts, offset, epoch = lookup(log, p.timestamp)
            partitions.append(
                PartitionResponse(
                    partition_index=p.partition_index,
                    error_code=error,
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=epoch,
                )
            )
        topics.append(TopicResponse(name=topic.name, partitions=partitions))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)
