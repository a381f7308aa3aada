"""`reset --from-file`: the CSV Kafka's tool --export writes, read as ConsumerGroupCommand.parseResetPlan
reads it (CsvUtils.CsvRecordNoGroup, CsvRecordWithGroup), every bad line refused with its number; and the
plan of --to-current, as prepareOffsetsToReset computes it (decisions/reset_plan.py)."""

from __future__ import annotations

import pytest

from kafka_offset_operator.decisions.reset_file import ResetFileError, parse_reset_file
from kafka_offset_operator.decisions.reset_plan import (
    LogRange,
    ResetTarget,
    TargetKind,
    parse_target,
    plan_reset,
)
from kafka_offset_operator.model.offsets import Committed
from kafka_offsets_model.errors import SpecError


def test_the_export_of_one_group_is_read_with_crlf_and_a_trailing_newline() -> None:
    text = "orders,0,5\r\norders,1,7\r\nbilling-events,12,0\n\n"
    assert parse_reset_file(text, "any") == {("orders", 0): Committed(5, -1, ""), ("orders", 1): Committed(7, -1, ""),
                                             ("billing-events", 12): Committed(0, -1, "")}


def test_the_export_of_several_groups_gives_only_the_groups_own_lines() -> None:
    text = 'billing,orders,0,5\n"a,b",orders,0,9\nbilling,orders,1,7\n'
    assert parse_reset_file(text, "billing") == {("orders", 0): Committed(5, -1, ""), ("orders", 1): Committed(7, -1, "")}
    assert parse_reset_file(text, "a,b") == {("orders", 0): Committed(9, -1, "")}  # quoted as Jackson quotes it
    with pytest.raises(ResetFileError, match=r"no line of group other \(the file has groups a,b, billing\)"):
        parse_reset_file(text, "other")


@pytest.mark.parametrize(("text", "message"), [
    ("", "the file has no offsets"),
    ("topic,partition,offset\n", "line 1: the partition 'partition' is not a whole number"),
    ("orders,0,5\norders,1\n", "line 2: 2 columns, where line 1 has 3"),
    ("orders,0,5\n\nbilling,orders,1,7\n", "line 3: 4 columns, where line 1 has 3"),
    ("orders,0\n", "line 1: 2 columns; want topic,partition,offset or group,topic,partition,offset"),
    ("orders,0,-1\n", "line 1: the offset '-1' is not a whole number from 0"),
    ("orders,x,1\n", "line 1: the partition 'x' is not a whole number"),
    ("orders,2147483648,1\n", "line 1: the partition 2147483648 is larger than Kafka's 2147483647"),
    ("or ders,0,1\n", "line 1: 'or ders' is not a Kafka topic name"),
    ("orders,0,1\norders,0,2\n", "line 2: partition orders-0 is listed a second time"),
    (",orders,0,1\n", "line 1: the group is empty"),
    ('"orders,0,1\n', "line 1: not CSV"),
])
def test_a_bad_line_is_named(text: str, message: str) -> None:
    with pytest.raises(ResetFileError) as caught:
        parse_reset_file(text, "billing")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_current_and_from_file_are_the_clis_targets_only() -> None:
    """An OffsetReset's spec.target keeps its targets (fromBackup undoes; the resource reads no files)."""
    with pytest.raises(SpecError, match="is not a target; use one of earliest, latest, datetime"):
        parse_target({"current": True})
    with pytest.raises(SpecError, match="is not a target"):
        parse_target({"fromFile": "plan.csv"})
    every = tuple(TargetKind)
    assert parse_target({"current": True}, "target", every) == ResetTarget(TargetKind.CURRENT)
    assert parse_target({"fromFile": "plan.csv"}, "target", every).file == "plan.csv"
    with pytest.raises(SpecError, match="must be true"):
        parse_target({"current": 1}, "target", every)


def test_to_current_keeps_the_committed_offset_unclamped_and_takes_the_log_end_without_one() -> None:
    """prepareOffsetsToReset (--to-current): the committed offset as it is, no checkOffsetsRange, a new
    OffsetAndMetadata of the offset alone; partitions without one get getLogEndOffsets' answer."""
    committed = {("t", 0): Committed(3, 7, "meta"), ("t", 1): Committed(50, 2, "")}
    ranges = {("t", 0): LogRange(5, 10), ("t", 1): LogRange(0, 20), ("t", 2): LogRange(4, 9)}
    plan = plan_reset("g", ResetTarget(TargetKind.CURRENT), ranges, committed, ranges)
    assert [(r.tp, r.current, r.new, r.leader_epoch, r.metadata) for r in plan.rows] == [
        (("t", 0), 3, 3, -1, ""),  # below the log start: kept (Kafka does not range-check --to-current)
        (("t", 1), 50, 50, -1, ""),  # above the log end: kept
        (("t", 2), None, 9, -1, ""),  # no committed offset: the log end offset
    ]
    assert plan.rows[2].note == "no committed offset: the log end offset 9" and plan.changes == 1
