"""Turns records found in `__consumer_offsets` into coordinator state, as a Kafka shard does when it
loads its partition (GroupCoordinatorShard.replay and the replay methods of OffsetMetadataManager and
GroupMetadataManager, then GroupMetadataManager.onLoaded).

The sandbox uses it for records seeded with `SandboxBroker.append_offsets_records`, e.g. KIP-848 groups
it cannot create itself, and streams and share groups (as far as offsets are concerned). Records that
do not decode are counted and skipped, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CodecError,
    RecordType,
    SubscriptionError,
    decode_key,
    decode_value,
    encode_consumer_protocol,
    streams_source_topics,
    subscription_topics,
)
from kafka_offsets_model.codec.fastpath import offset_commit_record

from .classic import ClassicGroup, ClassicMember, GroupState
from .membership import Membership
from .messages import Protocol
from .modern import ConsumerGroup, ConsumerMember, ShareGroup, StreamsGroup
from .offsets import OffsetAndMetadata
from .state import CoordinatorState

# ModernGroupMember.LEAVE_GROUP_MEMBER_EPOCH
LEAVE_GROUP_MEMBER_EPOCH = -2


@dataclass
class LoadReport:
    applied: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)

    def skip(self, why: str) -> None:
        self.skipped += 1
        if len(self.problems) < 20:
            self.problems.append(why)


def decode_plain_value(rtype: RecordType, value: bytes) -> dict[str, Any]:
    """The value's fields as Kafka's generated classes hold them: a classic member's subscription and
    assignment stay bytes (the codec decodes them for display; they round-trip exactly)."""
    _version, fields = decode_value(rtype, value)
    for member in fields.get("members") or () if rtype.id == 2 else ():
        for name, schema in (
            ("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT),
        ):
            if isinstance(member.get(name), Mapping):
                member[name] = encode_consumer_protocol(schema, member[name], name)
    return fields


def fast_offset_commit(
    key: bytes, value: bytes | None
) -> tuple[str, str, int, OffsetAndMetadata | None] | None:
    """OffsetCommit records through the codec's straight-line path: bulk seeding loads millions of them.
    Anything else, or anything odd, returns None for the full decoder."""
    record = offset_commit_record(key, value)
    if record is None:
        return None
    k, v = record["key"], record["value"]
    if v is None:
        return k["group"], k["topic"], k["partition"], None
    expire = v.get("expireTimestamp", -1)
    return (
        k["group"],
        k["topic"],
        k["partition"],
        OffsetAndMetadata(
            v["offset"],
            v.get("leaderEpoch", -1),
            v["metadata"],
            v["commitTimestamp"],
            None if expire == -1 else expire,
            v.get("topicId"),
        ),
    )


class RecordLoader:
    def __init__(self, state: CoordinatorState, membership: Membership) -> None:
        self.s = state
        self.membership = membership

    def load(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> LoadReport:
        report = LoadReport()
        loaded_classic: dict[str, ClassicGroup] = {}
        for key, value, _timestamp in records:
            fast = fast_offset_commit(key, value)
            if fast is not None:
                self._put_offset(*fast)
                report.applied += 1
                continue
            try:
                rtype, type_id, key_fields = decode_key(key)
                fields = None if value is None else decode_plain_value(rtype, value)
            except CodecError as exc:
                report.skip(f"undecodable record: {exc}")
                continue
            if type_id == 2 and fields is not None:
                failure = kafka_load_failure(fields)
                if failure is not None and len(report.problems) < 20:
                    report.problems.append(failure)
            try:
                if type_id in (0, 1):
                    self._offset(key_fields, fields)
                elif type_id == 2:
                    group = self._classic_group(key_fields["group"], fields)
                    if group is not None:
                        loaded_classic[group.group_id] = group
                    else:
                        loaded_classic.pop(key_fields["group"], None)
                elif type_id in (3, 4, 5, 6, 7, 8, 16):
                    self._consumer_group(type_id, key_fields, fields)
                elif 17 <= type_id <= 24:
                    self._streams_group(type_id, key_fields, fields)
                elif 9 <= type_id <= 15:
                    self._share_group(type_id, key_fields, fields)
                else:
                    report.skip(f"{rtype.name} records are not loaded by the sandbox")
                    continue
            except LookupError as exc:
                report.skip(str(exc))
                continue
            report.applied += 1
        for group in loaded_classic.values():
            if self.s.groups.get(group.group_id) is group:
                self.membership.on_loaded(group)
        return report

    # ---- offsets (OffsetMetadataManager.replay) ----

    def _offset(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        stored = None
        if value is not None:
            expire = value.get("expireTimestamp", -1)
            stored = OffsetAndMetadata(
                offset=value["offset"],
                leader_epoch=value.get("leaderEpoch", -1),
                metadata=value.get("metadata") or "",
                commit_timestamp=value["commitTimestamp"],
                expire_timestamp=None if expire == -1 else expire,
                topic_id=value.get("topicId"),
            )
        self._put_offset(key["group"], key["topic"], key["partition"], stored)

    def _put_offset(self, group_id: str, topic: str, partition: int, value: OffsetAndMetadata | None) -> None:
        if value is None:
            self.s.offsets.remove(group_id, topic, partition)
            return
        if group_id not in self.s.groups:
            self.s.get_or_create_classic_group(group_id)  # a simple group holds offsets of no group
        self.s.offsets.put(group_id, topic, partition, value)

    # ---- classic groups (GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)) ----

    def _classic_group(self, group_id: str, value: dict[str, Any] | None) -> ClassicGroup | None:
        if value is None:
            self.s.remove_group(group_id)
            return None
        existing = self.s.groups.get(group_id)
        if isinstance(existing, ConsumerGroup):
            raise LookupError(f"GroupMetadata record for {group_id}, which is a KIP-848 group")
        if isinstance(existing, ClassicGroup):
            self.s.cancel_group_timers(existing)
        protocol_type = value["protocolType"]
        state_ts = value.get("currentStateTimestamp", -1)
        members = value.get("members") or []
        group = ClassicGroup(
            group_id,
            GroupState.STABLE if members else GroupState.EMPTY,
            None if state_ts == -1 else state_ts,
            generation_id=value["generation"],
            protocol_type=protocol_type or None,
            protocol_name=value.get("protocol"),
            leader_id=value.get("leader"),
        )
        for m in members:
            rebalance = m.get("rebalanceTimeout", -1)
            group.add(
                ClassicMember(
                    member_id=m["memberId"],
                    group_instance_id=m.get("groupInstanceId"),
                    client_id=m["clientId"],
                    client_host=m["clientHost"],
                    rebalance_timeout_ms=m["sessionTimeout"] if rebalance == -1 else rebalance,
                    session_timeout_ms=m["sessionTimeout"],
                    protocol_type=protocol_type,
                    protocols=(Protocol(value.get("protocol") or "", m["subscription"]),),
                    assignment=m["assignment"],
                )
            )
        group.subscribed_topics = group.compute_subscribed_topics()
        self.s.groups[group_id] = group
        return group

    # ---- KIP-848 consumer groups ----

    def _persisted_consumer_group(self, group_id: str, create: bool) -> ConsumerGroup | None:
        """getOrMaybeCreatePersistedConsumerGroup: a simple classic group may be replaced."""
        group = self.s.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        if not create:
            return None
        if group is not None and not group.is_simple():
            raise LookupError(f"KIP-848 record for {group_id}, which is a classic group")
        new = ConsumerGroup(group_id)  # replaces a simple group: it has no records of its own
        self.s.groups[group_id] = new
        return new

    def _consumer_group(self, type_id: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        group_id = key["GroupId"]
        group = self._persisted_consumer_group(group_id, value is not None)
        if group is None:
            return  # a tombstone for a group we do not have
        if type_id == 3:
            if value is None:
                self.s.groups.pop(group_id, None)
            else:
                group.group_epoch = value["Epoch"]
        elif type_id == 4:
            pass  # ConsumerGroupPartitionMetadata: the sandbox resolves subscriptions from its own topics
        elif type_id == 5:
            member_id = key["MemberId"]
            if value is None:
                group.members.pop(member_id, None)
                return
            member = group.members.setdefault(member_id, ConsumerMember(member_id))
            member.instance_id = value.get("InstanceId")
            member.client_id = value.get("ClientId", "")
            member.client_host = value.get("ClientHost", "")
            member.subscribed_topic_names = tuple(value.get("SubscribedTopicNames") or ())
            member.subscribed_topic_regex = value.get("SubscribedTopicRegex")
            member.uses_classic_protocol = value.get("ClassicMemberMetadata") is not None
        elif type_id == 6:
            group.assignment_epoch = -1 if value is None else value["AssignmentEpoch"]
        elif type_id == 7:
            if value is None:
                group.target_assignment_members.discard(key["MemberId"])
            else:
                group.target_assignment_members.add(key["MemberId"])
        elif type_id == 8:
            member_id = key["MemberId"]
            if value is None:
                existing = group.members.get(member_id)
                if existing is not None:
                    existing.member_epoch = LEAVE_GROUP_MEMBER_EPOCH
                return
            member = group.members.setdefault(member_id, ConsumerMember(member_id))
            member.member_epoch = value["MemberEpoch"]
            member.state = value["State"]
        elif type_id == 16:
            regex = key["RegularExpression"]
            if value is None:
                group.resolved_regexes.pop(regex, None)
            else:
                group.resolved_regexes[regex] = tuple(value.get("Topics") or ())

    # ---- streams groups (KIP-1071, GroupMetadataManager's replay of StreamsGroup* records) ----

    def _modern_group(self, group_id: str, kind: type[ModernGroup], create: bool) -> ModernGroup | None:
        """getOrMaybeCreatePersistedStreamsGroup / ...ShareGroup: a simple classic group may be replaced."""
        group = self.s.groups.get(group_id)
        if isinstance(group, kind):
            return group
        if not create:
            return None
        if group is not None and not (isinstance(group, ClassicGroup) and group.is_simple()):
            raise LookupError(
                f"{kind.group_type} group record for {group_id}, which is another kind of group"
            )
        new = kind(group_id)
        self.s.groups[group_id] = new
        return new

    def _streams_group(self, type_id: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        group_id = key["GroupId"]
        group = self._modern_group(group_id, StreamsGroup, value is not None)
        if not isinstance(group, StreamsGroup):
            return  # a tombstone for a group we do not have
        if type_id == 17 and value is None:  # the group epoch's tombstone deletes the group
            self.s.groups.pop(group_id, None)
        elif type_id in (19, 22):  # member metadata, current assignment
            member_id = key["MemberId"]
            if value is not None:
                group.members.setdefault(member_id, ConsumerMember(member_id))
                if type_id == 19:
                    group.member_records.add(member_id)
            elif type_id == 19:
                group.members.pop(member_id, None)
                group.member_records.discard(member_id)
        elif type_id == 23:
            group.source_topics = None if value is None else frozenset(streams_source_topics(value))

    def _share_group(self, type_id: int, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        group_id = key["GroupId"]
        group = self._modern_group(group_id, ShareGroup, value is not None)
        if group is None:
            return
        if type_id == 11 and value is None:
            self.s.groups.pop(group_id, None)
        elif type_id == 10:
            member_id = key["MemberId"]
            if value is None:
                group.members.pop(member_id, None)
            else:
                group.members.setdefault(member_id, ConsumerMember(member_id))


ModernGroup = StreamsGroup | ShareGroup


def kafka_load_failure(group_value: dict[str, Any]) -> str | None:
    """Why Kafka's coordinator would fail to load this GroupMetadata record, or None.

    Replaying it computes the subscriptions (GroupMetadataManager.replay ->
    ClassicGroup.computeSubscribedTopics), which catches only a SchemaException: a member subscription
    whose reader throws another RuntimeException fails the load of the whole partition. The sandbox
    loads the group with unknown subscriptions (it expires nothing, as a group on a partition that never
    loads) and reports the failure here.
    """
    if group_value.get("protocolType") != "consumer" or group_value.get("protocol") is None:
        return None
    for member in group_value.get("members") or ():
        raw = member.get("subscription")
        if not isinstance(raw, bytes):
            continue
        try:
            subscription_topics(raw)
        except SubscriptionError as exc:
            if not exc.schema_error:
                return f"Kafka would fail to load this partition: member {member.get('memberId')!r}: {exc}"
    return None
