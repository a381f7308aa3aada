"""OffsetCommit, OffsetFetch, OffsetDelete, offset expiration and topic deletion.

After apache/kafka (4.x): KafkaApis.handleOffsetCommitRequest / handleOffsetDeleteRequest (the
unknown-topic checks in front of the coordinator and the response merge), GroupCoordinatorService
(group id checks) and OffsetMetadataManager (validateOffsetCommit, commitOffset, fetchOffsets,
fetchAllOffsets, deleteOffsets, deleteAllOffsets, cleanupExpiredOffsets, onPartitionsDeleted),
plus GroupCoordinatorShard.cleanupGroupMetadata (which skips groups whose Group.shouldExpire is false:
share groups) and GroupMetadataManager.maybeDeleteGroup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import kafka.errors as Errors

from .classic import ClassicGroup, GroupState
from .errors import Error, GroupError
from .expiration import expiration_base, is_offset_expired
from .membership import Membership
from .messages import (
    CleanupReport,
    FetchedPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroupRequest,
    OffsetFetchGroupResponse,
    PartitionResult,
    RequestContext,
    TopicResult,
)
from .modern import ConsumerGroup, ShareGroup, StreamsGroup
from .offsets import OffsetAndMetadata
from .records import (
    Record,
    classic_group_tombstones,
    consumer_group_tombstones,
    offset_commit_record,
    offset_tombstone,
    share_group_tombstones,
    streams_group_tombstones,
)
from .state import CoordinatorState, Group


class TopicView(Protocol):
    """The broker's metadata cache, as far as the offset APIs look at it."""

    def partition_count(self, topic: str) -> int | None:
        """Partitions of an existing topic, None if the topic does not exist."""
        ...

    def topic_id(self, topic: str) -> str | None:
        """The topic's id in Kafka's base64 form, None if the topic does not exist."""
        ...


def java_string_length(text: str) -> int:
    """String.length() in Java counts UTF-16 code units; offset.metadata.max.bytes is checked with it."""
    return len(text.encode("utf-16-le")) // 2


class _ResponseBuilder:
    """OffsetCommitResponse.Builder / OffsetDeleteResponse.Builder: per-topic partition results."""

    def __init__(self) -> None:
        self.topics: dict[str, list[PartitionResult]] = {}

    def add(self, topic: str, partition: int, error: Error) -> None:
        self.topics.setdefault(topic, []).append(PartitionResult(partition, error))

    def merge(self, results: Iterable[TopicResult]) -> None:
        for topic in results:
            self.topics.setdefault(topic.name, []).extend(topic.partitions)

    def build(self) -> tuple[TopicResult, ...]:
        return tuple(TopicResult(name, tuple(parts)) for name, parts in self.topics.items())


class OffsetManager:
    def __init__(self, state: CoordinatorState, membership: Membership, topics: TopicView) -> None:
        self.s = state
        self.membership = membership
        self.topics = topics

    # ---- front end (KafkaApis): unknown topics and partitions never reach the coordinator ----

    def _split_known(
        self, topics: Iterable[tuple[str, Iterable[int]]], builder: _ResponseBuilder
    ) -> dict[str, list[int]]:
        known: dict[str, list[int]] = {}
        for name, partitions in topics:
            count = self.topics.partition_count(name)
            for partition in partitions:
                if count is None or not 0 <= partition < count:
                    builder.add(name, partition, Errors.UnknownTopicOrPartitionError)
                else:
                    known.setdefault(name, []).append(partition)
        return known

    # ---- OffsetCommit ----

    def commit(self, ctx: RequestContext, request: OffsetCommitRequest) -> tuple[TopicResult, ...]:
        builder = _ResponseBuilder()
        requested = {name: parts for name, parts in request.topics}
        known = self._split_known(((n, [p.partition for p in ps]) for n, ps in request.topics), builder)
        if not known:
            return builder.build()  # the coordinator is not even called
        valid = [
            (name, [p for p in requested[name] if p.partition in set(parts)]) for name, parts in known.items()
        ]
        try:
            group = self._validate_offset_commit(ctx, request)
        except GroupError as exc:
            builder.merge(
                TopicResult(name, tuple(PartitionResult(p.partition, exc.error) for p in parts))
                for name, parts in valid
            )
            return builder.build()
        if isinstance(group, ClassicGroup) and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members.get(request.member_id)
            if member is not None:  # offset commits keep a classic member's session alive
                self.membership.reschedule_heartbeat(group, member)

        now = self.s.now()
        expire = None if request.retention_time_ms == -1 else now + request.retention_time_ms
        max_metadata = self.s.config.offset_metadata_max_bytes
        records: list[Record] = []
        committed: list[tuple[str, int, OffsetAndMetadata]] = []
        results: list[TopicResult] = []
        # KafkaApis.handleOffsetCommitRequest (4.3+): a request below v10 names its topics, and the broker
        # resolves each one's id from its metadata cache; the record keeps it (value v4, tagged topicId).
        topic_ids = {name: self.topics.topic_id(name) for name, _ in valid}
        for name, parts in valid:
            partition_results = []
            for p in parts:
                if p.metadata is not None and java_string_length(p.metadata) > max_metadata:
                    partition_results.append(PartitionResult(p.partition, Errors.OffsetMetadataTooLargeError))
                    continue
                partition_results.append(PartitionResult(p.partition))
                value = OffsetAndMetadata(p.offset, p.leader_epoch, p.metadata or "", now, expire, topic_ids[name])
                records.append(offset_commit_record(request.group_id, name, p.partition, value))
                committed.append((name, p.partition, value))
            results.append(TopicResult(name, tuple(partition_results)))
        self.s.write(request.group_id, records)
        for name, partition, value in committed:
            self.s.offsets.put(request.group_id, name, partition, value)
        builder.merge(results)
        return builder.build()

    def _validate_offset_commit(self, ctx: RequestContext, request: OffsetCommitRequest) -> Group:
        group = self.s.groups.get(request.group_id)
        if group is None:
            if request.generation_id < 0:
                # Admin client or a consumer without group management: a "simple" group, in memory
                # only (no GroupMetadata record), Empty and without a protocol type.
                return self.s.get_or_create_classic_group(request.group_id)
            if ctx.api_version >= 9:
                raise GroupError(Errors.GroupIdNotFoundError, f"Group {request.group_id} not found.")
            raise GroupError(Errors.IllegalGenerationError)
        if isinstance(group, ClassicGroup):
            group.validate_offset_commit(request.member_id, request.group_instance_id, request.generation_id)
        else:
            group.validate_offset_commit(request.member_id, request.generation_id, ctx.api_version)
        return group

    # ---- OffsetFetch ----

    def fetch(self, request: OffsetFetchGroupRequest) -> OffsetFetchGroupResponse:
        group = self.s.groups.get(request.group_id)
        try:
            dead = self._validate_offset_fetch(group, request)
        except GroupError as exc:
            return OffsetFetchGroupResponse(request.group_id, error=exc.error)
        offsets = {} if dead else self.s.offsets.group(request.group_id)
        if request.topics is None:  # KIP-88: every committed partition
            if dead:
                return OffsetFetchGroupResponse(request.group_id)
            return OffsetFetchGroupResponse(
                request.group_id,
                tuple(
                    (topic, tuple(_fetched(p, v) for p, v in partitions.items()))
                    for topic, partitions in offsets.items()
                ),
            )
        topics = []
        for topic, partitions in request.topics:
            by_partition = offsets.get(topic, {})
            topics.append((topic, tuple(_fetched(p, by_partition.get(p)) for p in partitions)))
        return OffsetFetchGroupResponse(request.group_id, tuple(topics))

    @staticmethod
    def _validate_offset_fetch(group: Group | None, request: OffsetFetchGroupRequest) -> bool:
        """True when the group is unknown or dead: Kafka then answers without offsets, not an error."""
        if group is None:
            return True
        if isinstance(group, ClassicGroup):
            return group.is_in(GroupState.DEAD)
        group.validate_offset_fetch(request.member_id, request.member_epoch)
        return False

    # ---- OffsetDelete (KIP-496) ----

    def delete(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        if not request.group_id:
            return OffsetDeleteResponse(Errors.InvalidGroupIdError)
        builder = _ResponseBuilder()
        known = self._split_known(request.topics, builder)
        group = self.s.groups.get(request.group_id)
        try:
            if group is None:
                raise GroupError(Errors.GroupIdNotFoundError, f"Group {request.group_id} not found.")
            group.validate_offset_delete()
        except GroupError as exc:
            return OffsetDeleteResponse(exc.error)  # a top-level error replaces every partition result
        records: list[Record] = []
        deleted: list[tuple[str, int]] = []
        results = []
        for topic, partitions in known.items():
            if group.is_subscribed_to_topic(topic):
                results.append(
                    TopicResult(
                        topic,
                        tuple(PartitionResult(p, Errors.GroupSubscribedToTopicError) for p in partitions),
                    )
                )
                continue
            for partition in partitions:
                if self.s.offsets.get(request.group_id, topic, partition) is not None:
                    records.append(offset_tombstone(request.group_id, topic, partition))
                    deleted.append((topic, partition))
            results.append(TopicResult(topic, tuple(PartitionResult(p) for p in partitions)))
        self.s.write(request.group_id, records)
        for topic, partition in deleted:
            self.s.offsets.remove(request.group_id, topic, partition)
        builder.merge(results)
        return OffsetDeleteResponse(topics=builder.build())

    # ---- deleting a whole group's offsets (DeleteGroups) ----

    def delete_all_offsets(self, group_id: str) -> list[Record]:
        return [
            offset_tombstone(group_id, topic, partition)
            for topic, partition, _ in self.s.offsets.entries(group_id)
        ]

    def forget_group(self, group_id: str) -> None:
        """Replays the tombstones of a deleted group: its offsets and the group leave memory."""
        for topic, partition, _ in self.s.offsets.entries(group_id):
            self.s.offsets.remove(group_id, topic, partition)
        self.s.remove_group(group_id)

    # ---- expiration (KIP-211 / KIP-496) ----

    def cleanup(self) -> CleanupReport:
        """GroupCoordinatorShard.cleanupGroupMetadata: expire offsets group by group, and delete every
        Empty group left without offsets (even a simple group that never had a GroupMetadata record)."""
        report = CleanupReport()
        with self.s.batch():
            for group_id in list(self.s.groups):
                group = self.s.groups[group_id]
                if isinstance(group, ConsumerGroup) and not group.should_expire():
                    continue  # a share group (Group.shouldExpire)
                expired, all_expired = self._expired_offsets(group_id)
                records = [offset_tombstone(group_id, topic, partition) for topic, partition in expired]
                delete_group = all_expired and group.is_empty
                if delete_group:
                    records += group_tombstones(group)
                self.s.write(group_id, records)
                for topic, partition in expired:
                    self.s.offsets.remove(group_id, topic, partition)
                    report.expired_offsets.append((group_id, topic, partition))
                if delete_group:
                    self.forget_group(group_id)
                    report.deleted_groups.append(group_id)
        return report

    def next_due(self) -> int | None:
        """The earliest broker time at which `cleanup` would do anything while no group changes: an offset
        due (its expireTimestamp, or base + retention), or now for an Empty group without offsets (deleted
        at the next run). None when nothing can expire until something changes."""
        retention = self.s.config.offsets_retention_ms
        earliest: int | None = None
        for group_id, group in self.s.groups.items():
            if isinstance(group, ConsumerGroup) and not group.should_expire():
                continue  # a share group: cleanup skips it (Group.shouldExpire)
            offsets = self.s.offsets.group(group_id)
            if not offsets:
                if group.is_empty:
                    return self.s.now()
                continue
            base = expiration_base(group)
            if base is None:
                continue
            for topic, partitions in offsets.items():
                if group.is_subscribed_to_topic(topic):
                    continue
                for value in partitions.values():
                    due = value.expire_timestamp if value.expire_timestamp is not None else base(value) + retention
                    earliest = due if earliest is None else min(earliest, due)
        return earliest

    def _expired_offsets(self, group_id: str) -> tuple[list[tuple[str, int]], bool]:
        """OffsetMetadataManager.cleanupExpiredOffsets: (expired partitions, whether all expired)."""
        offsets = self.s.offsets.group(group_id)
        if not offsets:
            return [], True
        group = self.s.groups[group_id]
        base = expiration_base(group)
        if base is None:
            return [], False
        now, retention = self.s.now(), self.s.config.offsets_retention_ms
        expired: list[tuple[str, int]] = []
        all_expired = True
        for topic, partitions in offsets.items():
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for partition, value in partitions.items():
                if is_offset_expired(value, now, retention, base):
                    expired.append((topic, partition))
                else:
                    all_expired = False
        return expired, all_expired

    # ---- topic deletion ----

    def on_topics_deleted(self, topics: Iterable[str]) -> int:
        """Deleting a topic deletes every group's committed offsets for it (onPartitionsDeleted)."""
        gone = set(topics)
        count = 0
        with self.s.batch():
            for group_id in list(self.s.groups):
                doomed = [(t, p) for t, p, _ in self.s.offsets.entries(group_id) if t in gone]
                self.s.write(group_id, [offset_tombstone(group_id, t, p) for t, p in doomed])
                for topic, partition in doomed:
                    self.s.offsets.remove(group_id, topic, partition)
                count += len(doomed)
        return count


def group_tombstones(group: Group) -> list[Record]:
    if isinstance(group, StreamsGroup):
        return streams_group_tombstones(group)
    if isinstance(group, ShareGroup):
        return share_group_tombstones(group)
    if isinstance(group, ConsumerGroup):
        return consumer_group_tombstones(group)
    return classic_group_tombstones(group.group_id)


def _fetched(partition: int, value: OffsetAndMetadata | None) -> FetchedPartition:
    if value is None:
        return FetchedPartition(partition)
    return FetchedPartition(partition, value.offset, value.leader_epoch, value.metadata)
