"""The group APIs on the wire: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
OffsetDelete, ListGroups, DescribeGroups and DeleteGroups.

Each handler turns kafka-python's request object into the coordinator's plain request data, asks the
coordinator (`ctx.coordinator.core`, see coordinator/), and builds the response for the request's
version the way Kafka's response classes do (JoinGroupResponse's protocol-name rule, LeaveGroup and
OffsetFetch flattening for old versions). Version ranges are Kafka 4.x's, as far as kafka-python can
encode them: OffsetCommit v2-9 and OffsetFetch v1-9 (4.0 removed OffsetCommit v0-1 and OffsetFetch v0;
v10 addresses topics by id and is not served).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

import kafka.errors as Errors
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

from . import acl_operations
from .context import BrokerContext
from .coordinator import messages as m
from .coordinator.pending import Pending
from .registry import api_handler, current_request

T = TypeVar("T")
log = logging.getLogger(__name__)


def _context(api_version: int) -> m.RequestContext:
    """Kafka's RequestContext: clientAddress().toString() renders as "/127.0.0.1"."""
    info = current_request()
    return m.RequestContext(api_version, info.client_id or "", f"/{info.client_host}", info.connection_id)


async def _wait(pending: Pending[T]) -> T:
    if pending.done:
        return pending.result()
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def resolve(result: T) -> None:
        if not future.done():
            future.set_result(result)

    pending.add_done_callback(resolve)
    return await future


def _bytes(value: Any) -> bytes:
    return bytes(value) if value is not None else b""


# ---- JoinGroup ----


def _join_response(response: m.JoinGroupResponse, api_version: int) -> Any:
    name = response.protocol_name
    if api_version < 7 and name is None:
        name = ""  # JoinGroupResponse: no nullable protocol name before v7
    elif api_version >= 7 and name == "":
        name = None
    member_class = JoinGroupResponse.JoinGroupResponseMember
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=response.error.errno,
        generation_id=response.generation_id,
        protocol_type=response.protocol_type,
        protocol_name=name,
        leader=response.leader,
        skip_assignment=response.skip_assignment,
        member_id=response.member_id,
        members=[
            member_class(member_id=x.member_id, group_instance_id=x.group_instance_id, metadata=x.metadata)
            for x in response.members
        ],
    )


# Kafka 4.x removed JoinGroup v0-v1 (KIP-896; JoinGroupRequest.json "validVersions": "2-9").
@api_handler(JoinGroupRequest, 2, 9)
async def handle_join_group(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    rctx = _context(api_version)
    join = m.JoinGroupRequest(
        group_id=request.group_id,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        member_id=request.member_id,
        protocol_type=request.protocol_type,
        protocols=tuple(m.Protocol(p.name, _bytes(p.metadata)) for p in request.protocols),
        group_instance_id=request.group_instance_id if api_version >= 5 else None,
        reason=request.reason if api_version >= 8 else None,
    )
    coordinator.heard_from(join.group_id, join.member_id, rctx.connection_id)
    log.debug(
        "JoinGroup v%d %s member=%r from connection %s",
        api_version,
        join.group_id,
        join.member_id,
        rctx.connection_id,
    )
    response = await _wait(coordinator.core.join_group(rctx, join))
    log.debug(
        "JoinGroup %s -> %s member=%r generation=%d",
        join.group_id,
        response.error.message,
        response.member_id,
        response.generation_id,
    )
    coordinator.heard_from(join.group_id, response.member_id, rctx.connection_id)
    return _join_response(response, api_version)


# ---- SyncGroup ----


@api_handler(SyncGroupRequest, 0, 5)
async def handle_sync_group(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    rctx = _context(api_version)
    sync = m.SyncGroupRequest(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        assignments=tuple((a.member_id, _bytes(a.assignment)) for a in request.assignments),
        group_instance_id=request.group_instance_id if api_version >= 3 else None,
        protocol_type=request.protocol_type if api_version >= 5 else None,
        protocol_name=request.protocol_name if api_version >= 5 else None,
    )
    coordinator.heard_from(sync.group_id, sync.member_id, rctx.connection_id)
    log.debug(
        "SyncGroup v%d %s member=%r generation=%d",
        api_version,
        sync.group_id,
        sync.member_id,
        sync.generation_id,
    )
    response = await _wait(coordinator.core.sync_group(rctx, sync))
    log.debug("SyncGroup %s member=%r -> %s", sync.group_id, sync.member_id, response.error.message)
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=response.error.errno,
        protocol_type=response.protocol_type,
        protocol_name=response.protocol_name,
        assignment=response.assignment,
    )


# ---- Heartbeat ----


@api_handler(HeartbeatRequest, 0, 4)
async def handle_heartbeat(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    rctx = _context(api_version)
    heartbeat = m.HeartbeatRequest(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if api_version >= 3 else None,
    )
    coordinator.heard_from(heartbeat.group_id, heartbeat.member_id, rctx.connection_id)
    error = coordinator.core.heartbeat(rctx, heartbeat)
    log.debug(
        "Heartbeat %s member=%r generation=%d -> %s",
        heartbeat.group_id,
        heartbeat.member_id,
        heartbeat.generation_id,
        error.message,
    )
    return HeartbeatResponse(throttle_time_ms=0, error_code=error.errno)


# ---- LeaveGroup ----


@api_handler(LeaveGroupRequest, 0, 5)
async def handle_leave_group(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    if api_version >= 3:
        members = tuple(
            m.MemberIdentity(x.member_id, x.group_instance_id, x.reason if api_version >= 5 else None)
            for x in request.members
        )
    else:  # LeaveGroupRequest.normalizedData
        members = (m.MemberIdentity(request.member_id),)
    response = coordinator.core.leave_group(
        _context(api_version), m.LeaveGroupRequest(request.group_id, members)
    )
    for identity in members:
        coordinator.forget(request.group_id, identity.member_id)
    if api_version >= 3:
        member_class = LeaveGroupResponse.MemberResponse
        return LeaveGroupResponse(
            throttle_time_ms=0,
            error_code=response.error.errno,
            members=[
                member_class(
                    member_id=x.member_id, group_instance_id=x.group_instance_id, error_code=x.error.errno
                )
                for x in response.members
            ],
        )
    # LeaveGroupResponse(data, version) for v0-2: one error, the group's or the single member's.
    error = response.error
    if error is Errors.NoError and response.members:
        error = response.members[0].error
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error.errno, members=[])


# ---- OffsetCommit ----


@api_handler(OffsetCommitRequest, 2, 9)
async def handle_offset_commit(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    topic_class = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_class = topic_class.OffsetCommitResponsePartition
    coordinator = ctx.coordinator
    commit = m.OffsetCommitRequest(
        group_id=request.group_id,
        topics=tuple(
            (
                t.name,
                tuple(
                    m.CommitPartition(
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch if api_version >= 6 else -1,
                        p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
        generation_id=request.generation_id_or_member_epoch,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if api_version >= 7 else None,
        retention_time_ms=request.retention_time_ms if api_version <= 4 else -1,
    )
    rctx = _context(api_version)
    coordinator.heard_from(commit.group_id, commit.member_id, rctx.connection_id)
    results = coordinator.core.commit_offsets(rctx, commit)
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            topic_class(
                name=t.name,
                partitions=[
                    partition_class(partition_index=p.partition, error_code=p.error.errno)
                    for p in t.partitions
                ],
            )
            for t in results
        ],
    )


# ---- OffsetFetch ----


@api_handler(OffsetFetchRequest, 1, 9)
async def handle_offset_fetch(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    if api_version >= 8:
        groups = [
            coordinator.core.fetch_offsets(
                m.OffsetFetchGroupRequest(
                    g.group_id,
                    None
                    if g.topics is None
                    else tuple((t.name, tuple(t.partition_indexes)) for t in g.topics),
                    g.member_id if api_version >= 9 else None,
                    g.member_epoch if api_version >= 9 else -1,
                ),
            )
            for g in request.groups
        ]
        group_class = OffsetFetchResponse.OffsetFetchResponseGroup
        topic_class = group_class.OffsetFetchResponseTopics
        partition_class = topic_class.OffsetFetchResponsePartitions
        return OffsetFetchResponse(
            throttle_time_ms=0,
            groups=[
                group_class(
                    group_id=g.group_id,
                    error_code=g.error.errno,
                    topics=[
                        topic_class(name=name, partitions=[_fetched(partition_class, p) for p in parts])
                        for name, parts in g.topics
                    ],
                )
                for g in groups
            ],
        )
    topics = (
        None
        if request.topics is None
        else tuple((t.name, tuple(t.partition_indexes)) for t in request.topics)
    )
    group = coordinator.core.fetch_offsets(m.OffsetFetchGroupRequest(request.group_id, topics))
    topic_class = OffsetFetchResponse.OffsetFetchResponseTopic
    partition_class = topic_class.OffsetFetchResponsePartition
    if api_version < 2 and group.error is not Errors.NoError:
        # OffsetFetchResponse(groups, version): no top-level error before v2, so every partition has it.
        parts_with_error = [
            (name, [m.FetchedPartition(p.partition, error=group.error) for p in parts])
            for name, parts in group.topics
        ]
    else:
        parts_with_error = [(name, list(parts)) for name, parts in group.topics]
    return OffsetFetchResponse(
        throttle_time_ms=0,
        error_code=group.error.errno,
        topics=[
            topic_class(name=name, partitions=[_fetched(partition_class, p) for p in parts])
            for name, parts in parts_with_error
        ],
    )


def _fetched(partition_class: Any, p: m.FetchedPartition) -> Any:
    return partition_class(
        partition_index=p.partition,
        committed_offset=p.offset,
        committed_leader_epoch=p.leader_epoch,
        metadata=p.metadata,
        error_code=p.error.errno,
    )


# ---- OffsetDelete ----


@api_handler(OffsetDeleteRequest, 0, 0)
async def handle_offset_delete(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    delete = m.OffsetDeleteRequest(
        request.group_id,
        tuple((t.name, tuple(p.partition_index for p in t.partitions)) for t in request.topics),
    )
    response = coordinator.core.delete_offsets(delete)
    topic_class = OffsetDeleteResponse.OffsetDeleteResponseTopic
    partition_class = topic_class.OffsetDeleteResponsePartition
    return OffsetDeleteResponse(
        error_code=response.error.errno,
        throttle_time_ms=0,
        topics=[
            topic_class(
                name=t.name,
                partitions=[
                    partition_class(partition_index=p.partition, error_code=p.error.errno)
                    for p in t.partitions
                ],
            )
            for t in response.topics
        ],
    )


# ---- ListGroups, DescribeGroups, DeleteGroups ----


@api_handler(ListGroupsRequest, 0, 5)
async def handle_list_groups(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    states = list(request.states_filter or ()) if api_version >= 4 else []
    types = list(request.types_filter or ()) if api_version >= 5 else []
    listed_class = ListGroupsResponse.ListedGroup
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=Errors.NoError.errno,
        groups=[
            listed_class(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in coordinator.core.list_groups(states, types)
        ],
    )


@api_handler(DescribeGroupsRequest, 0, 6)
async def handle_describe_groups(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    group_class = DescribeGroupsResponse.DescribedGroup
    member_class = group_class.DescribedGroupMember
    described = coordinator.core.describe_groups(list(request.groups), api_version)
    include_ops = api_version >= 3 and bool(request.include_authorized_operations)
    return DescribeGroupsResponse(
        throttle_time_ms=0,
        groups=[
            group_class(
                error_code=g.error.errno,
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                members=[
                    member_class(
                        member_id=x.member_id,
                        group_instance_id=x.group_instance_id,
                        client_id=x.client_id,
                        client_host=x.client_host,
                        member_metadata=x.metadata,
                        member_assignment=x.assignment,
                    )
                    for x in g.members
                ],
                authorized_operations=(
                    set(acl_operations.GROUP_OPERATIONS)
                    if include_ops and g.error is Errors.NoError
                    else acl_operations.NOT_REQUESTED
                ),
            )
            for g in described
        ],
    )


@api_handler(DeleteGroupsRequest, 0, 2)
async def handle_delete_groups(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    coordinator = ctx.coordinator
    names = list(request.groups_names)
    results = coordinator.core.delete_groups(names)
    result_class = DeleteGroupsResponse.DeletableGroupResult
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[result_class(group_id=r.group_id, error_code=r.error.errno) for r in results],
    )
