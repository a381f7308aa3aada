"""plan_reset against Kafka's rules (ConsumerGroupCommand.ConsumerGroupService.prepareOffsetsToReset,
checkOffsetsRange, getLogTimestampOffsets; docs/kafka-semantics.md "Offset resets"): each target, each
clamping rule, and the partitions a scope covers."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions.reset_plan import (
    LogRange,
    ResetRefused,
    ResetRow,
    check_source,
    parse_scope,
    parse_target,
    partitions_to_reset,
    plan_csv,
    plan_reset,
    plan_table,
)
from kafka_offset_operator.model.offsets import Committed

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)
# a-0: records 10..100 (start 10, end 100); a-1: an empty log at 50; b-0: 0..20.
LOGS = {A0: LogRange(10, 100), A1: LogRange(50, 50), B0: LogRange(0, 20)}
COMMITTED = {A0: Committed(40, 3, "m"), B0: Committed(20)}


def plan(target: dict[str, Any], partitions: list[tuple[str, int]] | None = None, **kw: Any) -> dict[tuple[str, int], ResetRow]:
    got = plan_reset("g", parse_target(target), partitions or [A0, A1, B0], kw.pop("committed", COMMITTED), LOGS, **kw)
    return {r.tp: r for r in got.rows}


def news(rows: dict[tuple[str, int], ResetRow]) -> dict[tuple[str, int], int | None]:
    return {tp: r.new for tp, r in rows.items()}


def test_earliest_and_latest_take_the_log_range_as_it_is() -> None:
    assert news(plan({"earliest": True})) == {A0: 10, A1: 50, B0: 0}
    assert news(plan({"latest": True})) == {A0: 100, A1: 50, B0: 20}
    rows = plan({"earliest": True})
    assert (rows[A0].current, rows[A1].current, rows[A0].note, rows[A0].requested) == (40, None, "", None)


@pytest.mark.parametrize(("asked", "new", "note"), [
    (55, 55, ""),
    (10, 10, ""),  # the log start offset itself is valid
    (100, 100, ""),  # the log end offset itself is valid (the next record to come)
    (101, 100, "clamped to the log end offset 100 (asked 101)"),
    (3, 10, "clamped to the log start offset 10 (asked 3)"),
])
def test_offset_is_clamped_to_the_log_range(asked: int, new: int, note: str) -> None:
    row = plan({"offset": asked}, [A0])[A0]
    assert (row.new, row.note, row.clamped, row.requested) == (new, note, bool(note), asked if note else None)


def test_the_end_is_checked_first_as_checkOffsetsRange_does() -> None:
    """A log whose start is past its end cannot happen, but the order of Kafka's checks is the rule: an offset
    above the end becomes the end, whatever the start says."""
    got = plan_reset("g", parse_target({"offset": 9}), [A0], {}, {A0: LogRange(8, 5)})
    assert got.rows[0].new == 5


def test_shift_by_moves_from_the_committed_offset_and_is_clamped() -> None:
    assert news(plan({"shiftBy": -5}, [A0, B0])) == {A0: 35, B0: 15}
    rows = plan({"shiftBy": 100}, [A0, B0])
    assert (rows[A0].new, rows[A0].note) == (100, "clamped to the log end offset 100 (asked 140)")
    assert (rows[B0].new, rows[B0].requested) == (20, 120)
    assert plan({"shiftBy": -35}, [A0])[A0].new == 10
    assert plan({"shiftBy": 0}, [A0])[A0].new == 40


def test_shift_by_without_a_committed_offset_refuses_the_whole_plan() -> None:
    got = plan_reset("g", parse_target({"shiftBy": 1}), [A0, A1], COMMITTED, LOGS)
    assert [r.tp for r in got.errors] == [A1] and got.rows[1].new is None
    assert got.refusal == "a-1: no committed offset to shift by +1 (Kafka's tool refuses this too)"


def test_datetime_takes_the_lookup_unclamped_and_no_record_means_the_log_end() -> None:
    found = {A0: 70, A1: -1, B0: None}
    rows = plan({"datetime": "2026-01-31T12:00:00Z"}, by_timestamp=found)
    assert news(rows) == {A0: 70, A1: 50, B0: 20}
    assert rows[A0].note == "" and rows[A1].note == "no record at or after the time: the log end offset 50"
    assert rows[B0].note == "no record at or after the time: the log end offset 20"
    # ListOffsets never answers outside the range; if it did, the tool would not clamp it either.
    assert plan({"duration": "1h"}, [A0], by_timestamp={A0: 5})[A0].new == 5


def test_duration_is_the_same_lookup() -> None:
    assert news(plan({"duration": "1h"}, by_timestamp={A0: 11, A1: 50, B0: 0})) == {A0: 11, A1: 50, B0: 0}
    assert plan({"duration": "1h"}, [B0])[B0].new == 20  # no lookup given: no record, the log end


def test_from_backup_restores_offsets_with_their_epoch_and_metadata_or_clamps_them() -> None:
    backup = {A0: Committed(30, 7, "from-backup"), B0: Committed(25, 2, "x")}
    got = plan_reset("g", parse_target({"fromBackup": "b"}), [A0, A1, B0], {}, LOGS, source=backup)
    rows = {r.tp: r for r in got.rows}
    assert (rows[A0].new, rows[A0].leader_epoch, rows[A0].metadata, rows[A0].current) == (30, 7, "from-backup", None)
    assert (rows[B0].new, rows[B0].leader_epoch, rows[B0].metadata) == (20, -1, "")  # clamped: a plain offset
    assert rows[B0].note == "clamped to the log end offset 20 (asked 25)"
    assert (rows[A1].new, rows[A1].note, rows[A1].error) == (None, "not in the backup: left as it is", None)
    assert got.to_commit == {A0: Committed(30, 7, "from-backup"), B0: Committed(20)} and got.refusal is None


def test_from_group_copies_the_other_groups_offsets_clamped() -> None:
    other = {A0: Committed(5), A1: Committed(50)}
    rows = plan({"fromGroup": "g2"}, source=other)
    assert news(rows) == {A0: 10, A1: 50, B0: None}
    assert rows[B0].note == "not in the group g2: left as it is"


def test_a_partition_without_a_log_range_does_not_exist() -> None:
    got = plan_reset("g", parse_target({"earliest": True}), [A0, ("gone", 0)], COMMITTED, LOGS)
    assert got.refusal == "gone-0: the partition does not exist (UNKNOWN_TOPIC_OR_PARTITION)"
    assert ("gone", 0) not in got.to_commit


def test_to_commit_and_changes() -> None:
    got = plan_reset("g", parse_target({"latest": True}), [A0, B0], COMMITTED, LOGS)
    assert got.to_commit == {A0: Committed(100), B0: Committed(20)}  # b-0 unchanged, committed all the same
    assert got.changes == 1
    assert got.before == {A0: Committed(40, 3, "m"), B0: Committed(20)}  # as read: epoch and metadata kept
    partial = plan_reset("g", parse_target({"fromGroup": "o"}), [A0, A1, B0], COMMITTED, LOGS, source={A1: Committed(50)})
    assert partial.before == {}  # a-0 and b-0 stay as they are; a-1 had no offset to keep


def test_partitions_a_scope_covers() -> None:
    topics = {"a": [0, 1], "b": [0]}
    earliest = parse_target({"earliest": True})
    assert partitions_to_reset(parse_scope({"allTopics": True}), earliest, COMMITTED, topics) == [A0, B0]
    assert partitions_to_reset(parse_scope({"topics": [{"name": "a"}]}), earliest, COMMITTED, topics) == [A0, A1]
    listed = parse_scope({"topics": [{"name": "a", "partitions": [1, 7]}, {"name": "b"}]})
    assert partitions_to_reset(listed, earliest, COMMITTED, topics) == [A1, ("a", 7), B0]
    with pytest.raises(ResetRefused, match="topic c does not exist"):
        partitions_to_reset(parse_scope({"topics": [{"name": "c"}]}), earliest, COMMITTED, topics)


def test_a_source_decides_what_all_topics_means() -> None:
    """An undo of a deletion: the group has no offsets left, the backup has them all."""
    backup = {A0: Committed(30), A1: Committed(50)}
    undo = parse_target({"fromBackup": "b"})
    assert partitions_to_reset(parse_scope({"allTopics": True}), undo, {}, {}, backup) == [A0, A1]
    assert partitions_to_reset(parse_scope({"topics": [{"name": "a"}]}), undo, {}, {}, backup) == [A0, A1]
    assert partitions_to_reset(parse_scope({"topics": [{"name": "a", "partitions": [1, 2]}]}), undo, {}, {},
                               backup) == [A1, ("a", 2)]
    assert partitions_to_reset(parse_scope({"topics": [{"name": "zzz"}]}), undo, {}, {}, backup) == []


def test_the_table_and_the_csv() -> None:
    got = plan_reset("billing", parse_target({"offset": 150}), [A0, A1], COMMITTED, LOGS)
    assert plan_table(got) == [
        "GROUP    TOPIC  PARTITION  CURRENT  NEW  NOTE",
        "billing  a      0          40       100  clamped to the log end offset 100 (asked 150)",
        "billing  a      1          -        50   clamped to the log end offset 50 (asked 150)",
    ]
    assert plan_csv(got) == "a,0,100\na,1,50\n"
    plain = plan_reset("g", parse_target({"earliest": True}), [B0], COMMITTED, LOGS)
    assert plan_table(plain) == ["GROUP  TOPIC  PARTITION  CURRENT  NEW", "g      b      0          20       0"]
    refused = plan_reset("g", parse_target({"shiftBy": 1}), [A1], COMMITTED, LOGS)
    assert plan_table(refused)[1].endswith("-        -    error: no committed offset to shift by +1 (Kafka's tool refuses this too)")


def test_sources_that_cannot_be_meant_are_refused() -> None:
    copy = parse_target({"fromGroup": "g"})
    with pytest.raises(ResetRefused, match="names group g itself"):
        check_source("g", copy, "c1")
    check_source("g", parse_target({"fromGroup": "other"}), "c1")
    undo = parse_target({"fromBackup": "b"})
    check_source("g", undo, "c1", "g", "c1")
    check_source("g", undo, "c1", "g", None)  # a backup without a cluster id is taken as it is
    with pytest.raises(ResetRefused, match="holds offsets of group h, not of g; to copy another group's"):
        check_source("g", undo, "c1", "h", "c1")
    with pytest.raises(ResetRefused, match="taken on Kafka cluster c2, this is cluster c1"):
        check_source("g", undo, "c1", "g", "c2")
    check_source("g", parse_target({"earliest": True}), "c1", "h", "c2")  # no source: nothing to check


def test_a_refusal_names_the_field_it_is_about_whatever_its_message_says() -> None:
    """The OffsetReset's condition (and whether a new spec is needed) follows the field, not words in the
    message: a backup whose name holds "topic" is still a refused spec.target.fromBackup."""
    with pytest.raises(ResetRefused) as other_group:
        check_source("g", parse_target({"fromBackup": "topic-orders-backup"}), "c1", "h", "c1")
    assert other_group.value.field == "spec.target.fromBackup"
    with pytest.raises(ResetRefused) as other_cluster:
        check_source("g", parse_target({"fromBackup": "b"}), "c1", "g", "c2")
    assert other_cluster.value.field == "spec.target.fromBackup"
    with pytest.raises(ResetRefused) as itself:
        check_source("topics", parse_target({"fromGroup": "topics"}), "c1")
    assert itself.value.field == "spec.target.fromGroup"
    with pytest.raises(ResetRefused) as missing:
        partitions_to_reset(parse_scope({"topics": [{"name": "c"}]}), parse_target({"earliest": True}), COMMITTED,
                            {"a": [0]})
    assert missing.value.field == "spec.topics"
