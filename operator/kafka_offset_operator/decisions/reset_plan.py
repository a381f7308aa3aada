"""Offset resets as data: the target, the scope, and the per-partition plan, computed the way Apache Kafka's
`kafka-consumer-groups.sh --reset-offsets` computes it (docs/kafka-semantics.md, "Offset resets").

Both the `reset` command and the OffsetReset resource use these functions; they never call Kafka. The caller
fetches what a plan needs (committed offsets, each partition's log range and by-timestamp lookups from
ListOffsets, the source offsets of a backup or another group) and hands it in.

Kafka's rules, from ConsumerGroupCommand.ConsumerGroupService (prepareOffsetsToReset, checkOffsetsRange,
getLogTimestampOffsets):
- `earliest` / `latest` take the log start / end offset as they are (they ARE the range: nothing to clamp);
- `offset`, `shiftBy` and offsets from a file (here `fromBackup` and `fromGroup`) are clamped to the log's
  range: above the log end offset becomes the log end offset, below the log start offset becomes the log
  start offset (the end is checked first);
- `datetime` and `duration` take ListOffsets' answer for the timestamp unclamped, and a partition with no
  record at or after that time (offset -1) falls back to the log end offset;
- `shiftBy` of a partition without a committed offset is refused ("Cannot shift offset ... since there is
  no current committed offset");
- `current` (the CLI's --to-current) takes the committed offset as it is (unclamped, without its metadata or
  leader epoch), and the log end offset for a partition without one;
- `fromFile` (the CLI's --from-file) takes the offsets of a CSV file the tool's --export wrote
  (decisions/reset_file.py), clamped like `offset`.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafka_offsets_model.durations import format_duration_ms, parse_duration_ms
from kafka_offsets_model.errors import SpecError

from ..model.api import BACKUPS_SELECTOR
from ..model.offsets import TP, Committed
from ..model.offsets import LogRange as LogRange  # re-exported: a plan's input
from ..model.times import iso_ms

# Kafka's offsets are int64; a target outside that would fail on the wire, not in Kafka's range check.
_INT64_MAX = 2**63 - 1
# A group id is a Kafka STRING: at most 32767 bytes on the wire.
_MAX_GROUP_BYTES = 32767
# A backup is a ConfigMap: a DNS subdomain name (253 characters), optionally NAMESPACE/NAME for the CLI.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Kafka's legal topic names (org.apache.kafka.common.internals.Topic.validate): 249 of [a-zA-Z0-9._-].
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class TargetKind(StrEnum):
    """The one target of a reset; the values are the field names under `spec.target`."""

    EARLIEST = "earliest"
    LATEST = "latest"
    DATETIME = "datetime"
    DURATION = "duration"
    SHIFT_BY = "shiftBy"
    OFFSET = "offset"
    FROM_BACKUP = "fromBackup"
    FROM_GROUP = "fromGroup"
    CURRENT = "current"  # the CLI's only (--to-current)
    FROM_FILE = "fromFile"  # the CLI's only (--from-file); a resource undoes with fromBackup


# Targets that ask ListOffsets for a timestamp, and those that copy offsets from elsewhere.
BY_TIME = frozenset({TargetKind.DATETIME, TargetKind.DURATION})
FROM_SOURCE = frozenset({TargetKind.FROM_BACKUP, TargetKind.FROM_GROUP, TargetKind.FROM_FILE})
# What an OffsetReset's spec.target takes; the CLI takes every TargetKind.
RESOURCE_TARGETS = tuple(k for k in TargetKind if k not in (TargetKind.CURRENT, TargetKind.FROM_FILE))


@dataclass(frozen=True)
class ResetTarget:
    """Where the group's offsets go. Exactly one of the value fields is set, the one `kind` names."""

    kind: TargetKind
    datetime_ms: int | None = None  # datetime: epoch milliseconds
    duration_ms: int | None = None  # duration: how far back from now
    shift_by: int | None = None  # shiftBy: added to the committed offset (negative: back)
    offset: int | None = None  # offset: the same offset for every partition
    backup: str | None = None  # fromBackup: the backup's name (ConfigMap) in the store
    backup_namespace: str | None = None  # fromBackup given as NAMESPACE/NAME (the CLI); else the resource's
    group: str | None = None  # fromGroup: the group whose committed offsets are copied
    file: str | None = None  # fromFile: the CSV file's path (its offsets come to the plan as its source)

    def timestamp_ms(self, now_ms: int) -> int | None:
        """The time to ask ListOffsets for (datetime, duration back from `now_ms`); None for other targets."""
        if self.kind is TargetKind.DATETIME:
            return self.datetime_ms
        if self.kind is TargetKind.DURATION:
            assert self.duration_ms is not None
            return max(0, now_ms - self.duration_ms)
        return None

    def describe(self) -> str:
        """The target as a person would say it (status messages, the CLI's headline)."""
        if self.kind is TargetKind.DATETIME:
            assert self.datetime_ms is not None
            return f"the first offset at or after {iso_ms(self.datetime_ms)}"
        if self.kind is TargetKind.DURATION:
            assert self.duration_ms is not None
            return f"the first offset at or after {format_duration_ms(self.duration_ms)} ago"
        if self.kind is TargetKind.SHIFT_BY:
            return f"the committed offset shifted by {self.shift_by:+d}"
        if self.kind is TargetKind.OFFSET:
            return f"offset {self.offset}"
        if self.kind is TargetKind.FROM_BACKUP:
            where = f"{self.backup_namespace}/" if self.backup_namespace else ""
            return f"the offsets of backup {where}{self.backup}"
        if self.kind is TargetKind.FROM_GROUP:
            return f"the committed offsets of group {self.group}"
        if self.kind is TargetKind.FROM_FILE:
            return f"the offsets of file {self.file}"
        if self.kind is TargetKind.CURRENT:
            return "the committed offset (the log end offset where there is none)"
        return f"the {self.kind.value} offset"


@dataclass(frozen=True)
class TopicScope:
    name: str
    partitions: tuple[int, ...] | None  # None: every partition of the topic


@dataclass(frozen=True)
class ResetScope:
    """Which partitions: every partition the group has offsets for (`all_topics`; with fromBackup/fromGroup/fromFile:
    every partition the source holds), or the listed topics, each with optional partitions."""

    all_topics: bool
    topics: tuple[TopicScope, ...] = ()


@dataclass(frozen=True)
class ResetRow:
    """One partition of a plan. `new` is None when the partition is not reset (`error` says why if that
    refuses the whole plan, `note` if it does not); `requested` is the offset before clamping."""

    topic: str
    partition: int
    current: int | None  # the committed offset now; None: the group has none for this partition
    new: int | None
    requested: int | None = None
    note: str = ""
    error: str | None = None
    leader_epoch: int = -1  # committed with the new offset (a source's, when its offset is kept as is)
    metadata: str = ""

    @property
    def tp(self) -> TP:
        return (self.topic, self.partition)

    @property
    def clamped(self) -> bool:
        return self.requested is not None and self.new is not None and self.requested != self.new


@dataclass(frozen=True)
class ResetPlan:
    group: str
    target: ResetTarget
    rows: tuple[ResetRow, ...] = field(default_factory=tuple)
    # The group's committed offsets of the plan's partitions as read (with leader epoch and metadata).
    committed: Mapping[TP, Committed] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[ResetRow, ...]:
        return tuple(r for r in self.rows if r.error is not None)

    @property
    def refusal(self) -> str | None:
        """Why the plan cannot be carried out as a whole (Kafka's tool refuses all of it too), or None."""
        bad = self.errors
        if not bad:
            return None
        first = bad[0]
        more = f" (and {len(bad) - 1} more partitions)" if len(bad) > 1 else ""
        return f"{first.topic}-{first.partition}: {first.error}{more}"

    @property
    def to_commit(self) -> dict[TP, Committed]:
        """What the admin OffsetCommit sends: every row with a new offset (an unchanged one too, as Kafka's
        tool does: the commit is the reset's record)."""
        return {r.tp: Committed(r.new, r.leader_epoch, r.metadata) for r in self.rows if r.new is not None}

    @property
    def before(self) -> dict[TP, Committed]:
        """What a backup of this reset holds: the committed offset, as read, of each partition it commits
        (a partition without one has nothing to keep)."""
        return {r.tp: self.committed[r.tp] for r in self.rows if r.new is not None and r.tp in self.committed}

    @property
    def changes(self) -> int:
        return sum(1 for r in self.rows if r.new is not None and r.new != r.current)


# -- parsing


def parse_target(raw: Mapping[str, Any], path: str = "spec.target",
                 allowed: Sequence[TargetKind] = RESOURCE_TARGETS, *, kafka_forms: bool = False) -> ResetTarget:
    """`spec.target` (or the CLI's flags as the same mapping, `allowed` every TargetKind): exactly one of
    earliest: true, latest: true, datetime: RFC 3339, duration: "1h30m", shiftBy: int, offset: int,
    fromBackup: name, fromGroup: group (and for the CLI current: true, fromFile: path). `kafka_forms` (the
    CLI): also what kafka-consumer-groups.sh takes, a datetime without a zone (read as UTC, as Kafka's
    Utils.getDateTime appends "Z") and an offset below 0 (clamped to the log start offset like any offset
    below it, ConsumerGroupCommand.checkOffsetsRange)."""
    names = ", ".join(k.value for k in allowed)
    if not isinstance(raw, Mapping):
        raise SpecError(path, "must be an object with one of " + names)
    given = [k for k in raw if raw[k] is not None]
    unknown = [k for k in given if k not in {k.value for k in allowed}]
    if unknown:
        raise SpecError(f"{path}.{unknown[0]}", "is not a target; use one of " + names)
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise SpecError(path, f"needs exactly one of {names} (got {what})")
    kind = TargetKind(given[0])
    value = raw[kind.value]
    where = f"{path}.{kind.value}"
    if kind in (TargetKind.EARLIEST, TargetKind.LATEST, TargetKind.CURRENT):
        if value is not True:
            raise SpecError(where, "must be true")
        return ResetTarget(kind)
    if kind is TargetKind.DATETIME:
        return ResetTarget(kind, datetime_ms=_rfc3339_ms(value, where, zone_less_utc=kafka_forms))
    if kind is TargetKind.DURATION:
        if not isinstance(value, str):
            raise SpecError(where, "must be a duration like 1h30m")
        try:
            ms = parse_duration_ms(value)
        except ValueError as exc:
            raise SpecError(where, str(exc)) from None
        if ms <= 0:
            raise SpecError(where, "must be longer than 0")
        return ResetTarget(kind, duration_ms=ms)
    if kind is TargetKind.SHIFT_BY:
        return ResetTarget(kind, shift_by=_int(value, where, -_INT64_MAX, _INT64_MAX))
    if kind is TargetKind.OFFSET:
        return ResetTarget(kind, offset=_int(value, where, -_INT64_MAX if kafka_forms else 0, _INT64_MAX))
    if kind is TargetKind.FROM_BACKUP:
        if not isinstance(value, str) or not value:
            raise SpecError(where, f"must be the name of a backup (kubectl get configmaps -l {BACKUPS_SELECTOR})")
        namespace, slash, name = value.rpartition("/")
        if slash and not _DNS_LABEL.match(namespace):
            raise SpecError(where, f"{namespace!r} is not a namespace name")
        if not _DNS_SUBDOMAIN.match(name):
            raise SpecError(where, f"{name!r} is not a ConfigMap name")
        return ResetTarget(kind, backup=name, backup_namespace=namespace or None)
    if kind is TargetKind.FROM_FILE:
        if not isinstance(value, str) or not value:
            raise SpecError(where, "must be the path of a CSV file (topic,partition,offset)")
        return ResetTarget(kind, file=value)
    return ResetTarget(kind, group=check_group(value, where))


def parse_scope(raw: Mapping[str, Any], path: str = "spec") -> ResetScope:
    """`allTopics: true` or `topics: [{name, partitions?}]` of `raw` (a spec, or the CLI's flags as one)."""
    all_topics = raw.get("allTopics")
    topics = raw.get("topics")
    if all_topics is not None and all_topics is not True:
        raise SpecError(f"{path}.allTopics", "must be true (or leave it out and list spec.topics)")
    if all_topics and topics is not None:
        raise SpecError(f"{path}.topics", "and allTopics exclude each other: give one")
    if all_topics:
        return ResetScope(all_topics=True)
    if topics is None:
        raise SpecError(f"{path}.topics", "is required (or allTopics: true for every topic the group has offsets for)")
    if not isinstance(topics, Sequence) or isinstance(topics, str) or not topics:
        raise SpecError(f"{path}.topics", "must be a non-empty list of {name, partitions}")
    out: list[TopicScope] = []
    seen: set[str] = set()
    for i, entry in enumerate(topics):
        where = f"{path}.topics[{i}]"
        if not isinstance(entry, Mapping):
            raise SpecError(where, "must be an object with a name and optional partitions")
        name = entry.get("name")
        if not isinstance(name, str) or not _TOPIC.match(name) or name in (".", ".."):
            raise SpecError(f"{where}.name", f"{name!r} is not a Kafka topic name")
        if name in seen:
            raise SpecError(f"{where}.name", f"topic {name} is listed twice")
        seen.add(name)
        parts = entry.get("partitions")
        if parts is None:
            out.append(TopicScope(name, None))
            continue
        if not isinstance(parts, Sequence) or isinstance(parts, str) or not parts:
            raise SpecError(f"{where}.partitions", "must be a non-empty list of partition numbers")
        for j, p in enumerate(parts):
            _int(p, f"{where}.partitions[{j}]", 0, 2**31 - 1)
        out.append(TopicScope(name, tuple(sorted(set(parts)))))
    return ResetScope(all_topics=False, topics=tuple(out))


def check_group(value: Any, where: str) -> str:
    """A group id Kafka takes: a non-empty string of at most 32767 bytes, without surrounding spaces or
    control characters (what an OffsetDeletion's spec.group allows)."""
    if not isinstance(value, str) or not value:
        raise SpecError(where, "must be a consumer group id")
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise SpecError(where, "must not have leading/trailing spaces or control characters")
    if len(value.encode()) > _MAX_GROUP_BYTES:
        raise SpecError(where, f"is longer than Kafka's {_MAX_GROUP_BYTES} bytes")
    return value


def _int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(where, f"{value!r} is not a whole number")
    if not low <= value <= high:
        raise SpecError(where, f"{value} is outside {low}..{high}")
    return value


def _rfc3339_ms(value: Any, where: str, *, zone_less_utc: bool = False) -> int:
    """RFC 3339 with its offset required (a time without one means something else on every machine), or
    with `zone_less_utc` (the CLI) also Kafka's tool's form without one, YYYY-MM-DDTHH:mm:SS[.sss], which
    Kafka reads as UTC (Utils.getDateTime appends "Z" when the time part has no +, - or Z)."""
    if not isinstance(value, str):
        raise SpecError(where, "must be an RFC 3339 time like 2026-01-31T12:00:00Z")
    text = value.strip()
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise SpecError(where, f"{value!r} is not an RFC 3339 time like 2026-01-31T12:00:00Z") from None
    if zone_less_utc and "T" in text.upper() and moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    if "T" not in text.upper() or moment.tzinfo is None:
        raise SpecError(where, f"{value!r} needs a date, a time and an offset (Z or +01:00), e.g. 2026-01-31T12:00:00Z")
    ms = (moment - _EPOCH) // datetime.timedelta(milliseconds=1)  # exact, where timestamp() is a float
    if ms < 0:
        raise SpecError(where, f"{value!r} is before 1970, where Kafka has no timestamps")
    return ms


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


# -- the plan


class ResetRefused(ValueError):
    """No plan can be made: the scope names a topic that does not exist, or the source is not one to copy
    from (the group itself, a backup of another group or cluster). Nothing is reset; the message says why,
    `field` which part of an OffsetReset's spec it is about: `spec.topics` (a topic may still be created) or
    `spec.target.fromGroup` / `spec.target.fromBackup` (only a new spec fixes it)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def check_source(group: str, target: ResetTarget, cluster_id: str | None,
                 backup_group: str | None = None, backup_cluster_id: str | None = None) -> None:
    """Refuse a source that cannot be meant: fromGroup naming the group itself; fromBackup of a backup of
    another group (fromGroup copies another group's offsets) or taken on another Kafka cluster (its offsets
    mean nothing here; a backup without a cluster id is taken as it is, as `restore` does)."""
    if target.kind is TargetKind.FROM_GROUP and target.group == group:
        raise ResetRefused(f"fromGroup names group {group} itself: nothing to copy",
                           f"spec.target.{TargetKind.FROM_GROUP.value}")
    if target.kind is not TargetKind.FROM_BACKUP:
        return
    if backup_group is not None and backup_group != group:
        raise ResetRefused(f"backup {target.backup} holds offsets of group {backup_group}, not of {group}; "
                           "to copy another group's offsets use fromGroup", f"spec.target.{TargetKind.FROM_BACKUP.value}")
    if backup_cluster_id and cluster_id and backup_cluster_id != cluster_id:
        raise ResetRefused(f"backup {target.backup} was taken on Kafka cluster {backup_cluster_id}, "
                           f"this is cluster {cluster_id}", f"spec.target.{TargetKind.FROM_BACKUP.value}")


def partitions_to_reset(
    scope: ResetScope,
    target: ResetTarget,
    committed: Mapping[TP, Committed],
    topic_partitions: Mapping[str, Sequence[int]],
    source: Mapping[TP, Committed] | None = None,
) -> list[TP]:
    """The partitions a reset covers, as Kafka's getPartitionsToReset finds them: `allTopics` is every
    partition the group has a committed offset for; a topic without partitions is every partition of the
    topic (`topic_partitions`: its partitions from Metadata, for the topics the scope names); listed
    partitions are taken as they are (plan_reset refuses those that do not exist).

    For fromBackup, fromGroup and fromFile, `allTopics` is every partition of the source (the group may have none:
    the undo of a deletion), and a topic without partitions is the source's partitions of that topic."""
    if target.kind in FROM_SOURCE:
        held = sorted(source or {})
        if scope.all_topics:
            return held
        out: list[TP] = []
        for topic in scope.topics:
            if topic.partitions is None:
                out.extend(tp for tp in held if tp[0] == topic.name)
            else:
                out.extend((topic.name, p) for p in topic.partitions)
        return sorted(set(out))
    if scope.all_topics:
        return sorted(committed)
    out = []
    for topic in scope.topics:
        if topic.partitions is not None:
            out.extend((topic.name, p) for p in topic.partitions)
        elif topic.name in topic_partitions:
            out.extend((topic.name, p) for p in topic_partitions[topic.name])
        else:
            raise ResetRefused(f"topic {topic.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)",
                               "spec.topics")
    return sorted(set(out))


def plan_reset(
    group: str,
    target: ResetTarget,
    partitions: Iterable[TP],
    committed: Mapping[TP, Committed],
    log_ranges: Mapping[TP, LogRange],
    by_timestamp: Mapping[TP, int | None] | None = None,
    source: Mapping[TP, Committed] | None = None,
) -> ResetPlan:
    """Each partition's new offset by Kafka's rules (module docstring).

    `log_ranges`: ListOffsets EARLIEST and LATEST per partition; a partition missing from it does not exist
    (an error row: Kafka's tool refuses such a reset as a whole). `by_timestamp`: ListOffsets' offset for
    the target's timestamp (datetime, duration); None or -1 where no record is at or after it. `source`:
    the backup's or the other group's offsets (fromBackup, fromGroup); a partition it does not hold keeps
    its offset, with a note."""
    wanted = sorted(set(partitions))
    rows = [_row(tp, target, committed.get(tp), log_ranges.get(tp), by_timestamp or {}, source or {})
            for tp in wanted]
    return ResetPlan(group, target, tuple(rows), {tp: committed[tp] for tp in wanted if tp in committed})


NO_UNCOMMIT = 'Kafka has no "uncommit"'
ADDED_NOTE = f"no committed offset before: an undo cannot take it away ({NO_UNCOMMIT}); status.undo.offsetDeletion can"


def with_added_notes(plan: ResetPlan, uncommitted: Iterable[TP] = (),
                     committed: Mapping[TP, Committed] | None = None) -> ResetPlan:
    """The plan, saying where a reset adds an offset the group did not have (a fromGroup partition the group
    never read, say): an undo from the backup cannot remove it. `uncommitted`: for the undo itself (a
    fromBackup plan), the partitions the undone reset added (its backup's extra.uncommitted), listed with a
    note that they stay as they are (`committed`: the group's offsets now, to show theirs)."""
    rows = [r if r.new is None or r.current is not None else
            dataclasses.replace(r, note=f"{r.note}; {ADDED_NOTE}" if r.note else ADDED_NOTE) for r in plan.rows]
    seen = {r.tp for r in rows}
    for tp in sorted(set(uncommitted) - seen):
        now = (committed or {}).get(tp)
        rows.append(ResetRow(tp[0], tp[1], None if now is None else now.offset, None,
                             note=f"added by the reset this backup undoes (no offset before it): left as it is "
                             f"({NO_UNCOMMIT}); the undone reset's status.undo.offsetDeletion deletes it"))
    return dataclasses.replace(plan, rows=tuple(rows))


def uncommitted_partitions(extra: Mapping[str, Any]) -> list[TP]:
    """A reset backup's extra.uncommitted (the partitions the reset added), as written by
    reset_steps.uncommitted; anything else in it is ignored."""
    out: list[TP] = []
    for entry in extra.get("uncommitted") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("topic"), str) and isinstance(entry.get("partition"), int):
            out.append((entry["topic"], entry["partition"]))
    return out


def _row(tp: TP, target: ResetTarget, current: Committed | None, log: LogRange | None,
         by_timestamp: Mapping[TP, int | None], source: Mapping[TP, Committed]) -> ResetRow:
    topic, partition = tp
    now = None if current is None else current.offset
    if log is None:
        return ResetRow(topic, partition, now, None, error="the partition does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
    kind = target.kind
    if kind is TargetKind.EARLIEST:
        return ResetRow(topic, partition, now, log.start)
    if kind is TargetKind.LATEST:
        return ResetRow(topic, partition, now, log.end)
    if kind in BY_TIME:
        found = by_timestamp.get(tp)
        if found is None or found < 0:
            return ResetRow(topic, partition, now, log.end,
                            note=f"no record at or after the time: the log end offset {log.end}")
        return ResetRow(topic, partition, now, found)
    if kind is TargetKind.SHIFT_BY:
        if current is None:
            return ResetRow(topic, partition, None, None, error="no committed offset to shift by "
                            f"{target.shift_by:+d} (Kafka's tool refuses this too)")
        assert target.shift_by is not None
        return _clamped(topic, partition, now, current.offset + target.shift_by, log)
    if kind is TargetKind.OFFSET:
        assert target.offset is not None
        return _clamped(topic, partition, now, target.offset, log)
    if kind is TargetKind.CURRENT:
        # ConsumerGroupCommand: the committed offset as it is (no range check), a new OffsetAndMetadata of
        # the offset alone; without one, the log end offset (getLogEndOffsets)
        if current is None:
            return ResetRow(topic, partition, None, log.end,
                            note=f"no committed offset: the log end offset {log.end}")
        return ResetRow(topic, partition, now, current.offset)
    held = source.get(tp)
    if held is None:
        what = {TargetKind.FROM_BACKUP: "backup", TargetKind.FROM_FILE: "file"}.get(kind, f"group {target.group}")
        return ResetRow(topic, partition, now, None, note=f"not in the {what}: left as it is")
    row = _clamped(topic, partition, now, held.offset, log)
    if row.clamped:
        return row
    # Kept as the source has it: with its leader epoch and metadata (an undo restores them too).
    return ResetRow(topic, partition, now, held.offset, leader_epoch=held.leader_epoch, metadata=held.metadata)


def _clamped(topic: str, partition: int, current: int | None, requested: int, log: LogRange) -> ResetRow:
    """Kafka's checkOffsetsRange: above the log end offset → the log end offset; else below the log start
    offset → the log start offset; else as requested."""
    if requested > log.end:
        return ResetRow(topic, partition, current, log.end, requested,
                        f"clamped to the log end offset {log.end} (asked {requested})")
    if requested < log.start:
        return ResetRow(topic, partition, current, log.start, requested,
                        f"clamped to the log start offset {log.start} (asked {requested})")
    return ResetRow(topic, partition, current, requested)


# -- showing it


def plan_table(plan: ResetPlan) -> list[str]:
    """The plan as the CLI prints it: GROUP TOPIC PARTITION CURRENT NEW (and NOTE when any row has one);
    `-` for no committed offset, or for a partition left as it is."""
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT", "NEW"]
    notes = any(r.note or r.error for r in plan.rows)
    if notes:
        header.append("NOTE")
    table = [header]
    for r in plan.rows:
        line = [plan.group, r.topic, str(r.partition), _dash(r.current), _dash(r.new)]
        if notes:
            line.append(f"error: {r.error}" if r.error else r.note)
        table.append(line)
    return format_table(table)


def format_table(table: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart, no trailing spaces."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in table]


def plan_csv(plan: ResetPlan) -> str:
    """The plan as Kafka's tool exports it for one group (--export): `topic,partition,offset` lines, the
    format its --from-file reads back (CsvUtils.CsvRecordNoGroup). Rows left as they are are left out."""
    return "".join(f"{r.topic},{r.partition},{r.new}\n" for r in plan.rows if r.new is not None)


def _dash(value: int | None) -> str:
    return "-" if value is None else str(value)
