"""Metadata, FindCoordinator and DescribeCluster: one broker that leads every partition and coordinates every group.

Metadata follows KafkaApis.handleTopicMetadataRequest / getTopicMetadata; FindCoordinator follows
KafkaApis.handleFindCoordinatorRequest / getCoordinator.
"""

from __future__ import annotations

import uuid
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)

from . import acl_operations
from .context import BrokerContext
from .registry import CloseConnection, api_handler
from .topic_names import invalid_reason, is_internal

ZERO_UUID = uuid.UUID(int=0)
LEADER_EPOCH = 0  # the single broker has led every partition since it was created

Topic = MetadataResponse.MetadataResponseTopic
Partition = Topic.MetadataResponsePartition


def _topic_error(error: int, name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> Any:
    return Topic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=bool(name and is_internal(name)),
        partitions=[],
        authorized_operations=acl_operations.NOT_REQUESTED,
    )


def _topic(ctx: BrokerContext, name: str) -> Any:
    node = ctx.node_id
    return Topic(
        error_code=Errors.NoError.errno,
        name=name,
        topic_id=ctx.topics.topic_id(name),
        is_internal=ctx.topics.is_internal(name),
        partitions=[
            Partition(
                error_code=Errors.NoError.errno,
                partition_index=p,
                leader_id=node,
                leader_epoch=LEADER_EPOCH,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for p in range(ctx.topics.partition_count(name))
        ],
        authorized_operations=acl_operations.NOT_REQUESTED,
    )


@api_handler(MetadataRequest, 0, 13)
async def handle_metadata(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    requested = request.topics
    all_topics = requested is None or (api_version == 0 and not requested)
    topics: list[Any] = []
    if all_topics:
        topics = [_topic(ctx, name) for name in ctx.topics.names()]
    else:
        for wanted in requested:
            topic_id = wanted.topic_id or ZERO_UUID
            if api_version < 12 and (wanted.name is None or topic_id != ZERO_UUID):
                # KafkaApis throws InvalidRequestException: the request fails as a whole.
                raise CloseConnection("Metadata before v12 needs topic names and no topic ids")
            if topic_id != ZERO_UUID:
                name = ctx.topics.name_for_id(topic_id)
                topics.append(
                    _topic(ctx, name)
                    if name is not None
                    else _topic_error(Errors.UnknownTopicIdError.errno, None, topic_id)
                )
            elif ctx.topics.exists(wanted.name):
                topics.append(_topic(ctx, wanted.name))
            elif invalid_reason(wanted.name) is not None:
                topics.append(_topic_error(Errors.InvalidTopicError.errno, wanted.name))
            elif request.allow_auto_topic_creation and ctx.config.auto_create_topics:
                # AutoTopicCreationManager.createTopics answers LEADER_NOT_AVAILABLE while the topic is made.
                ctx.topics.create(wanted.name, ctx.config.default_partitions)
                topics.append(_topic_error(Errors.LeaderNotAvailableError.errno, wanted.name))
            else:
                topics.append(_topic_error(Errors.UnknownTopicOrPartitionError.errno, wanted.name))
    if api_version >= 8 and request.include_topic_authorized_operations:
        for topic in topics:
            topic.authorized_operations = acl_operations.TOPIC_OPERATIONS
    cluster_ops = acl_operations.NOT_REQUESTED
    if 8 <= api_version <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = acl_operations.CLUSTER_OPERATIONS
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                node_id=ctx.node_id, host=ctx.host, port=ctx.port, rack=None
            )
        ],
        cluster_id=ctx.cluster_id,
        controller_id=ctx.node_id,
        topics=topics,
        authorized_operations=cluster_ops,
        error_code=Errors.NoError.errno,
    )


GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def coordinator_for(key_type: int) -> tuple[type[Errors.BrokerResponseError], bool]:
    """(error, found): groups are coordinated here; transactions and share groups are not simulated, and
    a Kafka broker without their state topic answers COORDINATOR_NOT_AVAILABLE (getCoordinator)."""
    if key_type == GROUP_KEY:
        return Errors.NoError, True
    if key_type == TRANSACTION_KEY:
        return Errors.CoordinatorNotAvailableError, False
    # Share keys before v6, share keys without a share coordinator, and unknown key types.
    return Errors.InvalidRequestError, False


@api_handler(FindCoordinatorRequest, 0, 6)
async def handle_find_coordinator(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    key_type = request.key_type if api_version >= 1 else GROUP_KEY
    error, found = coordinator_for(key_type)
    node_id, host, port = (ctx.node_id, ctx.host, ctx.port) if found else (-1, "", -1)
    if api_version < 4:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            error_code=error.errno,
            # FindCoordinatorResponse.prepareOldResponse sends the error's text; kafka-python's
            # description stands in for the Java exception's message.
            error_message=None if error is Errors.NoError else error.description,
            node_id=node_id,
            host=host,
            port=port,
        )
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        coordinators=[
            FindCoordinatorResponse.Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=error.errno, error_message=None
            )
            for key in request.coordinator_keys
        ],
    )


BROKER_ENDPOINT = 1  # EndpointType.BROKER; 2 is CONTROLLER, 0 UNKNOWN


@api_handler(DescribeClusterRequest, 0, 2)
async def handle_describe_cluster(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    """KafkaApis.handleDescribeCluster / AuthHelper.computeDescribeClusterResponse."""
    endpoint_type = request.endpoint_type if api_version >= 1 else BROKER_ENDPOINT
    error, message = Errors.NoError.errno, None
    if endpoint_type not in (BROKER_ENDPOINT, 2):
        error = (
            Errors.InvalidRequestError.errno
            if api_version == 0
            else Errors.UnsupportedEndpointTypeError.errno
        )
        message = f"Unsupported endpoint type {endpoint_type}"
    elif endpoint_type != BROKER_ENDPOINT:
        error = (
            Errors.InvalidRequestError.errno if api_version == 0 else Errors.MismatchedEndpointTypeError.errno
        )
        message = (
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        )
    ok = error == Errors.NoError.errno
    broker = DescribeClusterResponse.DescribeClusterBroker(
        broker_id=ctx.node_id, host=ctx.host, port=ctx.port, rack=None, is_fenced=False
    )
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=ctx.cluster_id if ok else "",
        controller_id=ctx.node_id if ok else -1,
        brokers=[broker] if ok else [],
        authorized_operations=(
            acl_operations.CLUSTER_OPERATIONS
            if ok and request.include_cluster_authorized_operations
            else acl_operations.NOT_REQUESTED
        ),
    )
