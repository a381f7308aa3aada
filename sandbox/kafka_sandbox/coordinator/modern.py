"""KIP-848 ("consumer" protocol) groups, as far as the sandbox knows them: loaded from records seeded
into `__consumer_offsets` (types 3-8 and 16), never driven by ConsumerGroupHeartbeat; and the streams
(KIP-1071) and share (KIP-932) groups, seeded likewise, as far as offsets are concerned.

Enough of `modern/consumer/ConsumerGroup.java` to apply Kafka's offset rules to such a group: its
state, its subscriptions (topic names plus resolved regular expressions), offset-commit validation,
and the tombstones that delete it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import kafka.errors as Errors

from .errors import GroupError

# MemberState.java
MEMBER_STATE_STABLE = 0


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    member_epoch: int = 0
    state: int = MEMBER_STATE_STABLE
    uses_classic_protocol: bool = False


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0  # ModernGroup.targetAssignmentEpoch: a TimelineInteger, 0 until set
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target_assignment_members: set[str] = field(default_factory=set)
    resolved_regexes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    group_type = "consumer"  # Group.GroupType's name, as ListGroups shows it

    # ConsumerGroup.maybeUpdateGroupState, computed on demand.
    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for member in self.members.values():
            if not (member.state == MEMBER_STATE_STABLE and member.member_epoch == self.assignment_epoch):
                return "Reconciling"
        return "Stable"

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        """ModernGroup.subscribedTopicNames: literal subscriptions plus the topics resolved for regexes."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        for topics in self.resolved_regexes.values():
            names.update(topics)
        return names

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def validate_offset_commit(self, member_id: str, member_epoch: int, api_version: int) -> None:
        if member_epoch < 0 and not self.members:
            return
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(
                Errors.UnknownMemberIdError, f"Member {member_id} is not a member of group {self.group_id}."
            )
        if not member.uses_classic_protocol and api_version < 9:
            raise GroupError(
                Errors.UnsupportedVersionError,
                "OffsetCommit version 9 or above must be used by members using the modern group protocol",
            )
        self._validate_member_epoch(member_epoch, member)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise GroupError(
                Errors.UnknownMemberIdError, f"Member {member_id} is not a member of group {self.group_id}."
            )
        self._validate_member_epoch(member_epoch, member)

    def _validate_member_epoch(self, received: int, member: ConsumerMember) -> None:
        if received != member.member_epoch:
            raise GroupError(
                Errors.IllegalGenerationError
                if member.uses_classic_protocol
                else Errors.StaleMemberEpochError
            )

    def validate_offset_delete(self) -> None:
        """ConsumerGroup.validateOffsetDelete (and StreamsGroup's) accept in every state."""

    def should_expire(self) -> bool:
        """Group.shouldExpire: true but for share groups."""
        return self.group_type != "share"

    def validate_delete_group(self) -> None:
        if self.state != "Empty":
            raise GroupError(Errors.NonEmptyGroupError)


@dataclass
class StreamsGroup(ConsumerGroup):
    """A KIP-1071 streams group (Kafka 4.1+), loaded from seeded records of types 17-24.

    `streams/StreamsGroup.java` validates OffsetCommit, OffsetFetch and DeleteGroups with the same checks
    as ConsumerGroup (an admin commit only while it has no members, the member epoch otherwise, Empty to
    be deleted), which it inherits here. What differs is expiry: `isSubscribedToTopic` is false while the
    group is Empty and otherwise true for its topology's source topics (`StreamsTopology.sourceTopicMap`:
    SourceTopics and RepartitionSourceTopics); the base is the commit time
    (`offsetExpirationCondition`). The sandbox decodes no epochs of streams records, so a group with
    members is reported Stable.
    """

    source_topics: frozenset[str] | None = None  # None: no topology record
    member_records: set[str] = field(default_factory=set)  # ids with a live member-metadata record

    group_type = "streams"

    @property
    def state(self) -> str:
        return "Empty" if not self.members else "Stable"

    def subscribed_topic_names(self) -> set[str]:
        if not self.members or self.source_topics is None:
            return set()
        return set(self.source_topics)


@dataclass
class ShareGroup(ConsumerGroup):
    """A KIP-932 share group, loaded from seeded records of types 9-15: `modern/share/ShareGroup.java`
    refuses OffsetCommit, OffsetFetch and OffsetDelete with GROUP_ID_NOT_FOUND ("is not a consumer group"),
    and `shouldExpire` is false, so the cleanup never expires anything of it."""

    group_type = "share"

    @property
    def state(self) -> str:
        return "Empty" if not self.members else "Stable"

    def subscribed_topic_names(self) -> set[str]:
        return set()

    def validate_offset_commit(self, member_id: str, member_epoch: int, api_version: int) -> None:
        raise GroupError(Errors.GroupIdNotFoundError, f"Group {self.group_id} is not a consumer group.")

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        raise GroupError(Errors.GroupIdNotFoundError, f"Group {self.group_id} is not a consumer group.")

    def validate_offset_delete(self) -> None:
        raise GroupError(Errors.GroupIdNotFoundError, f"Group {self.group_id} is not a consumer group.")
