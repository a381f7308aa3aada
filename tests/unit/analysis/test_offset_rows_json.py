"""The report's JSON from the executors' files (OffsetRows.write_array_items: byte ranges copied, not a
Python call per line) is byte for byte what the line-by-line writer gives for the same rows, into a file
(os.copy_file_range) and into a text stream alike."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from offset_expiry.pipeline import OffsetRows, RunFile, merge_ranges
from offset_expiry.report import write_json, write_json_atomically


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def json_lines(self) -> Iterator[str]:
        return iter(self.lines)


def _item(line: str) -> str:
    """A result line as write_rows has the executors write it: the array item with its indent and comma."""
    return "  " + line + ",\n"


CASES = [
    [],
    [[]],
    [['{"a": 1}']],
    [['{"a": 1}', '{"b": 2}'], [], ['{"c": "x\\ny"}']],
    [[f'{{"a": {i}, "pad": "{"x" * 30}"}}' for i in range(200_000)], ['{"z": 1}']],  # over one 4 MB block
]


def _both(tmp_path: Path, rows: OffsetRows, lines: list[str]) -> tuple[str, str, str]:
    """The report through a text stream, through a file, and line by line."""
    text, expected = io.StringIO(), io.StringIO()
    write_json(text, {"summary": {"n": 1}, "offsets": rows})
    target = tmp_path / "out" / "report.json"
    target.parent.mkdir(exist_ok=True)
    write_json_atomically(str(target), {"summary": {"n": 1}, "offsets": rows})
    write_json(expected, {"summary": {"n": 1}, "offsets": _Lines(lines)})
    return text.getvalue(), target.read_text(encoding="utf-8"), expected.getvalue()


@pytest.mark.parametrize("files", CASES)
def test_copied_bytes_equal_lines(tmp_path: Path, files: list[list[str]]) -> None:
    for i, lines in enumerate(files):
        (tmp_path / f"part-{i:05d}").write_text("".join(map(_item, lines)), encoding="utf-8")
    rows = OffsetRows(str(tmp_path))
    rows._cleanup.detach()  # tmp_path is pytest's
    every = [line for f in files for line in f]
    assert list(rows.json_lines()) == every
    text, copied, expected = _both(tmp_path, rows, every)
    assert text == expected
    assert copied == expected
    assert len(json.loads(copied)["offsets"]) == len(every)
    assert os.path.isdir(tmp_path)


def _row(group: str, topic: str, partition: int) -> str:
    return json.dumps(
        {"group": group, "groupType": "classic", "topic": topic, "partition": partition}, separators=(",", ":"),
        ensure_ascii=False,
    )


def test_sorted_runs_merge_by_group(tmp_path: Path) -> None:
    """Each file sorted on its own, no group in two files (what write_rows has the executors write):
    read back in (group, topic, partition) order, whatever the escapes, non-ASCII names or group sizes
    (a group longer than RunFile.group_end's first window)."""
    import random

    rng = random.Random(13)
    names = [f"g-{rng.randrange(10**6):06d}" for _ in range(3000)] + ['q"uote', "back\\slash", "é-acute", "\t-tab", "z"]
    rows = sorted(
        (g, f"t{t}", p)
        for g in set(names)
        for t in range(rng.randrange(1, 3) if g != "g-big" else 2)
        for p in range(rng.randrange(1, 4))
    )
    rows = sorted(rows + [("g-big", f"t{t:04d}", p) for t in range(700) for p in range(3)])  # ~150 KB
    files: list[list[str]] = [[] for _ in range(4)]
    home = {g: rng.randrange(4) for g in set(names) | {"g-big"}}
    for g, t, p in rows:
        files[home[g]].append(_row(g, t, p))
    for i, lines in enumerate(files):
        (tmp_path / f"part-{i:05d}").write_text("".join(map(_item, lines)), encoding="utf-8")
    merged = OffsetRows(str(tmp_path), runs=True)
    merged._cleanup.detach()  # tmp_path is pytest's
    got = list(merged.json_lines())
    assert got == [_row(*r) for r in rows]
    text, copied, expected = _both(tmp_path, merged, got)
    assert text == expected
    assert copied == expected
    run_files = [RunFile(path) for path in merged.files()]
    ranges = list(merge_ranges(run_files))
    assert len(ranges) < len(rows) / 2  # slices of groups, not lines
    for f in run_files:
        f.close()
