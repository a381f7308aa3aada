"""Requests and responses of the group coordinator as plain data, shaped like Kafka's *RequestData.

The wire layer (`group_apis.py`) converts kafka-python's protocol objects to and from these, so the
coordinator never depends on a client library's classes and tests can drive it with literals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import kafka.errors as Errors

from .errors import Error

UNKNOWN_MEMBER_ID = ""


@dataclass(frozen=True)
class RequestContext:
    """Who is asking (Kafka's RequestContext): the API version matters to several rules."""

    api_version: int
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    connection_id: int | None = None


# ---- membership ----


@dataclass(frozen=True)
class Protocol:
    name: str
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: tuple[Protocol, ...]
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResponse:
    error: Error
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()


@dataclass(frozen=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class SyncGroupResponse:
    error: Error
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True)
class MemberResponse:
    member_id: str
    group_instance_id: str | None
    error: Error = Errors.NoError


@dataclass(frozen=True)
class LeaveGroupResponse:
    error: Error = Errors.NoError
    members: tuple[MemberResponse, ...] = ()


# ---- offsets ----


@dataclass(frozen=True)
class CommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True)
class OffsetCommitRequest:
    group_id: str
    topics: tuple[tuple[str, tuple[CommitPartition, ...]], ...]
    generation_id: int = -1
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: int = -1


@dataclass(frozen=True)
class PartitionResult:
    partition: int
    error: Error = Errors.NoError


@dataclass(frozen=True)
class TopicResult:
    name: str
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True)
class OffsetFetchGroupRequest:
    """`topics=None` asks for every committed partition of the group (KIP-88)."""

    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True)
class FetchedPartition:
    partition: int
    offset: int = -1
    leader_epoch: int = -1
    metadata: str | None = ""
    error: Error = Errors.NoError


@dataclass(frozen=True)
class OffsetFetchGroupResponse:
    group_id: str
    topics: tuple[tuple[str, tuple[FetchedPartition, ...]], ...] = ()
    error: Error = Errors.NoError


@dataclass(frozen=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True)
class OffsetDeleteResponse:
    error: Error = Errors.NoError
    topics: tuple[TopicResult, ...] = ()


# ---- admin ----


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class DescribedGroup:
    group_id: str
    state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedMember, ...] = ()
    error: Error = Errors.NoError
    error_message: str | None = None


@dataclass(frozen=True)
class DeletedGroup:
    group_id: str
    error: Error = Errors.NoError


@dataclass
class CleanupReport:
    """What one expiration pass wrote: useful to tests and to `SandboxBroker.expire_offsets()`."""

    expired_offsets: list[tuple[str, str, int]] = field(default_factory=list)
    deleted_groups: list[str] = field(default_factory=list)
