"""What an offset reset reads from Kafka before it can show a plan, in one place for the `reset` command and
the OffsetReset reconciler: the group's committed offsets, the source's (another group's), the partitions
of the topics the scope names, each partition's log range and, for datetime and duration, ListOffsets by
timestamp. The plan itself is decisions/reset_plan.py's; nothing here changes anything in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..adapters.kafka_admin import KafkaAdmin
from ..decisions.reset_plan import (
    BY_TIME,
    FROM_SOURCE,
    ResetPlan,
    ResetScope,
    ResetTarget,
    TargetKind,
    partitions_to_reset,
    plan_reset,
    with_added_notes,
)
from ..model.offsets import TP, Committed


def read_plan(admin: KafkaAdmin, group: str, target: ResetTarget, scope: ResetScope, now_ms: int,
              backup: Mapping[TP, Committed] | None = None, uncommitted: Sequence[TP] = ()) -> ResetPlan:
    """The plan of a reset of `group` as Kafka's offsets are now. `backup`: the offsets of the backup a
    fromBackup target names (the caller reads the backup store and checks it with reset_plan.check_source),
    or of the file a fromFile target names (the CLI reads it); fromGroup's source is read here. Raises reset_plan.ResetRefused for a topic that does not exist, and
    KafkaFailure when Kafka refuses a request."""
    committed = admin.committed_offsets(group)
    source: Mapping[TP, Committed] | None = None
    if target.kind is TargetKind.FROM_GROUP:
        assert target.group is not None
        source = admin.committed_offsets(target.group)
    elif target.kind in (TargetKind.FROM_BACKUP, TargetKind.FROM_FILE):
        source = backup or {}
    unlisted = [] if scope.all_topics or target.kind in FROM_SOURCE else [
        t.name for t in scope.topics if t.partitions is None]
    partitions = partitions_to_reset(scope, target, committed, admin.topic_partitions(unlisted), source)
    ranges = admin.log_ranges(partitions)
    by_timestamp: dict[TP, int | None] = {}
    timestamp = target.timestamp_ms(now_ms)
    if target.kind in BY_TIME and timestamp is not None:
        by_timestamp.update(admin.list_offsets(ranges, timestamp))
    # where the reset adds an offset, and (an undo) what the undone reset added: said, never removed
    return with_added_notes(plan_reset(group, target, partitions, committed, ranges, by_timestamp, source),
                            uncommitted, committed)
