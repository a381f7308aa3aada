"""The sandbox's group coordinator: one synchronous state machine, data in and data out.

It plays the part of Kafka 4.x's GroupCoordinatorShard for every `__consumer_offsets` partition at
once. Time comes from the injected clock; records go to the injected sink; nothing here does I/O or
knows about asyncio. Before each operation, timers whose deadline has passed are fired in deadline
order, each at its own deadline, so after a clock jump the state is what Kafka's would be had that
time really passed (see `tick`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence

import kafka.errors as Errors

from .admin import GroupAdmin
from .classic import ClassicGroup, GroupState
from .errors import Error
from .loader import LoadReport, RecordLoader
from .membership import Membership
from .messages import (
    CleanupReport,
    DeletedGroup,
    DescribedGroup,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroupRequest,
    OffsetFetchGroupResponse,
    RequestContext,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicResult,
)
from .modern import ConsumerGroup
from .offset_manager import OffsetManager, TopicView
from .pending import Pending
from .state import CoordinatorConfig, CoordinatorState, Liveness, RecordSink, TimestampedRecord, never_live
from .timers import Timers

CLEANUP_KEY = "expire-group-metadata"


class GroupCoordinator:
    def __init__(
        self,
        config: CoordinatorConfig,
        now_ms: Callable[[], int],
        sink: RecordSink,
        topics: TopicView,
        liveness: Liveness = never_live,
    ) -> None:
        self.state = CoordinatorState(config, now_ms, sink, liveness)
        self.membership = Membership(self.state)
        self.offsets = OffsetManager(self.state, self.membership, topics)
        self.admin = GroupAdmin(self.state, self.offsets)
        self.loader = RecordLoader(self.state, self.membership)
        self._ticking = False
        self._collecting: CleanupReport | None = None
        # The cleanup's interval boundaries: anchor + k * interval, k >= 1 (the first run is one interval
        # after the coordinator starts, as GroupCoordinatorShard.onLoaded schedules it).
        self._anchor = self.state.now()
        self._last_run = self._anchor
        self._cleanup_at: int | None = None
        self._unloaded = False
        self._schedule_cleanup(self._anchor + config.offsets_retention_check_interval_ms)

    # ---- time ----

    def tick(self) -> int:
        """Fires every timer due at the broker clock's now, earliest first, each at its deadline.
        Returns how many fired."""
        if self._ticking:
            return 0
        self._ticking = True
        fired = 0
        try:
            while True:
                due = self.state.timers.pop_due(self.state.clock_now())
                if due is None:
                    return fired
                with self.state.at(due.deadline_ms):
                    due.callback()
                if due.key != CLEANUP_KEY:
                    self._wake_cleanup(due.deadline_ms)  # a group may have changed at that time
                fired += 1
        finally:
            self._ticking = False

    @contextlib.contextmanager
    def _operation(self) -> Iterator[None]:
        """Fires due timers, then runs one request at one instant: its records and timestamps agree."""
        self.tick()
        now = self.state.clock_now()
        with self.state.at(now):
            yield
        self._wake_cleanup(now)

    def _schedule_cleanup(self, deadline_ms: int) -> None:
        self._cleanup_at = deadline_ms
        self.state.timers.schedule(CLEANUP_KEY, deadline_ms, self._periodic_cleanup)

    def _boundary_at_or_after(self, when_ms: int) -> int:
        interval = self.state.config.offsets_retention_check_interval_ms
        k = max(1, -(-(when_ms - self._anchor) // interval))
        return self._anchor + k * interval

    def _wake_cleanup(self, changed_at: int) -> None:
        """Something may have changed at `changed_at` (a request, another timer): the first boundary after
        it (and after the last run) must run, in case that change made an offset due sooner."""
        if self._unloaded:
            return
        boundary = self._boundary_at_or_after(max(changed_at, self._last_run + 1))
        if self._cleanup_at is None or boundary < self._cleanup_at:
            self._schedule_cleanup(boundary)

    def _periodic_cleanup(self) -> None:
        """The offsets.retention.check.interval.ms task (GroupCoordinatorShard.scheduleGroupMetadataExpiration:
        a timer that runs cleanupGroupMetadata and schedules itself again one interval later). After a clock
        jump it runs at every interval boundary that passed, each at its own time, interleaved with the
        other due timers in deadline order: a group's state may change between two boundaries (a session
        times out, a member leaves), and each run sees the group as it was then.

        Runs that would do nothing are not made: after a run the next one is at the first boundary at or
        after the earliest time anything can expire (OffsetManager.next_due), and any change (a request,
        another timer) brings it back to the first boundary after the change. Every offset therefore goes
        at the first boundary at or after its due time, as with a run at every boundary, and a clock jump
        of days over thousands of groups costs a few runs instead of one per interval."""
        ran_at = self.state.now()
        self._last_run = ran_at
        self._collect(self.offsets.cleanup())
        due = self.offsets.next_due()
        self.state.timers.cancel(CLEANUP_KEY)
        self._cleanup_at = None
        if due is not None:
            self._schedule_cleanup(self._boundary_at_or_after(max(due, ran_at + 1)))

    # ---- membership ----

    def join_group(self, ctx: RequestContext, request: JoinGroupRequest) -> Pending[JoinGroupResponse]:
        with self._operation():
            return self.membership.join(ctx, request)

    def sync_group(self, ctx: RequestContext, request: SyncGroupRequest) -> Pending[SyncGroupResponse]:
        with self._operation():
            return self.membership.sync(ctx, request)

    def heartbeat(self, ctx: RequestContext, request: HeartbeatRequest) -> Error:
        with self._operation():
            return self.membership.heartbeat(ctx, request)

    def leave_group(self, ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
        with self._operation():
            return self.membership.leave(ctx, request)

    # ---- offsets ----

    def commit_offsets(self, ctx: RequestContext, request: OffsetCommitRequest) -> tuple[TopicResult, ...]:
        with self._operation():
            return self.offsets.commit(ctx, request)

    def fetch_offsets(self, request: OffsetFetchGroupRequest) -> OffsetFetchGroupResponse:
        with self._operation():
            return self.offsets.fetch(request)

    def delete_offsets(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        with self._operation():
            return self.offsets.delete(request)

    # ---- admin ----

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        with self._operation():
            return self.admin.list_groups(states_filter, types_filter)

    def describe_groups(self, group_ids: Iterable[str], api_version: int = 5) -> list[DescribedGroup]:
        with self._operation():
            return self.admin.describe_groups(group_ids, api_version)

    def describe_modern_groups(self, group_ids: Iterable[str], kind: str) -> list[tuple[str, ConsumerGroup | None]]:
        with self._operation():
            return self.admin.describe_modern_groups(group_ids, kind)

    def delete_groups(self, group_ids: Iterable[str]) -> list[DeletedGroup]:
        with self._operation():
            return self.admin.delete_groups(group_ids)

    # ---- broker hooks ----

    def expire_offsets(self) -> CleanupReport:
        """Runs the expiration task now, after the timers that are due (which may include periodic
        runs of it after a clock jump). Reports what all of those runs expired and deleted."""
        self._collecting = CleanupReport()
        try:
            with self._operation():
                self._collect(self.offsets.cleanup())
            return self._collecting
        finally:
            self._collecting = None

    def _collect(self, report: CleanupReport) -> None:
        if self._collecting is not None:
            self._collecting.expired_offsets += report.expired_offsets
            self._collecting.deleted_groups += report.deleted_groups

    def unload(self) -> None:
        """The coordinator stops (GroupMetadataManager.onUnloaded): requests still waiting in JoinGroup
        or SyncGroup get NOT_COORDINATOR, and classic groups are Dead."""
        for group in self.state.groups.values():
            if not isinstance(group, ClassicGroup):
                continue
            group.transition_to(GroupState.DEAD, self.state.clock_now())
            for member in list(group.members.values()):
                group.complete_join(
                    member, JoinGroupResponse(Errors.NotCoordinatorError, member_id=member.member_id)
                )
                group.complete_sync(member, SyncGroupResponse(Errors.NotCoordinatorError))
        self.state.timers = Timers()
        self._unloaded = True  # no more periodic cleanup (its timer went with the others)

    def on_topics_deleted(self, topics: Iterable[str]) -> int:
        with self._operation():
            return self.offsets.on_topics_deleted(topics)

    def load(self, records: Sequence[TimestampedRecord]) -> LoadReport:
        with self._operation():
            return self.loader.load(records)
