"""Keep-alive's re-commit intents (docs/keep-alive.md, "A crash between a re-commit and its audit line"): the
pure decision that tells from the group's `__consumer_offsets` records whether an interrupted re-commit of
unchanged offsets reached Kafka, and the intent record's round trip through the backup document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_offset_operator import cli
from kafka_offset_operator.adapters.keepalive_store import RecommitIntents
from kafka_offset_operator.decisions.keepalive import recommit_finding
from kafka_offset_operator.model.backups import (
    INTENTS_KEY,
    Action,
    BackupRecord,
    RecommitIntent,
    Requester,
    from_document,
    intent_entries,
    intents_of,
    to_document,
)
from kafka_offset_operator.model.group_log import GroupRecord, RecordKind
from kafka_offset_operator.model.offsets import Committed

AT = 1_700_000_000_000
T0, T1 = ("orders", 0), ("orders", 1)
INTENDED = {T0: Committed(3, -1, ""), T1: Committed(4, -1, "")}


def commit(position: int, tp: tuple[str, int], offset: int) -> GroupRecord:
    return GroupRecord(position, AT, RecordKind.COMMIT, "OffsetCommit", tp, offset, AT)


def test_commit_records_of_the_recorded_offsets_after_the_intent_confirm_the_re_commit() -> None:
    finding = recommit_finding(INTENDED, [commit(10, T0, 3), commit(11, T1, 4)])
    assert finding.unknown is None
    assert finding.found == INTENDED


def test_no_commit_record_since_the_intent_means_it_was_never_applied() -> None:
    finding = recommit_finding(INTENDED, [GroupRecord(10, AT, RecordKind.CLASSIC, "GroupMetadata")])
    assert finding.found == {}
    assert finding.unknown is None


def test_only_partitions_whose_record_holds_the_recorded_offset_count() -> None:
    """A commit of another offset is the group's own (not this re-commit); a tombstone is no commit; a
    partition outside the intent is not this re-commit's."""
    records = [commit(10, T0, 7), GroupRecord(11, AT, RecordKind.OFFSET_TOMBSTONE, "OffsetCommit", T1),
               commit(12, ("other", 0), 3), commit(13, T1, 4)]
    assert recommit_finding(INTENDED, records).found == {T1: INTENDED[T1]}


def test_records_that_cannot_be_read_leave_the_outcome_unknown() -> None:
    finding = recommit_finding(INTENDED, None, "the records of __consumer_offsets-3 since the intent were removed")
    assert finding.found == {}
    assert finding.unknown == "the records of __consumer_offsets-3 since the intent were removed"
    assert recommit_finding(INTENDED, None).unknown


def intent_record(intents: list[RecommitIntent]) -> BackupRecord:
    return BackupRecord("r", Action.RECOMMIT, "cluster", "kafka:9092", "billing", {},
                        Requester("ConsumerGroupOffsetPolicy", "kafka", "guard", "uid", "intent"),
                        "2026-11-27T11:00:00Z", "2026-12-04T11:00:00Z", extra={INTENTS_KEY: intent_entries(intents)})


def test_an_intent_record_keeps_each_group_its_offsets_its_position_and_its_state() -> None:
    intents = [RecommitIntent("r", "billing", INTENDED, {"partition": 3, "offset": 120}),
               RecommitIntent("r", "batch", {T0: Committed(9, 2, "m")}, None, "Done")]
    record = intent_record(intents)
    back = from_document(to_document(record))
    assert back == record
    assert intents_of(back) == intents


def test_restore_refuses_an_intent_record_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Nothing changed but commit times: there is nothing to restore (before any Kafka call: a closed port)."""
    path = tmp_path / "intent.json"
    path.write_text(json.dumps(to_document(intent_record([RecommitIntent("r", "billing", INTENDED, None)]))))
    code = cli.main(["restore", "--file", str(path), "--bootstrap-server", "127.0.0.1:1"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "nothing to restore" in err, err


class _Store:
    """The backup store's contract as RecommitIntents uses it: a write keeps what is stored under the name."""

    def __init__(self) -> None:
        self.records: dict[str, BackupRecord] = {}

    def write(self, record: BackupRecord) -> BackupRecord:
        return self.records.setdefault(record.name, record)

    def update(self, namespace: str, record: BackupRecord) -> BackupRecord:
        self.records[record.name] = record
        return record

    def find(self, namespace: str, labels: dict[str, str]) -> list[BackupRecord]:
        return list(self.records.values())


def test_two_passes_in_one_second_keep_a_record_each() -> None:
    """Two keep-alive passes of one policy within the same second (a restart, a second replica) each keep
    their own settled intent: the later pass must not take over the earlier one's record and replace its
    intent for the same group."""
    store = _Store()
    policy = {"metadata": {"namespace": "kafka", "name": "guard", "uid": "uid-guard"}}
    for _ in range(2):
        intents = RecommitIntents(store, policy, "cluster", "kafka:9092", 3600.0)  # type: ignore[arg-type]
        name = intents.intend("g", INTENDED, None)
        intents.settle(name, "g")
    assert len(store.records) == 2
    assert [[i.state for i in intents_of(r)] for r in store.records.values()] == [["Done"], ["Done"]]
