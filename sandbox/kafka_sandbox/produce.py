"""Produce and InitProducerId: append client batches as they arrived, after Kafka's checks.

Produce follows KafkaApis.handleProduceRequest, ProduceRequest.validateRecords,
ReplicaManager.appendRecords/appendToLocalLog and UnifiedLog.analyzeAndValidateRecords; a single replica
makes acks=1 and acks=-1 the same. InitProducerId serves idempotent producers only (no transactions).
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import kafka.errors as Errors
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafka.record.default_records import DefaultRecordBatch

from . import producer_state
from .context import BrokerContext
from .registry import CloseConnection, api_handler, current_request
from .topics import InvalidBatch, InvalidRecord, check_crc, read_header, split_batches

ADMIN_CLIENT_ID = (
    "__admin_client"  # AdminUtils.ADMIN_CLIENT_ID: the only client allowed to write internal topics
)
ZERO_UUID = uuid.UUID(int=0)

TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = TopicResponse.PartitionProduceResponse


def _partition_response(
    index: int, error: int, base_offset: int = -1, log_start: int = -1, message: str | None = None
) -> Any:
    return PartitionResponse(
        index=index,
        error_code=error,
        base_offset=base_offset,
        log_append_time_ms=-1,  # CreateTime topics: Kafka sends -1
        log_start_offset=log_start,
        record_errors=[],
        error_message=message,
    )


def _append(ctx: BrokerContext, topic: str, index: int, records: Any, acks: int, api_version: int) -> Any:
    """Validate and append one partition's records, in the order Kafka checks; the partition's response."""
    log = ctx.topics.partition(topic, index)
    if log is None:
        return _partition_response(index, Errors.UnknownTopicOrPartitionError.errno)
    try:
        if not records:
            raise InvalidRecord(
                f"Produce requests with version {api_version} must have at least one record batch"
            )
        batches = split_batches(records)
        if len(batches) != 1:
            raise InvalidRecord(
                f"Produce requests with version {api_version} are only allowed to contain exactly one record batch"
            )
        batch = batches[0]
        header = read_header(batch)
        if api_version < 7 and header.compression_type == DefaultRecordBatch.CODEC_ZSTD:
            raise InvalidBatch(Errors.UnsupportedCompressionTypeError.errno, "ZStandard needs Produce v7+")
        if acks not in (-1, 0, 1):
            raise InvalidBatch(Errors.InvalidRequiredAcksError.errno, f"acks={acks}")
        if ctx.topics.is_internal(topic) and current_request().client_id != ADMIN_CLIENT_ID:
            raise InvalidBatch(Errors.InvalidTopicError.errno, f"Cannot append to internal topic {topic}")
        max_bytes = int(ctx.topics.configs(topic).get("max.message.bytes", ctx.config.message_max_bytes))
        if header.size_in_bytes > max_bytes:
            raise InvalidBatch(
                Errors.MessageSizeTooLargeError.errno,
                f"The record batch size in the append to {topic}-{index} is {header.size_in_bytes} bytes which exceeds "
                f"the maximum configured value of {max_bytes}.",
            )
        check_crc(header)
        if header.is_transactional:
            raise InvalidBatch(
                Errors.InvalidTxnStateError.errno, "the sandbox broker does not simulate transactions"
            )
    except InvalidBatch as exc:
        return _partition_response(index, exc.error_code, message=str(exc))
    if header.producer_id >= 0:
        last_seq = header.last_sequence  # DefaultRecordBatch.lastSequence: wraps at Integer.MAX_VALUE
        error, duplicate_of = producer_state.check(
            log.producers.get(header.producer_id), header.producer_epoch, header.base_sequence, last_seq
        )
        if error != Errors.NoError.errno:
            return _partition_response(index, error)
        if duplicate_of is not None:
            return _partition_response(index, Errors.NoError.errno, duplicate_of, log.log_start_offset)
    base = ctx.topics.append_batch(topic, index, batch)
    if header.producer_id >= 0:
        producer_state.record(
            log.producers, header.producer_id, header.producer_epoch, header.base_sequence, last_seq, base
        )
    return _partition_response(index, Errors.NoError.errno, base, log.log_start_offset)


@api_handler(ProduceRequest, 3, 13)
async def handle_produce(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    responses = []
    any_error = False
    for topic_data in request.topic_data:
        if api_version >= 13:
            name = ctx.topics.name_for_id(topic_data.topic_id or ZERO_UUID)
            unknown = Errors.UnknownTopicIdError.errno
        else:
            name = topic_data.name if ctx.topics.exists(topic_data.name) else None
            unknown = Errors.UnknownTopicOrPartitionError.errno
        partitions = []
        for p in topic_data.partition_data:
            if name is None:
                partitions.append(_partition_response(p.index, unknown))
            else:
                partitions.append(_append(ctx, name, p.index, p.records, request.acks, api_version))
        any_error = any_error or any(r.error_code != Errors.NoError.errno for r in partitions)
        responses.append(
            TopicResponse(name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=partitions)
        )
    if request.acks == 0:
        if any_error:
            # KafkaApis: with acks=0 the client learns of errors only by losing its connection.
            raise CloseConnection("error during produce with acks=0")
        return None
    return ProduceResponse(responses=responses, throttle_time_ms=0, node_endpoints=[])


_producer_ids = itertools.count(1000)


@api_handler(InitProducerIdRequest, 0, 6)
async def handle_init_producer_id(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    """A fresh producer id at epoch 0 for idempotent producers (TransactionCoordinator.handleInitProducerId
    with a null transactional id). Transactional ids are refused: there is no transaction coordinator."""
    if request.transactional_id is not None:
        return InitProducerIdResponse(
            throttle_time_ms=0, error_code=Errors.NotCoordinatorError.errno, producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=Errors.NoError.errno, producer_id=next(_producer_ids), producer_epoch=0
    )
