"""Outside local mode the report is sorted into partitions sized by the report (pipeline.report_partitions), each
one task's result that the executor and the driver hold whole: a few MB, however big the report. Before issue
22's fix their number was the session's shuffle partitions (four on two cores, fewer after Spark's adaptive
execution merged them), 65-131 MB each at 1M distinct records, and a 1 GB executor died of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import cast

import pytest
from pyspark.sql import DataFrame

from kafka_offsets_model.errors import InputError
from kafka_offsets_model.rules import GroupType, OffsetReason
from offset_expiry.pipeline import (
    LINE_BYTES_BESIDES_NAMES,
    REPORT_PARTITION_BYTES,
    REPORT_PARTITION_BYTES_CONF,
    report_partition_budget,
    report_partitions,
    stream_lines,
)
from offset_expiry.report import RESULT_FIELDS

MB = 1 << 20


@pytest.mark.parametrize(
    ("estimated", "budget", "expected"),
    [
        (0, 8 * MB, 1),  # an empty report still has one partition to stream
        (-5, 8 * MB, 1),
        (1, 8 * MB, 1),
        (8 * MB, 8 * MB, 1),
        (8 * MB + 1, 8 * MB, 2),
        (260 * MB, 8 * MB, 33),  # 1M distinct records (245 MB of lines, estimated from names over)
        (1300 * MB, 8 * MB, 163),  # 5M
        (10_000, 1024, 10),
    ],
)
def test_partitions_hold_about_the_budget_each(estimated: int, budget: int, expected: int) -> None:
    assert report_partitions(estimated, budget) == expected


def test_no_partition_is_over_the_budget_whatever_the_report() -> None:
    for estimated in (1, 7 * MB, 64 * MB, 245 * MB, 1223 * MB, 12 * 1024 * MB):
        n = report_partitions(estimated)
        assert estimated / n <= REPORT_PARTITION_BYTES
        assert n == 1 or estimated / (n - 1) > REPORT_PARTITION_BYTES  # and no more partitions than that needs


def test_the_default_budget_is_a_few_megabytes() -> None:
    # Small enough that a 512 MB executor (Spark's smallest) holds a result and its serialised copy many
    # times over; large enough that 5M records (1.2 GB of lines) stream in under 200 jobs.
    assert 4 * MB <= REPORT_PARTITION_BYTES <= 16 * MB


@pytest.mark.parametrize("value", [None, "", "  "])
def test_the_budget_defaults_when_not_set(value: str | None) -> None:
    assert report_partition_budget(value) == REPORT_PARTITION_BYTES


def test_the_budget_setting_is_bytes() -> None:
    assert report_partition_budget("65536") == 65536
    assert report_partition_budget(" 1 ") == 1


@pytest.mark.parametrize("value", ["0", "-1", "8MB", "1.5", "lots"])
def test_a_bad_budget_setting_names_the_setting(value: str) -> None:
    with pytest.raises(InputError) as raised:
        report_partition_budget(value)
    assert str(raised.value) == f"{REPORT_PARTITION_BYTES_CONF}: a number of bytes above 0, not {value!r}"


def test_the_line_estimate_is_over_a_line_of_the_longest_values() -> None:
    """The estimate is the names' bytes plus LINE_BYTES_BESIDES_NAMES: that constant covers a report line
    (as write_rows has Spark's to_json write it, with its indent and comma) whose other fields are at their
    longest: the enums' longest names, a classic group's longest state, numbers at their widest."""
    longest = {
        "group": "",
        "groupType": max((t.value for t in GroupType), key=len),
        "groupState": "CompletingRebalance",
        "protocolType": "consumer-protocol",
        "topic": "",
        "partition": -(2**31),
        "offset": -(2**63),
        "commitTimestamp": -(2**63),
        "brokerExpiresAt": -(2**63),
        "candidate": False,
        "reason": max((r.value for r in OffsetReason), key=len),
    }
    assert tuple(longest) == RESULT_FIELDS
    line = "  " + json.dumps(longest, separators=(",", ":")) + ",\n"
    assert len(line.encode()) <= LINE_BYTES_BESIDES_NAMES


class _RowsRDD:
    """A DataFrame's `.rdd` as stream_lines uses it: toLocalIterator over rows with a `value`."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.prefetch: bool | None = None

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[dict[str, str]]:
        self.prefetch = prefetchPartitions
        return iter([{"value": v} for v in self.values])


class _Lines:
    """The report's lines as a DataFrame whose own toLocalIterator is the one that must not be used."""

    def __init__(self, values: list[str]) -> None:
        self.rdd = _RowsRDD(values)

    def toLocalIterator(self, prefetchPartitions: bool = False) -> Iterator[dict[str, str]]:
        raise AssertionError("DataFrame.toLocalIterator keeps every partition it delivered in the driver (Spark 4.3)")


def test_the_report_streams_through_the_rdd_not_the_dataframe() -> None:
    """On a cluster the report reaches the driver through the RDD's toLocalIterator: the DataFrame's kept every
    delivered partition in the driver's 1 GB heap, and 5M distinct records (about 1.2 GB of report) failed with
    TaskResultLost where the RDD's held the driver at 34 MB of byte arrays (docs/performance.md)."""
    lines = _Lines(["  {\"group\": \"a\"},", "  {\"group\": \"b\"},"])
    assert list(stream_lines(cast(DataFrame, lines))) == ["  {\"group\": \"a\"},", "  {\"group\": \"b\"},"]
    assert lines.rdd.prefetch is True  # the next partition computed while this one is written
