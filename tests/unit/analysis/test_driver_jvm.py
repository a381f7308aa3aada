"""A run's driver JVM is chosen from the snapshot's size (issue 22, session.driver_jvm_options): a small run's
JVM has only the C1 compiler and the serial collector (its fixed cost is mostly C2 and G1 otherwise), a big
one the JVM's defaults (its per-row work is C2's code); the user's own JVM options win."""

from __future__ import annotations

import pytest

from offset_expiry.session import SMALL_RUN_JVM, SMALL_RUN_RECORDS, driver_jvm_options


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        (0, SMALL_RUN_JVM),  # an empty topic
        (671, SMALL_RUN_JVM),
        (SMALL_RUN_RECORDS, SMALL_RUN_JVM),
        (SMALL_RUN_RECORDS + 1, ()),
        (50_000_000, ()),
        (None, ()),  # not known: a session kept for many runs
    ],
)
def test_small_runs_get_c1_and_the_serial_collector(records: int | None, expected: tuple[str, ...]) -> None:
    assert driver_jvm_options(records) == expected


def test_the_small_jvm_is_c1_only_with_the_serial_collector() -> None:
    assert SMALL_RUN_JVM == ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


@pytest.mark.parametrize(
    "user",
    [
        "-XX:TieredStopAtLevel=4",
        "-Xmx2g -XX:+UseG1GC",
        "-XX:+UseParallelGC",
        "-XX:-TieredCompilation",
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # the test suite's SPARK_SUBMIT_OPTS: not twice
    ],
)
def test_the_users_choice_of_compiler_or_collector_stands(user: str) -> None:
    assert driver_jvm_options(10, user) == ()


def test_other_user_options_leave_the_choice_to_the_size() -> None:
    assert driver_jvm_options(10, "-Xmx2g -Dfoo=bar -XX:+UseCompressedOops") == SMALL_RUN_JVM
