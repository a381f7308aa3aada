"""The analysis' reader sink (source._DecodingSink, fed by the vectorised parser's arrays) against the
reference's reading of the same records: one survivor per key with its timestamp, the records counted
once, and GroupMetadata history (facts.GROUP_METADATA_HISTORY) for the newest record and the older
records of its generation that decode, as reference.analyze_records keeps it."""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from analysis_reference import is_group_metadata_key

from kafka_offsets_model.codec import CodecError
from kafka_offsets_model.raw import RawRecord
from kafka_sandbox.synthetic import generate
from offset_expiry.facts import (
    GROUP_METADATA_HISTORY,
    fact_from_record,
    history_fact,
    same_generation_history,
)
from offset_expiry.recordset import ParsedRecords
from offset_expiry.recordset_arrays import from_parsed
from offset_expiry.source import BATCH_ROWS, _DecodingSink, _Sink


def _history(record: RawRecord) -> bool:
    try:
        return history_fact(fact_from_record(record.key, record.value), record.partition, record.offset) is not None
    except CodecError:
        return False


def _arrays(records: list[RawRecord]) -> ParsedRecords:
    return ParsedRecords(
        [r.offset for r in records], [r.timestamp for r in records], [r.key for r in records],
        [r.value for r in records], 0,
    )


@pytest.mark.parametrize("seed", [20240501, 7])
def test_the_sink_keeps_what_the_reference_keeps(seed: int) -> None:
    topic = generate(seed, groups=150, partitions=3, topic_partitions=3, commits=3, corrupt_fraction=0.02)
    older_total = 0
    for partition in sorted({r.partition for r in topic.records}):
        records = sorted((r for r in topic.records if r.partition == partition), key=lambda r: r.offset)
        sink = _DecodingSink(partition)
        half = len(records) // 2
        for chunk in (records[:half], records[half:]):  # two fetch responses
            sink.add_arrays(from_parsed(_arrays(chunk)))
        table = pa.Table.from_batches(list(sink.finish()))
        rows = table.to_pylist()

        assert sum(r["records"] for r in rows) == len(records)
        latest: dict[bytes, RawRecord] = {}
        versions: dict[bytes, list[RawRecord]] = {}
        for r in records:
            latest[r.key] = r
            if is_group_metadata_key(r.key):
                versions.setdefault(r.key, []).append(r)
        survivors = [r for r in rows if r["type"] != GROUP_METADATA_HISTORY]
        assert sorted(r["record_offset"] for r in survivors) == sorted(r.offset for r in latest.values())
        by_offset = {r.offset: r for r in records}
        for row in survivors:
            stamp = by_offset[row["record_offset"]].timestamp
            assert row["record_timestamp"] == (stamp if stamp >= 0 else None)

        older = [
            rs[i]
            for rs in versions.values()
            for i in same_generation_history([(r.offset, r.value) for r in rs])
            if _history(rs[i])
        ]
        newest = [max(rs, key=lambda r: r.offset) for rs in versions.values()]
        expected = {f"{partition}:{r.offset}" for r in older + [r for r in newest if _history(r)]}
        history = [r for r in rows if r["type"] == GROUP_METADATA_HISTORY]
        assert {r["member"] for r in history} == expected
        assert all(r["records"] == 0 for r in history)
        older_total += len(older)
    assert older_total  # the seeds do hold older records of a generation


def test_the_raw_sink_gives_every_record_as_fetched() -> None:
    """source._Sink (the raw read: analysis.execute_many's path for a partition too big for the readers to
    assemble) from the vectorised parser's arrays: every record once, in order, in batches of at most
    BATCH_ROWS, a record without a key with the empty key and a tombstone's value null."""
    n = BATCH_ROWS + 5
    offsets = list(range(100, 100 + n))
    timestamps = [1_700_000_000_000 + i for i in range(n)]
    keys = [None if i == 3 else b"k%d" % (i % 7) for i in range(n)]
    values = [None if i % 5 == 0 else b"v%d" % i for i in range(n)]
    batches = list(_Sink(4).add_arrays(from_parsed(ParsedRecords(offsets, timestamps, keys, values, 100 + n))))
    assert [b.num_rows for b in batches] == [BATCH_ROWS, 5]
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"partition": 4, "offset": o, "timestamp": t, "key": k or b"", "value": v, "records": 1}
        for o, t, k, v in zip(offsets, timestamps, keys, values, strict=True)
    ]
    assert list(_Sink(4).add_arrays(from_parsed(ParsedRecords([], [], [], [], 0)))) == []
