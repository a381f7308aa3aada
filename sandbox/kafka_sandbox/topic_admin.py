"""CreateTopics, DeleteTopics and CreatePartitions, with the KRaft controller's checks and messages.

Sources: ControllerApis.createTopics / deleteTopics / createPartitions and
ReplicationControlManager.createTopics / createTopic / validateNewTopicNames / computeConfigChanges /
createPartitions (metadata/src/main/java/org/apache/kafka/controller/). One broker means a replication
factor above 1 cannot be placed (StripedReplicaPlacer's message).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from . import configs
from .context import BrokerContext
from .registry import api_handler
from .topic_names import invalid_reason, is_internal, unify_collision_chars

ZERO_UUID = uuid.UUID(int=0)
BROKERS = 1

TopicResult = CreateTopicsResponse.CreatableTopicResult
TopicConfig = TopicResult.CreatableTopicConfigs
DeleteResult = DeleteTopicsResponse.DeletableTopicResult
PartitionsResult = CreatePartitionsResponse.CreatePartitionsTopicResult


class TopicAdminError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _partitions_and_rf(ctx: BrokerContext, topic: Any) -> tuple[int, int]:
    """ReplicationControlManager.createTopic's checks; (partitions, replication factor) or TopicAdminError."""
    if topic.assignments:
        if topic.replication_factor != -1:
            raise TopicAdminError(
                Errors.InvalidRequestError.errno,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if topic.num_partitions != -1:
            raise TopicAdminError(
                Errors.InvalidRequestError.errno,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        indexes = [a.partition_index for a in topic.assignments]
        for a in topic.assignments:
            if indexes.count(a.partition_index) > 1:
                raise TopicAdminError(
                    Errors.InvalidReplicationAssignmentError.errno,
                    f"Found multiple manual partition assignments for partition {a.partition_index}",
                )
            if (
                not a.broker_ids
                or any(b != ctx.node_id for b in a.broker_ids)
                or len(set(a.broker_ids)) != len(a.broker_ids)
            ):
                raise TopicAdminError(
                    Errors.InvalidReplicationAssignmentError.errno,
                    f"The manual partition assignment includes broker(s) that are not registered: {a.broker_ids}",
                )
        if sorted(indexes) != list(range(len(indexes))):
            raise TopicAdminError(
                Errors.InvalidReplicationAssignmentError.errno,
                "partitions should be a consecutive 0-based integer sequence",
            )
        return len(indexes), 1
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise TopicAdminError(
            Errors.InvalidReplicationFactorError.errno,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise TopicAdminError(
            Errors.InvalidPartitionsError.errno,
            "Number of partitions was set to an invalid non-positive value.",
        )
    partitions = ctx.config.default_partitions if topic.num_partitions == -1 else topic.num_partitions
    rf = 1 if topic.replication_factor == -1 else topic.replication_factor
    if rf > BROKERS:
        raise TopicAdminError(
            Errors.InvalidReplicationFactorError.errno,
            f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be "
            f"reached because only {BROKERS} broker(s) are registered.",
        )
    return partitions, rf


def _topic_configs(topic: Any) -> dict[str, str]:
    null = [c.name for c in topic.configs if c.value is None]
    if null:
        raise TopicAdminError(
            Errors.InvalidConfigurationError.errno,
            f"Null value not supported for topic configs: {','.join(null)}",
        )
    unknown = configs.unknown_topic_configs([c.name for c in topic.configs])
    if unknown:
        raise TopicAdminError(Errors.InvalidConfigurationError.errno, f"Unknown topic config name: {unknown[0]}")
    return {c.name: c.value for c in topic.configs}


def _create_one(ctx: BrokerContext, topic: Any, validate_only: bool) -> Any:
    name = topic.name
    reason = invalid_reason(name)
    if reason is not None:
        raise TopicAdminError(Errors.InvalidTopicError.errno, reason)
    if ctx.topics.exists(name):
        raise TopicAdminError(Errors.TopicAlreadyExistsError.errno, f"Topic '{name}' already exists.")
    unified = unify_collision_chars(name)
    for other in ctx.topics.names():
        if unify_collision_chars(other) == unified:
            raise TopicAdminError(
                Errors.InvalidTopicError.errno, f"Topic '{name}' collides with existing topic: {other}"
            )
    overrides = _topic_configs(topic)
    partitions, rf = _partitions_and_rf(ctx, topic)
    topic_id = ZERO_UUID
    if not validate_only:
        topic_id = ctx.topics.create(name, partitions, internal=is_internal(name), configs=overrides).topic_id
    return TopicResult(
        name=name,
        topic_id=topic_id,
        error_code=Errors.NoError.errno,
        error_message=None,
        topic_config_error_code=Errors.NoError.errno,
        num_partitions=partitions,
        replication_factor=rf,
        configs=[
            TopicConfig(
                name=e.name, value=e.value, read_only=False, config_source=e.source, is_sensitive=False
            )
            for e in configs.topic_entries(overrides)
        ],
    )


@api_handler(CreateTopicsRequest, 2, 7)
async def handle_create_topics(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    counts = Counter(t.name for t in request.topics)
    results = []
    reported_duplicates: set[str] = set()
    for topic in request.topics:
        if counts[topic.name] > 1:
            if topic.name not in reported_duplicates:
                reported_duplicates.add(topic.name)
                results.append(
                    _error_result(topic.name, Errors.InvalidRequestError.errno, "Duplicate topic name.")
                )
            continue
        try:
            results.append(_create_one(ctx, topic, bool(request.validate_only)))
        except TopicAdminError as exc:
            results.append(_error_result(topic.name, exc.code, exc.message))
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def _error_result(name: str, code: int, message: str | None) -> Any:
    return TopicResult(
        name=name,
        topic_id=ZERO_UUID,
        error_code=code,
        error_message=message,
        topic_config_error_code=Errors.NoError.errno,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


def _delete_result(name: str | None, topic_id: uuid.UUID, code: int, message: str | None = None) -> Any:
    return DeleteResult(name=name, topic_id=topic_id, error_code=code, error_message=message)


def _resolve_deletions(
    ctx: BrokerContext, given: list[tuple[str | None, uuid.UUID]]
) -> tuple[list[Any], dict[uuid.UUID, str]]:
    """ControllerApis.deleteTopics' bookkeeping: (error results, id -> name of the topics to delete)."""
    results = []
    by_name = Counter(n for n, i in given if n is not None and i == ZERO_UUID)
    by_id = Counter(i for n, i in given if n is None and i != ZERO_UUID)
    duplicate_names = [n for n, count in by_name.items() if count > 1]
    duplicate_ids = [i for i, count in by_id.items() if count > 1]
    to_delete: dict[uuid.UUID, str] = {}
    named_twice: set[uuid.UUID] = set()
    for name, topic_id in given:
        if name is None and topic_id == ZERO_UUID:
            results.append(
                _delete_result(
                    None,
                    ZERO_UUID,
                    Errors.InvalidRequestError.errno,
                    "Neither topic name nor id were specified.",
                )
            )
        elif name is not None and topic_id != ZERO_UUID:
            results.append(
                _delete_result(
                    name,
                    topic_id,
                    Errors.InvalidRequestError.errno,
                    "You may not specify both topic name and topic id.",
                )
            )
        elif name in duplicate_names or (name is None and topic_id in duplicate_ids):
            continue  # answered once below
        elif name is None:
            found = ctx.topics.name_for_id(topic_id)
            if found is None:
                results.append(_delete_result(None, topic_id, Errors.UnknownTopicIdError.errno))
            elif topic_id in to_delete:
                named_twice.add(topic_id)
            else:
                to_delete[topic_id] = found
        elif not ctx.topics.exists(name):
            results.append(_delete_result(name, ZERO_UUID, Errors.UnknownTopicOrPartitionError.errno))
        else:
            topic_id = ctx.topics.topic_id(name)
            if topic_id in to_delete:
                named_twice.add(topic_id)
            else:
                to_delete[topic_id] = name
    results += [
        _delete_result(n, ZERO_UUID, Errors.InvalidRequestError.errno, "Duplicate topic name.")
        for n in duplicate_names
    ]
    results += [
        _delete_result(None, i, Errors.InvalidRequestError.errno, "Duplicate topic id.")
        for i in duplicate_ids
    ]
    for topic_id in named_twice:
        results.append(
            _delete_result(
                to_delete.pop(topic_id),
                topic_id,
                Errors.InvalidRequestError.errno,
                "The provided topic name maps to an ID that was already supplied.",
            )
        )
    return results, to_delete


@api_handler(DeleteTopicsRequest, 1, 6)
async def handle_delete_topics(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    # (name, id) pairs as the request gave them; v6 may name a topic by id.
    given: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
        if api_version >= 6
        else [(n, ZERO_UUID) for n in request.topic_names]
    )
    results, to_delete = _resolve_deletions(ctx, given)
    deleted = []
    for topic_id, name in to_delete.items():
        if is_internal(name):
            # Kafka's KRaft controller would delete it; the sandbox's coordinator cannot live without it.
            results.append(
                _delete_result(
                    name,
                    topic_id,
                    Errors.InvalidRequestError.errno,
                    f"The sandbox broker does not delete internal topic {name}.",
                )
            )
            continue
        ctx.topics.delete(name)
        deleted.append(name)
        results.append(_delete_result(name, topic_id, Errors.NoError.errno))
    if deleted:
        ctx.coordinator.on_topics_deleted(deleted)  # GroupCoordinator.onPartitionsDeleted: drop their offsets
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


@api_handler(CreatePartitionsRequest, 0, 3)
async def handle_create_partitions(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    counts = Counter(t.name for t in request.topics)
    results = []
    reported: set[str] = set()
    for topic in request.topics:
        if counts[topic.name] > 1:
            if topic.name not in reported:
                reported.add(topic.name)
                results.append(
                    PartitionsResult(
                        name=topic.name,
                        error_code=Errors.InvalidRequestError.errno,
                        error_message="Duplicate topic name.",
                    )
                )
            continue
        try:
            _add_partitions(ctx, topic, bool(request.validate_only))
            results.append(
                PartitionsResult(name=topic.name, error_code=Errors.NoError.errno, error_message=None)
            )
        except TopicAdminError as exc:
            results.append(PartitionsResult(name=topic.name, error_code=exc.code, error_message=exc.message))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


def _add_partitions(ctx: BrokerContext, topic: Any, validate_only: bool) -> None:
    """ReplicationControlManager.createPartitions."""
    if not ctx.topics.exists(topic.name):
        raise TopicAdminError(
            Errors.UnknownTopicOrPartitionError.errno, "This server does not host this topic-partition."
        )
    current = ctx.topics.partition_count(topic.name)
    if topic.count == current:
        raise TopicAdminError(Errors.InvalidPartitionsError.errno, f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise TopicAdminError(
            Errors.InvalidPartitionsError.errno,
            f"The topic {topic.name} currently has {current} partition(s); {topic.count} would not be an increase.",
        )
    additional = topic.count - current
    if topic.assignments is not None:
        if len(topic.assignments) != additional:
            raise TopicAdminError(
                Errors.InvalidReplicationAssignmentError.errno,
                f"Attempted to add {additional} additional partition(s), but only {len(topic.assignments)} "
                "assignment(s) were specified.",
            )
        for a in topic.assignments:
            if list(a.broker_ids) != [ctx.node_id]:
                raise TopicAdminError(
                    Errors.InvalidReplicationAssignmentError.errno,
                    f"The manual partition assignment includes broker(s) that are not registered: {a.broker_ids}",
                )
    if not validate_only:
        ctx.topics.add_partitions(topic.name, topic.count)
