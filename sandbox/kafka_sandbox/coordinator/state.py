"""What the coordinator's parts share: groups, offsets, timers, the time, and the record log.

Kafka's shard keeps the same things (GroupMetadataManager.groups, OffsetMetadataManager.offsets, the
CoordinatorTimer) and appends each operation's records as one batch to its `__consumer_offsets`
partition. Here `RecordSink.append` is that log; in the broker it is the topic store, in unit tests an
in-memory list.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_offsets_model.codec import partition_for

from .classic import ClassicGroup, GroupState
from .modern import ConsumerGroup
from .offsets import OffsetStore
from .records import Record
from .timers import Timers

Group = ClassicGroup | ConsumerGroup
TimestampedRecord = tuple[bytes, bytes | None, int]

# GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (not a broker config in Kafka).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class RecordSink(Protocol):
    def append(self, partition: int, records: Sequence[TimestampedRecord]) -> None: ...


class Liveness(Protocol):
    def __call__(self, group_id: str, member_id: str) -> bool:
        """True if the member's client is evidently still running (see runtime.py)."""
        ...


def never_live(group_id: str, member_id: str) -> bool:
    return False


@dataclass(frozen=True)
class CoordinatorConfig:
    """Kafka's group coordinator settings (GroupCoordinatorConfig), with the sandbox's defaults."""

    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offsets_partitions: int = 50
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 0
    group_max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    @classmethod
    def from_broker(cls, broker_config: Any) -> CoordinatorConfig:
        """Reads the same-named fields of the broker's config; absent ones keep their defaults."""
        names = [f for f in cls.__dataclass_fields__ if hasattr(broker_config, f)]
        return cls(**{name: getattr(broker_config, name) for name in names})


class CoordinatorState:
    def __init__(
        self,
        config: CoordinatorConfig,
        now_ms: Callable[[], int],
        sink: RecordSink,
        liveness: Liveness = never_live,
    ) -> None:
        self.config = config
        self._clock = now_ms
        self.sink = sink
        self.liveness = liveness
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self.timers = Timers()
        self._virtual_now: int | None = None
        self._batch: dict[int, list[TimestampedRecord]] | None = None

    # ---- time ----

    def now(self) -> int:
        """The broker clock, or a timer's deadline while that timer runs: a clock advanced by days
        replays each due timer at its own time, as if the time had really passed."""
        return self._virtual_now if self._virtual_now is not None else self._clock()

    def clock_now(self) -> int:
        return self._clock()

    @contextlib.contextmanager
    def at(self, when_ms: int) -> Iterator[None]:
        saved, self._virtual_now = self._virtual_now, when_ms
        try:
            yield
        finally:
            self._virtual_now = saved

    # ---- records ----

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_partitions)

    def write(self, group_id: str, records: Sequence[Record]) -> None:
        """Appends an operation's records for one group (one batch, or part of the open batch)."""
        if not records:
            return
        now = self.now()
        stamped = [(key, value, now) for key, value in records]
        partition = self.partition_for(group_id)
        if self._batch is not None:
            self._batch.setdefault(partition, []).extend(stamped)
        else:
            self.sink.append(partition, stamped)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Collects the records of a multi-group operation into one batch per partition, as a shard
        writes them (cleanup, topic deletion, DeleteGroups)."""
        if self._batch is not None:
            yield
            return
        self._batch = {}
        try:
            yield
        finally:
            pending, self._batch = self._batch, None
            for partition in sorted(pending):
                self.sink.append(partition, pending[partition])

    # ---- groups ----

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def get_or_create_classic_group(self, group_id: str) -> ClassicGroup:
        """getOrMaybeCreateClassicGroup(id, true): a new group starts Empty, stamped now."""
        group = self.groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id, GroupState.EMPTY, self.now())
            self.groups[group_id] = group
        if not isinstance(group, ClassicGroup):
            raise LookupError(f"Group {group_id} is not a classic group.")
        return group

    def remove_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if isinstance(group, ClassicGroup):
            self.cancel_group_timers(group)

    def cancel_group_timers(self, group: ClassicGroup) -> None:
        self.timers.cancel(join_key(group.group_id))
        self.timers.cancel(sync_key(group.group_id))
        for member_id in list(group.members) + list(group.pending_join_members):
            self.timers.cancel(heartbeat_key(group.group_id, member_id))


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"
