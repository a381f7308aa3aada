"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup for classic groups, with their timers.

A port of the classic-group half of apache/kafka GroupMetadataManager (Kafka 4.x): classicGroupJoin*,
completeClassicGroupJoin, prepareRebalance, the heartbeat / join / sync expirations, classicGroupSync,
classicGroupHeartbeat and classicGroupLeave. Method names follow Kafka's so the two can be read side
by side. Each operation returns a `Result`: the records to append and what to do once they are
appended (Kafka's appendFuture callbacks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import kafka.errors as Errors

from .classic import EMPTY_ASSIGNMENT, ClassicGroup, ClassicMember, GroupState
from .errors import Error, GroupError
from .messages import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
    RequestContext,
    SyncGroupRequest,
    SyncGroupResponse,
)
from .modern import ConsumerGroup
from .pending import Pending
from .records import Record, consumer_group_tombstones, empty_group_metadata_record, group_metadata_record
from .state import CoordinatorState, heartbeat_key, join_key, sync_key

S = GroupState


@dataclass
class Result:
    records: list[Record] = field(default_factory=list)
    after: list[Callable[[], None]] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.records and not self.after


def _empty() -> Result:
    return Result()


class Membership:
    def __init__(self, state: CoordinatorState) -> None:
        self.s = state

    # ---- plumbing ----

    def apply(self, group_id: str, result: Result) -> None:
        self.s.write(group_id, result.records)
        for callback in result.after:
            callback()

    def _schedule(self, key: str, deadline_ms: int, group_id: str, operation: Callable[[], Result]) -> None:
        self.s.timers.schedule(key, deadline_ms, lambda: self.apply(group_id, operation()))

    def reschedule_heartbeat(
        self, group: ClassicGroup, member: ClassicMember, timeout_ms: int | None = None
    ) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        gid, mid = group.group_id, member.member_id
        self._schedule(
            heartbeat_key(gid, mid), self.s.now() + timeout, gid, lambda: self._expire_heartbeat(gid, mid)
        )

    # ---- JoinGroup ----

    def join(self, ctx: RequestContext, request: JoinGroupRequest) -> Pending[JoinGroupResponse]:
        future: Pending[JoinGroupResponse] = Pending()
        config = self.s.config
        # GroupCoordinatorService.joinGroup
        if not request.group_id:
            future.complete(JoinGroupResponse(Errors.InvalidGroupIdError, member_id=request.member_id))
            return future
        if (
            not config.group_min_session_timeout_ms
            <= request.session_timeout_ms
            <= config.group_max_session_timeout_ms
        ):
            future.complete(JoinGroupResponse(Errors.InvalidSessionTimeoutError, member_id=request.member_id))
            return future
        # GroupMetadataManager.classicGroupJoin
        group = self.s.groups.get(request.group_id)
        prelude: list[Record] = []
        if isinstance(group, ConsumerGroup):
            if not group.is_empty or group.group_type != "consumer":
                # Kafka would let this member join the KIP-848 group through the classic protocol
                # (classicGroupJoinToConsumerGroup); the sandbox does not run KIP-848 groups. A streams
                # or share group is never replaced by a classic one (getOrMaybeCreateClassicGroup).
                future.complete(
                    JoinGroupResponse(Errors.InconsistentGroupProtocolError, member_id=UNKNOWN_MEMBER_ID)
                )
                return future
            prelude = consumer_group_tombstones(group)  # maybeDeleteEmptyConsumerGroup
            self.s.remove_group(group.group_id)
        self._join_to_classic_group(ctx, request, future, prelude)
        return future

    def _join_to_classic_group(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        future: Pending[JoinGroupResponse],
        prelude: list[Record],
    ) -> None:
        group_id, member_id = request.group_id, request.member_id
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        is_new_group = group_id not in self.s.groups
        existing = self.s.groups.get(group_id)
        if existing is None and not is_unknown_member:
            future.complete(JoinGroupResponse(Errors.UnknownMemberIdError, member_id=member_id))
            return
        group = self.s.get_or_create_classic_group(group_id)

        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            future.complete(JoinGroupResponse(Errors.GroupMaxSizeReachedError, member_id=UNKNOWN_MEMBER_ID))
            result = _empty()
        elif is_unknown_member:
            result = self._join_new_member(ctx, request, group, future)
        else:
            result = self._join_existing_member(ctx, request, group, future)

        if is_new_group and result.is_empty:
            # A new group is committed to the log right away (newEmptyGroupMetadataRecord).
            result = Result([*prelude, empty_group_metadata_record(group)])
        self.apply(group_id, result)

    def _join_new_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: ClassicGroup,
        future: Pending[JoinGroupResponse],
    ) -> Result:
        if group.is_in(S.DEAD):
            future.complete(
                JoinGroupResponse(Errors.CoordinatorNotAvailableError, member_id=UNKNOWN_MEMBER_ID)
            )
        elif not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
            future.complete(
                JoinGroupResponse(Errors.InconsistentGroupProtocolError, member_id=UNKNOWN_MEMBER_ID)
            )
        else:
            new_member_id = group.generate_member_id(ctx.client_id, request.group_instance_id)
            if request.group_instance_id is not None:
                existing = group.static_member_id(request.group_instance_id)
                if existing is not None:
                    return self._update_static_member_then_rebalance_or_complete_join(
                        ctx, request, group, existing, new_member_id, future
                    )
                return self._add_member_then_rebalance_or_complete_join(
                    ctx, request, group, new_member_id, future
                )
            if ctx.api_version >= 4:  # JoinGroupRequest.requiresKnownMemberId
                group.pending_join_members.add(new_member_id)
                gid = group.group_id
                self._schedule(
                    heartbeat_key(gid, new_member_id),
                    self.s.now() + request.session_timeout_ms,
                    gid,
                    lambda: self._expire_heartbeat(gid, new_member_id),
                )
                future.complete(JoinGroupResponse(Errors.MemberIdRequiredError, member_id=new_member_id))
            else:
                return self._add_member_then_rebalance_or_complete_join(
                    ctx, request, group, new_member_id, future
                )
        return _empty()

    def _join_existing_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: ClassicGroup,
        future: Pending[JoinGroupResponse],
    ) -> Result:
        member_id = request.member_id
        if group.is_in(S.DEAD):
            future.complete(JoinGroupResponse(Errors.CoordinatorNotAvailableError, member_id=member_id))
            return _empty()
        if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
            future.complete(JoinGroupResponse(Errors.InconsistentGroupProtocolError, member_id=member_id))
            return _empty()
        if member_id in group.pending_join_members:
            if request.group_instance_id is not None:
                # Kafka throws IllegalStateException here (a pending member is never static).
                future.complete(JoinGroupResponse(Errors.UnknownMemberIdError, member_id=member_id))
                return _empty()
            return self._add_member_then_rebalance_or_complete_join(ctx, request, group, member_id, future)
        try:
            group.validate_member(member_id, request.group_instance_id)
        except GroupError as exc:
            future.complete(JoinGroupResponse(exc.error, member_id=member_id))
            return _empty()

        member = group.members[member_id]
        if group.is_in(S.PREPARING_REBALANCE):
            return self._update_member_then_rebalance_or_complete_join(request, group, member, future)
        if group.is_in(S.COMPLETING_REBALANCE):
            if member.matches(request.protocols):
                # The member missed the JoinGroup response: send the current generation again.
                future.complete(
                    self._join_response(group, member_id, with_members=group.is_leader(member_id))
                )
                return _empty()
            return self._update_member_then_rebalance_or_complete_join(request, group, member, future)
        if group.is_in(S.STABLE):
            if group.is_leader(member_id) or not member.matches(request.protocols):
                return self._update_member_then_rebalance_or_complete_join(request, group, member, future)
            future.complete(self._join_response(group, member_id, with_members=False))
            return _empty()
        # Empty: let the member reset its generation and rejoin.
        future.complete(JoinGroupResponse(Errors.UnknownMemberIdError, member_id=member_id))
        return _empty()

    def _join_response(
        self,
        group: ClassicGroup,
        member_id: str,
        *,
        with_members: bool,
        skip_assignment: bool = False,
        leader: str | None = None,
    ) -> JoinGroupResponse:
        return JoinGroupResponse(
            Errors.NoError,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=(group.leader_id if leader is None else leader) or "",
            skip_assignment=skip_assignment,
            members=self._current_members(group) if with_members else (),
        )

    @staticmethod
    def _current_members(group: ClassicGroup) -> tuple[JoinGroupMember, ...]:
        if group.is_in(S.DEAD, S.PREPARING_REBALANCE):
            raise RuntimeError(f"cannot list members of group {group.group_id} in state {group.state.value}")
        name = group.protocol_name or ""
        return tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(name))
            for m in group.members.values()
        )

    def _update_member_then_rebalance_or_complete_join(
        self,
        request: JoinGroupRequest,
        group: ClassicGroup,
        member: ClassicMember,
        future: Pending[JoinGroupResponse],
    ) -> Result:
        group.update_member(
            member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, future
        )
        return self._maybe_prepare_rebalance_or_complete_join(group)

    def _add_member_then_rebalance_or_complete_join(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: ClassicGroup,
        member_id: str,
        future: Pending[JoinGroupResponse],
    ) -> Result:
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=tuple(request.protocols),
            is_new=True,
        )
        if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True  # the initial rebalance may wait a little longer
        group.add(member, future)
        # New members cannot heartbeat yet: their JoinGroup itself times out instead.
        self.reschedule_heartbeat(group, member, self.s.config.new_member_join_timeout_ms)
        return self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member_then_rebalance_or_complete_join(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: ClassicGroup,
        old_member_id: str,
        new_member_id: str,
        future: Pending[JoinGroupResponse],
    ) -> Result:
        current_leader = group.leader_id
        instance_id = request.group_instance_id
        assert instance_id is not None
        new_member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.s.timers.cancel(heartbeat_key(group.group_id, old_member_id))
        self.reschedule_heartbeat(group, new_member)
        group.update_member(
            new_member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms, future
        )
        if group.is_in(S.STABLE):
            if (group.protocol_name or "") == group.select_protocol():
                # Same protocol: persist the new member id without a rebalance.
                assignment = {m.member_id: m.assignment for m in group.members.values()}

                def reply() -> None:
                    if ctx.api_version >= 9:  # JoinGroupRequest.supportsSkippingAssignment
                        is_leader = group.is_leader(new_member_id)
                        group.complete_join(
                            new_member,
                            self._join_response(
                                group, new_member_id, with_members=is_leader, skip_assignment=is_leader
                            ),
                        )
                    else:
                        group.complete_join(
                            new_member,
                            self._join_response(
                                group, new_member_id, with_members=False, leader=current_leader or ""
                            ),
                        )

                return Result([group_metadata_record(group, assignment)], [reply])
            return self._maybe_prepare_rebalance_or_complete_join(group)
        if group.is_in(S.COMPLETING_REBALANCE):
            return self._prepare_rebalance(group)
        if group.is_in(S.EMPTY, S.DEAD):
            raise RuntimeError(
                f"group {group.group_id} cannot replace a static member in state {group.state.value}"
            )
        return self._maybe_complete_join_phase(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.s.config.group_max_size
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (
                member is not None and member.awaiting_join is not None
            ) or group.num_awaiting_join() < max_size
        return member_id in group.members or len(group.members) < max_size

    # ---- rebalance ----

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> Result:
        if group.can_rebalance():
            return self._prepare_rebalance(group)
        return self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> Result:
        if not group.is_in(S.PREPARING_REBALANCE):
            return _empty()
        if group.previous_state is S.EMPTY:
            return _empty()  # the initial rebalance completes on its timer
        if not group.has_all_members_joined():
            return _empty()
        return self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> Result:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_with_error(group, Errors.RebalanceInProgressError)
        self._remove_sync_expiration(group)
        initial = group.is_in(S.EMPTY)
        if initial:
            delay = self.s.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            gid = group.group_id
            self._schedule(
                join_key(gid),
                self.s.now() + delay,
                gid,
                lambda: self._try_complete_initial_rebalance_else_schedule(gid, delay, remaining),
            )
        group.transition_to(S.PREPARING_REBALANCE, self.s.now())
        return _empty() if initial else self._maybe_complete_join_else_schedule(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> Result:
        if group.has_all_members_joined():
            return self._complete_join(group)
        gid = group.group_id
        self._schedule(
            join_key(gid),
            self.s.now() + group.rebalance_timeout_ms(),
            gid,
            lambda: self._complete_join_by_id(gid),
        )
        return _empty()

    def _try_complete_initial_rebalance_else_schedule(
        self, group_id: str, delay_ms: int, remaining_ms: int
    ) -> Result:
        group = self.s.classic_group(group_id)
        if group is None:
            return _empty()
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.s.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule(
                join_key(group_id),
                self.s.now() + new_delay,
                group_id,
                lambda: self._try_complete_initial_rebalance_else_schedule(
                    group_id, new_delay, new_remaining
                ),
            )
            return _empty()
        return self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> Result:
        group = self.s.classic_group(group_id)
        return _empty() if group is None else self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> Result:
        gid = group.group_id
        self.s.timers.cancel(join_key(gid))
        for member in group.not_yet_rejoined():
            if not member.is_static:
                group.remove(member.member_id)
                self.s.timers.cancel(heartbeat_key(gid, member.member_id))
        if group.is_in(S.DEAD):
            return _empty()
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for session expirations to clean up.
            self._schedule(
                join_key(gid),
                self.s.now() + group.rebalance_timeout_ms(),
                gid,
                lambda: self._complete_join_by_id(gid),
            )
            return _empty()
        group.init_next_generation(self.s.now())
        if group.is_in(S.EMPTY):
            return Result([group_metadata_record(group, {})])
        for member in list(group.members.values()):
            response = self._join_response(
                group, member.member_id, with_members=group.is_leader(member.member_id)
            )
            group.complete_join(member, response)
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self._schedule(
            sync_key(gid),
            self.s.now() + group.rebalance_timeout_ms(),
            gid,
            lambda: self._expire_pending_sync(gid, generation),
        )
        return _empty()

    def _expire_heartbeat(self, group_id: str, member_id: str) -> Result:
        group = self.s.classic_group(group_id)
        if group is None or group.is_in(S.DEAD):
            return _empty()
        if member_id in group.pending_join_members:
            group.remove(member_id)
            if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
                return self._complete_join(group)
            return _empty()
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return _empty()
        if self.s.liveness(group_id, member_id):
            # Sandbox rule: the clock jumped past the deadline while the member's client is running
            # and connected; such a client would have kept heartbeating, so its session goes on.
            self.s.timers.schedule(
                heartbeat_key(group_id, member_id),
                self.s.clock_now() + member.session_timeout_ms,
                lambda: self.apply(group_id, self._expire_heartbeat(group_id, member_id)),
            )
            return _empty()
        return self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicMember) -> Result:
        group.complete_join(
            member, JoinGroupResponse(Errors.UnknownMemberIdError, member_id=UNKNOWN_MEMBER_ID)
        )
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            return self._maybe_prepare_rebalance_or_complete_join(group)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self._complete_join(group)
        return _empty()

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> Result:
        group = self.s.classic_group(group_id)
        if group is None or generation_id != group.generation_id:
            return _empty()
        if group.is_in(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync_members:
            for member_id in list(group.pending_sync_members):
                group.remove(member_id)
                self.s.timers.cancel(heartbeat_key(group_id, member_id))
            return self._prepare_rebalance(group)
        return _empty()

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.s.timers.cancel(sync_key(group.group_id))

    def _reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: Error) -> None:
        for member in group.members.values():
            member.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, EMPTY_ASSIGNMENT)
        self._propagate_assignment(group, Errors.NoError)

    def _propagate_assignment(self, group: ClassicGroup, error: Error) -> None:
        ok = error is Errors.NoError
        for member in list(group.members.values()):
            response = SyncGroupResponse(
                error,
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None,
                assignment=member.assignment,
            )
            if group.complete_sync(member, response):
                self.reschedule_heartbeat(group, member)

    # ---- SyncGroup ----

    def sync(self, ctx: RequestContext, request: SyncGroupRequest) -> Pending[SyncGroupResponse]:
        future: Pending[SyncGroupResponse] = Pending()
        if ctx.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
            future.complete(
                SyncGroupResponse(Errors.InconsistentGroupProtocolError)
            )  # KafkaApis.handleSyncGroupRequest
            return future
        if not request.group_id:
            future.complete(SyncGroupResponse(Errors.InvalidGroupIdError))
            return future
        group = self.s.groups.get(request.group_id)
        if group is None or group.is_empty or not isinstance(group, ClassicGroup):
            # A KIP-848 group only syncs its classic-protocol members, which the sandbox never has.
            future.complete(SyncGroupResponse(Errors.UnknownMemberIdError))
            return future
        self.apply(group.group_id, self._sync_classic(group, request, future))
        return future

    def _sync_classic(
        self, group: ClassicGroup, request: SyncGroupRequest, future: Pending[SyncGroupResponse]
    ) -> Result:
        member_id = request.member_id
        error = self._validate_sync(group, request)
        if error is not None:
            future.complete(SyncGroupResponse(error))
        elif group.is_in(S.PREPARING_REBALANCE):
            future.complete(SyncGroupResponse(Errors.RebalanceInProgressError))
        elif group.is_in(S.COMPLETING_REBALANCE):
            group.members[member_id].awaiting_sync = future
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                assignment = dict(request.assignments)
                for mid in group.members:
                    assignment.setdefault(mid, EMPTY_ASSIGNMENT)
                generation = request.generation_id

                def stabilize() -> None:
                    if group.is_in(S.COMPLETING_REBALANCE) and generation == group.generation_id:
                        self._set_and_propagate_assignment(group, assignment)
                        group.transition_to(S.STABLE, self.s.now())

                return Result([group_metadata_record(group, assignment)], [stabilize])
        elif group.is_in(S.STABLE):
            self._remove_pending_sync_member(group, member_id)
            member = group.members[member_id]
            future.complete(
                SyncGroupResponse(Errors.NoError, group.protocol_type, group.protocol_name, member.assignment)
            )
        return _empty()

    @staticmethod
    def _validate_sync(group: ClassicGroup, request: SyncGroupRequest) -> Error | None:
        if group.is_in(S.DEAD):
            return Errors.CoordinatorNotAvailableError
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except GroupError as exc:
            return exc.error
        if request.generation_id != group.generation_id:
            return Errors.IllegalGenerationError
        if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
            request.protocol_name, group.protocol_name
        ):
            return Errors.InconsistentGroupProtocolError
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.is_in(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync_members:
            self.s.timers.cancel(sync_key(group.group_id))

    # ---- Heartbeat ----

    def heartbeat(self, ctx: RequestContext, request: HeartbeatRequest) -> Error:
        if not request.group_id:
            return Errors.InvalidGroupIdError
        group = self.s.groups.get(request.group_id)
        if not isinstance(group, ClassicGroup):
            return Errors.UnknownMemberIdError  # unknown group (or a KIP-848 group: see sync)
        if group.is_in(S.DEAD):
            return Errors.CoordinatorNotAvailableError
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except GroupError as exc:
            return exc.error
        if request.generation_id != group.generation_id:
            return Errors.IllegalGenerationError
        if group.is_in(S.EMPTY):
            return Errors.UnknownMemberIdError
        self.reschedule_heartbeat(group, group.members[request.member_id])
        if group.is_in(S.PREPARING_REBALANCE):
            return Errors.RebalanceInProgressError
        return Errors.NoError

    # ---- LeaveGroup ----

    def leave(self, ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
        if not request.group_id:
            return LeaveGroupResponse(Errors.InvalidGroupIdError)
        group = self.s.groups.get(request.group_id)
        if not isinstance(group, ClassicGroup):
            # GroupCoordinatorService maps the UnknownMemberIdException to every member.
            return LeaveGroupResponse(
                members=tuple(
                    MemberResponse(m.member_id, m.group_instance_id, Errors.UnknownMemberIdError)
                    for m in request.members
                )
            )
        if group.is_in(S.DEAD):
            return LeaveGroupResponse(Errors.CoordinatorNotAvailableError)
        responses: list[MemberResponse] = []
        for identity in request.members:
            if identity.member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by its instance id.
                instance = identity.group_instance_id
                static_id = group.static_member_id(instance) if instance is not None else None
                if static_id is not None:
                    self._remove_current_member(group, static_id)
                    responses.append(MemberResponse(identity.member_id, instance))
                else:
                    responses.append(
                        MemberResponse(identity.member_id, instance, Errors.UnknownMemberIdError)
                    )
            elif identity.member_id in group.pending_join_members:
                group.remove(identity.member_id)
                self.s.timers.cancel(heartbeat_key(group.group_id, identity.member_id))
                responses.append(MemberResponse(identity.member_id, identity.group_instance_id))
            else:
                try:
                    group.validate_member(identity.member_id, identity.group_instance_id)
                except GroupError as exc:
                    responses.append(
                        MemberResponse(identity.member_id, identity.group_instance_id, exc.error)
                    )
                    continue
                self._remove_current_member(group, identity.member_id)
                responses.append(MemberResponse(identity.member_id, identity.group_instance_id))

        result = _empty()
        if any(r.error is Errors.NoError for r in responses):
            if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
                result = self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(S.PREPARING_REBALANCE):
                result = self._maybe_complete_join_phase(group)
        self.apply(group.group_id, result)
        return LeaveGroupResponse(members=tuple(responses))

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.s.timers.cancel(heartbeat_key(group.group_id, member_id))
        group.complete_join(
            member, JoinGroupResponse(Errors.UnknownMemberIdError, member_id=UNKNOWN_MEMBER_ID)
        )
        group.remove(member_id)

    # ---- loading (GroupMetadataManager.onLoaded) ----

    def on_loaded(self, group: ClassicGroup) -> None:
        for member in group.members.values():
            self.reschedule_heartbeat(group, member)


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
