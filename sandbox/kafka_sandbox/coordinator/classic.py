"""The classic group (JoinGroup/SyncGroup protocol) and its members, after Kafka 4.x's
`classic/ClassicGroup.java`, `ClassicGroupMember.java` and `ClassicGroupState.java`.

State only: which member may do what, protocol votes, generations and the group's subscriptions.
The decisions that involve timers and records live in `membership.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

import kafka.errors as Errors

from kafka_offsets_model.codec import CodecError
from kafka_offsets_model.codec import subscription_topics as codec_subscription_topics

from .errors import GroupError
from .messages import JoinGroupResponse, Protocol, SyncGroupResponse
from .pending import Pending

CONSUMER_PROTOCOL_TYPE = "consumer"
EMPTY_ASSIGNMENT = b""


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# ClassicGroupState's static block: target state -> states it may be entered from.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = EMPTY_ASSIGNMENT
    awaiting_join: Pending[JoinGroupResponse] | None = None
    awaiting_sync: Pending[SyncGroupResponse] | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol_name: str) -> bytes:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol_name}")

    def protocol_names(self) -> set[str]:
        return {p.name for p in self.protocols}

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        return tuple(protocols) == tuple(self.protocols)

    def vote(self, candidates: set[str]) -> str:
        for protocol in self.protocols:
            if protocol.name in candidates:
                return protocol.name
        raise ValueError("member does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """New members may expire while awaiting join; others awaiting a rebalance are alive."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState
    current_state_timestamp: int | None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    previous_state: GroupState = GroupState.DEAD
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    supported_protocols: dict[str, int] = field(default_factory=dict)
    subscribed_topics: frozenset[str] | None = None  # None: unknown (Optional.empty())
    new_member_added: bool = False

    # ---- queries ----

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def is_simple(self) -> bool:
        return self.protocol_type is None and self.is_empty and not self.pending_join_members

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_join_members

    def not_yet_rejoined(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def current_state_timestamp_or_default(self) -> int:
        return -1 if self.current_state_timestamp is None else self.current_state_timestamp

    # ---- transitions ----

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        """Every transition stamps currentStateTimestamp: expiry of Empty groups counts from it."""
        if self.state not in _VALID_PREVIOUS[target]:
            raise RuntimeError(f"group {self.group_id} cannot move from {self.state.value} to {target.value}")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    # ---- members ----

    def add(self, member: ClassicMember, future: Pending[JoinGroupResponse] | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in the group")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise RuntimeError("the group and member's protocol type must be the same")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.awaiting_join = future
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self._count_protocols(removed, -1)
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(
        self,
        member: ClassicMember,
        protocols: tuple[Protocol, ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        future: Pending[JoinGroupResponse] | None,
    ) -> None:
        self._count_protocols(member, -1)
        member.protocols = tuple(protocols)
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = future

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> ClassicMember:
        removed = self.members.pop(old_member_id, None)
        if removed is None:
            raise RuntimeError(f"cannot replace non-existing member id {old_member_id}")
        # Fence a duplicate client still waiting on the old id.
        self.complete_join(removed, JoinGroupResponse(Errors.FencedInstanceIdError, member_id=old_member_id))
        self.complete_sync(removed, SyncGroupResponse(Errors.FencedInstanceIdError))
        new_member = ClassicMember(
            member_id=new_member_id,
            group_instance_id=removed.group_instance_id,
            client_id=removed.client_id,
            client_host=removed.client_host,
            rebalance_timeout_ms=removed.rebalance_timeout_ms,
            session_timeout_ms=removed.session_timeout_ms,
            protocol_type=removed.protocol_type,
            protocols=removed.protocols,
            assignment=removed.assignment,
        )
        self.members[new_member_id] = new_member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new_member

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    def complete_join(self, member: ClassicMember, response: JoinGroupResponse) -> bool:
        if member.awaiting_join is None:
            return False
        future, member.awaiting_join = member.awaiting_join, None
        future.complete(response)
        return True

    def complete_sync(self, member: ClassicMember, response: SyncGroupResponse) -> bool:
        if member.awaiting_sync is None:
            return False
        future, member.awaiting_sync = member.awaiting_sync, None
        future.complete(response)
        return True

    # ---- protocols ----

    def _count_protocols(self, member: ClassicMember, delta: int) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def candidate_protocols(self) -> set[str]:
        return {name for name, count in self.supported_protocols.items() if count == len(self.members)}

    def select_protocol(self) -> str:
        if not self.members:
            raise RuntimeError("cannot select a protocol for an empty group")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        names = set(protocol_names)
        if self.is_empty:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == len(self.members) for name in names
        )

    # ---- subscriptions (KIP-496) ----

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Union of the members' ConsumerProtocolSubscription topics, read with the v0 prefix every
        version starts with; None when unknown (not a consumer group, or a subscription that does not
        parse), which Kafka treats as "subscribed to everything" for a consumer group."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(self.protocol_name)))
        except CodecError:
            # Kafka catches only a SchemaException here; its other reader errors propagate (a JoinGroup
            # fails, a load fails). The sandbox treats both as unknown, which expires nothing either.
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    # ---- validation (ClassicGroup.validate*) ----

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        if group_instance_id is not None:
            existing = self.static_member_id(group_instance_id)
            if existing is None:
                raise GroupError(Errors.UnknownMemberIdError)
            if existing != member_id:
                raise GroupError(Errors.FencedInstanceIdError)
        if member_id not in self.members:
            raise GroupError(Errors.UnknownMemberIdError)

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> None:
        if self.is_in(GroupState.DEAD):
            raise GroupError(Errors.CoordinatorNotAvailableError)
        if generation_id < 0 and self.is_empty:
            return  # admin client or a consumer without group management
        if generation_id >= 0 or member_id or group_instance_id is not None:
            self.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise GroupError(Errors.IllegalGenerationError)
        elif not self.is_empty:
            raise GroupError(Errors.UnknownMemberIdError)
        if self.is_in(GroupState.COMPLETING_REBALANCE):
            raise GroupError(Errors.RebalanceInProgressError)

    def validate_offset_delete(self) -> None:
        if self.is_in(GroupState.DEAD):
            raise GroupError(Errors.GroupIdNotFoundError, f"Group {self.group_id} is in dead state.")
        active = self.is_in(
            GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE
        )
        if active and not self.uses_consumer_protocol():
            raise GroupError(Errors.NonEmptyGroupError)

    def validate_delete_group(self) -> None:
        if self.is_in(GroupState.DEAD):
            raise GroupError(Errors.GroupIdNotFoundError, f"Group {self.group_id} is in dead state.")
        if self.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
            raise GroupError(Errors.NonEmptyGroupError)


def subscription_topics(metadata: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription, read as Kafka's coordinator reads them (the codec's
    subscription_topics: the version ignored, the v0 fields with Kafka's leniency)."""
    return codec_subscription_topics(metadata)
