"""The shuffle by group before assemble_for (pipeline.analyze_facts_many) has partitions sized by the snapshot's
records (pipeline.assemble_partitions): each is assembled whole in one Python worker. Before issue 22's fix their
number was the session's shuffle partitions (max(2 x cores, 4)), so that worker grew with the topic."""

from __future__ import annotations

import pytest

from kafka_offsets_model.errors import InputError
from offset_expiry.pipeline import (
    ASSEMBLE_RECORDS,
    ASSEMBLE_RECORDS_CONF,
    assemble_partitions,
    assemble_record_budget,
)


@pytest.mark.parametrize(
    ("records", "floor", "budget", "expected"),
    [
        (0, 4, 250_000, 4),  # an empty topic: the session's partitions, as before
        (-3, 4, 250_000, 4),
        (20_000, 4, 250_000, 4),  # the test suite's topics: the session's partitions, as before
        (1_000_000, 4, 250_000, 4),  # 1M on two cores: unchanged
        (1_000_001, 4, 250_000, 5),
        (5_000_000, 4, 250_000, 20),  # 5M: 250k records a Python worker, not 1.25M
        (50_000_000, 4, 250_000, 200),
        (5_000_000, 64, 250_000, 64),  # a big cluster's own partition count stands
        (10, 0, 3, 4),
        (0, 0, 3, 1),  # never no partition
    ],
)
def test_partitions_hold_at_most_about_the_budget_each(records: int, floor: int, budget: int, expected: int) -> None:
    assert assemble_partitions(records, floor, budget) == expected


def test_no_partition_is_over_the_budget_whatever_the_topic() -> None:
    for records in (1, 249_999, 250_001, 1_234_567, 5_000_000, 50_000_000, 10**9):
        n = assemble_partitions(records, 4)
        assert records / n <= ASSEMBLE_RECORDS
        assert n == 4 or records / (n - 1) > ASSEMBLE_RECORDS  # and no more partitions than that needs


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError):
        assemble_partitions(10, 4, 0)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_the_budget_defaults_when_not_set(value: str | None) -> None:
    assert assemble_record_budget(value) == ASSEMBLE_RECORDS


def test_the_budget_setting_is_records() -> None:
    assert assemble_record_budget("100000") == 100_000
    assert assemble_record_budget(" 1 ") == 1


@pytest.mark.parametrize("value", ["0", "-1", "250k", "1.5", "lots"])
def test_a_bad_budget_setting_names_the_setting(value: str) -> None:
    with pytest.raises(InputError) as raised:
        assemble_record_budget(value)
    assert str(raised.value) == f"{ASSEMBLE_RECORDS_CONF}: a number of records above 0, not {value!r}"
