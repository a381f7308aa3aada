"""The integration tier's files are handed out longest first (tests/support/file_order.py), so the two
xdist workers finish together instead of one running a long Spark file alone at the end."""

from __future__ import annotations

from file_order import longest_first, records_seconds


def test_the_longest_files_go_first_and_ties_keep_their_order() -> None:
    seconds = {"a.py": 5.0, "b.py": 90.0, "c.py": 5.0, "d.py": 30.0}
    assert longest_first(["a.py", "b.py", "c.py", "d.py"], seconds) == ["b.py", "d.py", "a.py", "c.py"]


def test_a_file_never_measured_counts_as_a_middling_one() -> None:
    seconds = {"short.py": 1.0, "middle.py": 10.0, "long.py": 100.0}
    assert longest_first(["new.py", "short.py", "long.py", "middle.py"], seconds) == [
        "long.py", "new.py", "middle.py", "short.py"]


def test_with_nothing_measured_the_collection_order_stays() -> None:
    assert longest_first(["x.py", "a.py", "m.py"], {}) == ["x.py", "a.py", "m.py"]


def test_the_version_matrix_does_not_record_its_seconds() -> None:
    assert not records_seconds("matrix")
    assert records_seconds("not unit") and records_seconds("")
