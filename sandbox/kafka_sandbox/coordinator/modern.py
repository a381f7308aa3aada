"""KIP-848 ("consumer" protocol) groups, as far as the sandbox knows them: loaded from records seeded
into `__consumer_offsets` (types 3-8 and 16), never driven by ConsumerGroupHeartbeat.

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
    has_subscription_record: bool = False


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0  # ModernGroup.targetAssignmentEpoch: a TimelineInteger, 0 until set
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target_assignment_members: set[str] = field(default_factory=set)
    resolved_regexes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    has_partition_metadata: bool = False

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

    def validate_delete_group(self) -> None:
        if self.state != "Empty":
            raise GroupError(Errors.NonEmptyGroupError)
