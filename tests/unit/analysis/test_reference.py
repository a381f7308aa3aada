"""The reference analysis end to end on hand-built topics: compaction, replay, corrupt records, output."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from analysis_reference import analyze_records

from kafka_offsets_model.codec import (
    encode_key,
    encode_value,
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
)
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from offset_expiry.report import RESULT_FIELDS, write_json_atomically

D = 86_400_000
NOW = 1_700_000_000_000
RETENTION = 7 * D
POLICY = parse_policy({"rules": {"emptyGroupRetention": "2d", "standaloneRetention": "3d"}})


def topic(*kvs: tuple[bytes, bytes | None], partition: int = 0) -> list[RawRecord]:
    return [RawRecord(partition, 100 + i, NOW, k, v) for i, (k, v) in enumerate(kvs)]


def run(records: list[RawRecord], policy: Any = POLICY, **kwargs: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"now_ms": NOW, "retention_ms": RETENTION, "existing_topics": {"t", "u"}}
    args.update(kwargs)
    return analyze_records(records, policy, **args)


def empty_group(name: str, cst: int) -> tuple[bytes, bytes]:
    return group_metadata(
        name, protocol_type="consumer", generation=2, protocol=None, leader=None, current_state_timestamp=cst
    )


def test_output_shape_and_values() -> None:
    report = run(
        topic(
            offset_commit("g", "t", 0, offset=5, commit_timestamp=NOW - 9 * D),
            empty_group("g", NOW - 3 * D),
            offset_commit("solo", "u", 1, offset=7, commit_timestamp=NOW - D),
        ),
        snapshot={0: 103},
    )
    assert report["summary"] == {
        "recordsScanned": 3,
        "groups": 2,
        "offsets": 2,
        "candidates": 1,
        "byReason": {
            "EmptyGroup": 1,
            "UnsubscribedTopic": 0,
            "Standalone": 0,
            "ExpireTimestamp": 0,
            "DeletedTopic": 0,
            "StaleGroup": 0,
            "Protected": 0,
            "Excluded": 0,
            "ActiveSubscription": 0,
            "WithinRetention": 1,
            "UnknownSubscription": 0,
            "ShareGroup": 0,
        },
        "skippedRecords": 0,
        "snapshot": {"0": 103},
    }
    assert report["offsets"] == [
        {
            "group": "g",
            "groupType": "classic",
            "groupState": "Empty",
            "protocolType": "consumer",
            "topic": "t",
            "partition": 0,
            "offset": 5,
            "commitTimestamp": NOW - 9 * D,
            "brokerExpiresAt": NOW + 4 * D,
            "candidate": True,
            "reason": "EmptyGroup",
        },
        {
            "group": "solo",
            "groupType": "classic",
            "groupState": "Empty",
            "protocolType": "",
            "topic": "u",
            "partition": 1,
            "offset": 7,
            "commitTimestamp": NOW - D,
            "brokerExpiresAt": NOW + 6 * D,
            "candidate": False,
            "reason": "WithinRetention",
        },
    ]
    assert all(tuple(r) == RESULT_FIELDS for r in report["offsets"])
    only = run(
        topic(
            offset_commit("g", "t", 0, offset=5, commit_timestamp=NOW - 9 * D), empty_group("g", NOW - 3 * D)
        ),
        candidates_only=True,
    )
    assert [r["reason"] for r in only["offsets"]] == ["EmptyGroup"]


def test_latest_record_per_key_wins_and_tombstones_delete() -> None:
    report = run(
        topic(
            offset_commit("g", "t", 0, offset=1, commit_timestamp=NOW - 9 * D),
            offset_commit("g", "t", 0, offset=2, commit_timestamp=NOW - D),
            offset_commit("g", "t", 1, offset=3, commit_timestamp=NOW - D),
            offset_commit_tombstone("g", "t", 1),
            empty_group("g", NOW - 3 * D),
            group_metadata_tombstone("g"),
        )
    )
    # The group record is gone, so this is a simple group again; partition 1 was deleted.
    assert [(r["partition"], r["offset"], r["protocolType"], r["reason"]) for r in report["offsets"]] == [
        (0, 2, "", "WithinRetention")
    ]
    assert report["summary"]["groups"] == 1


def test_order_is_by_offset_not_by_arrival() -> None:
    records = topic(
        offset_commit("g", "t", 0, offset=2, commit_timestamp=NOW - D),
        offset_commit("g", "t", 0, offset=1, commit_timestamp=NOW - 9 * D),
    )
    records[0] = records[0]._replace(offset=500)  # arrives first, but is the newest
    assert [r["offset"] for r in run(records)["offsets"]] == [2]


def test_key_type_0_and_1_are_one_offset_and_replay_order_decides() -> None:
    legacy_key = encode_key("OffsetCommit", {"group": "g", "topic": "t", "partition": 0}, 0)
    legacy_value = encode_value("OffsetCommit", {"offset": 9, "metadata": "", "commitTimestamp": NOW - D}, 0)
    assert run(topic((legacy_key, legacy_value), offset_commit_tombstone("g", "t", 0)))["offsets"] == []
    newer = run(topic(offset_commit("g", "t", 0, offset=1, commit_timestamp=NOW), (legacy_key, legacy_value)))
    assert [r["offset"] for r in newer["offsets"]] == [9]


def test_corrupt_records_are_counted_and_hide_nothing_current() -> None:
    good = offset_commit("g", "t", 0, offset=1, commit_timestamp=NOW - D)
    bad_value = (good[0], b"\x00\x03\x00")
    report = run(
        topic(
            good,
            (b"\xff\xff\x00", b"junk"),
            (b"\x00\x63\x00\x01g", b"\x00\x00"),  # record type 99
            offset_commit("h", "t", 0, offset=1, commit_timestamp=NOW - D),
            (offset_commit("h", "t", 0, offset=1, commit_timestamp=0)[0], b"\x00\x03\x00"),
        )
    )
    # h's newest value is unreadable: its offset is unknown, not the stale older value.
    assert [r["group"] for r in report["offsets"]] == ["g"]
    assert report["summary"]["skippedRecords"] == 3
    # A bad value superseded by a good one does not count: it is not current.
    assert run(topic(bad_value, good))["summary"]["skippedRecords"] == 0


def test_deleted_topics_need_the_topic_list() -> None:
    records = topic(offset_commit("solo", "gone", 0, offset=1, commit_timestamp=NOW))
    policy = parse_policy({"rules": {"deletedTopics": "Delete"}})
    assert run(records, policy)["offsets"][0]["reason"] == "DeletedTopic"
    assert run(records, policy, existing_topics=None)["offsets"][0]["reason"] == "WithinRetention"


def test_atomic_json_write(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    report = run(topic(offset_commit("g", "t", 0, offset=5, commit_timestamp=NOW)))
    write_json_atomically(str(target), report)
    assert json.loads(target.read_text()) == report
    assert os.listdir(tmp_path) == ["results.json"]

    class Interrupted(Exception):
        pass

    def exploding() -> Any:
        yield report["offsets"][0]
        raise Interrupted

    with pytest.raises(Interrupted):
        write_json_atomically(str(target), {"summary": {}, "offsets": exploding()})
    assert os.listdir(tmp_path) == ["results.json"]
    assert json.loads(target.read_text()) == report
    empty = {"summary": {"a": 1}, "offsets": []}
    write_json_atomically(str(target), empty)
    assert json.loads(target.read_text()) == empty


def test_read_planning_splits_big_partitions_and_packs_ranges_evenly() -> None:
    from offset_expiry.source import Snapshot, plan_ranges, plan_tasks

    snapshot = Snapshot({0: (0, 250), 1: (100, 100), 2: (10, 60), 3: (0, 90)})
    ranges = plan_ranges(snapshot, 100)
    assert [(r.partition, r.start, r.end) for r in ranges] == [
        (0, 0, 100),
        (0, 100, 200),
        (0, 200, 250),
        (2, 10, 60),
        (3, 0, 90),
    ]
    tasks = plan_tasks(snapshot, 100, 2)
    assert sorted(t.size for t in tasks) == [190, 200]

    def spans(rs: object) -> list[tuple[int, int, int]]:
        return sorted((r.partition, r.start, r.end) for r in rs)  # type: ignore[attr-defined]

    assert spans(r for t in tasks for r in t.ranges) == spans(ranges)
    assert [t.ranges for t in plan_tasks(snapshot, 100, 0)] == [(r,) for r in ranges]
    assert len(plan_tasks(snapshot, 100, 50)) == 5


def test_an_empty_topic_is_read_as_one_empty_task() -> None:
    """Spark calls read() with a bare InputPartition when a source plans none; one empty task avoids it."""
    from offset_expiry.source import ReadTask, Snapshot, plan_tasks, read_task

    snapshot = Snapshot({0: (0, 0), 1: (5, 5)})
    assert plan_tasks(snapshot, 100, 4) == [ReadTask(())]
    assert list(read_task("127.0.0.1:1", "__consumer_offsets", ReadTask(()))) == []  # no connection made
