"""OffsetForLeaderEpoch: consumers check their position against the log (KIP-320).

The only leader epoch is 0, starting at offset 0 once the partition has a batch; the answer follows
LeaderEpochFileCache.endOffsetFor (storage/.../epoch/LeaderEpochFileCache.java) reached through
KafkaApis.handleOffsetForLeaderEpochRequest and Partition.lastOffsetForLeaderEpoch.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from .context import BrokerContext
from .registry import api_handler
from .topics import PartitionLog

UNDEFINED_EPOCH, UNDEFINED_OFFSET = -1, -1
LEADER_EPOCH = 0

TopicResult = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
EpochEndOffset = TopicResult.EpochEndOffset


def end_offset_for(log: PartitionLog, requested_epoch: int) -> tuple[int, int]:
    """(epoch, end offset) for `requested_epoch` with a cache holding epoch 0 from offset 0 (when written)."""
    if requested_epoch == UNDEFINED_EPOCH or not log.batches:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if requested_epoch == LEADER_EPOCH:
        return LEADER_EPOCH, log.high_watermark
    if requested_epoch > LEADER_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    return requested_epoch, 0  # older than any known epoch: the first known epoch's start offset


@api_handler(OffsetForLeaderEpochRequest, 2, 4)
async def handle_offset_for_leader_epoch(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    topics = []
    for topic in request.topics:
        results = []
        for p in topic.partitions:
            log = ctx.topics.partition(topic.topic, p.partition)
            error, epoch, offset = Errors.NoError.errno, UNDEFINED_EPOCH, UNDEFINED_OFFSET
            if log is None:
                error = Errors.UnknownTopicOrPartitionError.errno
            elif p.current_leader_epoch > LEADER_EPOCH:
                error = Errors.UnknownLeaderEpochError.errno
            else:
                epoch, offset = end_offset_for(log, p.leader_epoch)
            results.append(
                EpochEndOffset(error_code=error, partition=p.partition, leader_epoch=epoch, end_offset=offset)
            )
        topics.append(TopicResult(topic=topic.topic, partitions=results))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics)
