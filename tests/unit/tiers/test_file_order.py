"""The integration tier's files are handed out longest first (tests/support/file_order.py), so the two
xdist workers finish together instead of one running a long Spark file alone at the end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import file_order
import pytest
from file_order import longest_first


def test_the_longest_files_go_first_and_ties_keep_their_order() -> None:
    seconds = {"a.py": 5.0, "b.py": 90.0, "c.py": 5.0, "d.py": 30.0}
    assert longest_first(["a.py", "b.py", "c.py", "d.py"], seconds) == ["b.py", "d.py", "a.py", "c.py"]


def test_a_file_never_measured_counts_as_a_middling_one() -> None:
    seconds = {"short.py": 1.0, "middle.py": 10.0, "long.py": 100.0}
    assert longest_first(["new.py", "short.py", "long.py", "middle.py"], seconds) == [
        "long.py", "new.py", "middle.py", "short.py"]


def test_with_nothing_measured_the_collection_order_stays() -> None:
    assert longest_first(["x.py", "a.py", "m.py"], {}) == ["x.py", "a.py", "m.py"]


def test_the_version_matrix_does_not_record_its_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The matrix runs a file once per older version; its sum is not what the file costs the tier."""
    monkeypatch.setenv("KOO_CACHE", str(tmp_path))
    monkeypatch.setattr(file_order, "_measured", {"tests/integration/realkafka/test_x.py": 500.0})
    for markexpr, written in (("matrix", False), ("not unit", True)):
        session = SimpleNamespace(config=SimpleNamespace(getoption=lambda name, default=None, m=markexpr: m))
        file_order.pytest_sessionfinish(session)  # type: ignore[arg-type]
        assert file_order.cache_file().exists() is written, markexpr
