"""Parsing a reset's target and scope (decisions/reset_plan.py): every target, and every bad field named."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions.reset_plan import (
    ResetScope,
    ResetTarget,
    TargetKind,
    TopicScope,
    parse_scope,
    parse_target,
)
from kafka_offsets_model.errors import SpecError


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"earliest": True}, ResetTarget(TargetKind.EARLIEST)),
        ({"latest": True}, ResetTarget(TargetKind.LATEST)),
        ({"datetime": "2026-01-31T12:00:00Z"}, ResetTarget(TargetKind.DATETIME, datetime_ms=1769860800000)),
        ({"datetime": "2026-01-31T13:00:00.250+01:00"}, ResetTarget(TargetKind.DATETIME, datetime_ms=1769860800250)),
        ({"datetime": "2026-01-31T12:00:00.123999z"}, ResetTarget(TargetKind.DATETIME, datetime_ms=1769860800123)),
        ({"duration": "1h30m"}, ResetTarget(TargetKind.DURATION, duration_ms=5_400_000)),
        ({"shiftBy": -10}, ResetTarget(TargetKind.SHIFT_BY, shift_by=-10)),
        ({"shiftBy": 0}, ResetTarget(TargetKind.SHIFT_BY, shift_by=0)),
        ({"offset": 42}, ResetTarget(TargetKind.OFFSET, offset=42)),
        ({"fromBackup": "offset-backup-od-delete-0123456789"},
         ResetTarget(TargetKind.FROM_BACKUP, backup="offset-backup-od-delete-0123456789")),
        ({"fromBackup": "team-a/offset-backup-x"},
         ResetTarget(TargetKind.FROM_BACKUP, backup="offset-backup-x", backup_namespace="team-a")),
        ({"fromGroup": "billing-v1"}, ResetTarget(TargetKind.FROM_GROUP, group="billing-v1")),
        ({"offset": 7, "shiftBy": None}, ResetTarget(TargetKind.OFFSET, offset=7)),  # null is "not given"
    ],
)
def test_every_target_parses(raw: dict[str, Any], expected: ResetTarget) -> None:
    assert parse_target(raw) == expected


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({}, "spec.target", "exactly one"),
        ({"earliest": True, "latest": True}, "spec.target", "earliest and latest"),
        ({"toEarliest": True}, "spec.target.toEarliest", "not a target"),
        ({"earliest": False}, "spec.target.earliest", "must be true"),
        ({"latest": "yes"}, "spec.target.latest", "must be true"),
        ({"datetime": "2026-01-31"}, "spec.target.datetime", "needs a date, a time and an offset"),
        ({"datetime": "2026-01-31T12:00:00"}, "spec.target.datetime", "needs a date, a time and an offset"),
        ({"datetime": "yesterday"}, "spec.target.datetime", "not an RFC 3339 time"),
        ({"datetime": "1960-01-01T00:00:00Z"}, "spec.target.datetime", "before 1970"),
        ({"datetime": 1769860800000}, "spec.target.datetime", "RFC 3339"),
        ({"duration": "PT1H"}, "spec.target.duration", "duration like"),
        ({"duration": "0s"}, "spec.target.duration", "longer than 0"),
        ({"duration": "4000d"}, "spec.target.duration", "longer than 3650d"),
        ({"shiftBy": "5"}, "spec.target.shiftBy", "not a whole number"),
        ({"shiftBy": 1.5}, "spec.target.shiftBy", "not a whole number"),
        ({"shiftBy": True}, "spec.target.shiftBy", "not a whole number"),
        ({"shiftBy": 2**63}, "spec.target.shiftBy", "outside"),
        ({"offset": -1}, "spec.target.offset", "outside 0.."),
        ({"fromBackup": ""}, "spec.target.fromBackup", "name of a backup"),
        ({"fromBackup": "Not_A_Name"}, "spec.target.fromBackup", "not a ConfigMap name"),
        ({"fromBackup": "Bad NS/x"}, "spec.target.fromBackup", "not a namespace name"),
        ({"fromGroup": " spaced"}, "spec.target.fromGroup", "leading/trailing spaces"),
        ({"fromGroup": 3}, "spec.target.fromGroup", "consumer group id"),
        ({"fromGroup": "x" * 32768}, "spec.target.fromGroup", "32767 bytes"),
    ],
)
def test_a_bad_target_names_its_field(raw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_target(raw)
    assert err.value.field == field and words in err.value.problem, str(err.value)


def test_not_a_mapping_and_another_path() -> None:
    with pytest.raises(SpecError) as err:
        parse_target(["earliest"])  # type: ignore[arg-type]
    assert err.value.field == "spec.target"
    with pytest.raises(SpecError) as err:
        parse_target({"offset": -3}, "reset.target")
    assert err.value.field == "reset.target.offset"


def test_timestamps_of_the_time_targets() -> None:
    assert parse_target({"datetime": "2026-01-31T12:00:00Z"}).timestamp_ms(0) == 1769860800000
    assert parse_target({"duration": "1m"}).timestamp_ms(1_000_000) == 940_000
    assert parse_target({"duration": "1m"}).timestamp_ms(1_000) == 0  # never before the epoch
    assert parse_target({"offset": 3}).timestamp_ms(1_000) is None


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"earliest": True}, "the earliest offset"),
        ({"datetime": "2026-01-31T12:00:00.5Z"}, "at or after 2026-01-31T12:00:00.500Z"),
        ({"duration": "90m"}, "at or after 1h30m ago"),
        ({"shiftBy": -5}, "shifted by -5"),
        ({"offset": 9}, "offset 9"),
        ({"fromBackup": "ns/b"}, "backup ns/b"),
        ({"fromGroup": "g2"}, "group g2"),
    ],
)
def test_targets_describe_themselves(raw: dict[str, Any], words: str) -> None:
    assert words in parse_target(raw).describe()


def test_scopes() -> None:
    assert parse_scope({"allTopics": True}) == ResetScope(all_topics=True)
    assert parse_scope({"topics": [{"name": "orders"}, {"name": "payments", "partitions": [2, 0, 2]}]}) == ResetScope(
        False, (TopicScope("orders", None), TopicScope("payments", (0, 2))))


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({}, "spec.topics", "is required (or allTopics"),
        ({"allTopics": False}, "spec.allTopics", "must be true"),
        ({"allTopics": True, "topics": [{"name": "a"}]}, "spec.topics", "exclude each other"),
        ({"topics": []}, "spec.topics", "non-empty list"),
        ({"topics": "orders"}, "spec.topics", "non-empty list"),
        ({"topics": ["orders"]}, "spec.topics[0]", "must be an object"),
        ({"topics": [{"name": "or ders"}]}, "spec.topics[0].name", "not a Kafka topic name"),
        ({"topics": [{"name": ".."}]}, "spec.topics[0].name", "not a Kafka topic name"),
        ({"topics": [{"name": "a"}, {"name": "a"}]}, "spec.topics[1].name", "listed twice"),
        ({"topics": [{"name": "a", "partitions": []}]}, "spec.topics[0].partitions", "non-empty list"),
        ({"topics": [{"name": "a", "partitions": [0, -1]}]}, "spec.topics[0].partitions[1]", "outside"),
        ({"topics": [{"name": "a", "partitions": ["0"]}]}, "spec.topics[0].partitions[0]", "not a whole number"),
    ],
)
def test_a_bad_scope_names_its_field(raw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_scope(raw)
    assert err.value.field == field and words in err.value.problem, str(err.value)


def test_kafkas_tool_forms_are_the_clis_only() -> None:
    """kafka-consumer-groups.sh's --to-datetime without a zone is UTC (Utils.getDateTime appends "Z"), and its
    --to-offset takes any long (checkOffsetsRange clamps it); a resource's spec.target stays strict."""
    from kafka_offset_operator.decisions.reset_plan import TargetKind

    cli = tuple(TargetKind)
    zoned = parse_target({"datetime": "2026-01-31T12:00:00.250Z"}, "target", cli)
    assert parse_target({"datetime": "2026-01-31T12:00:00.250"}, "target", cli, kafka_forms=True) == zoned
    assert zoned.describe() == "the first offset at or after 2026-01-31T12:00:00.250Z"
    with pytest.raises(SpecError, match="needs a date, a time and an offset"):
        parse_target({"datetime": "2026-01-31T12:00:00.250"})
    assert parse_target({"offset": -1}, "target", cli, kafka_forms=True).offset == -1
    with pytest.raises(SpecError, match="outside 0"):
        parse_target({"offset": -1})
