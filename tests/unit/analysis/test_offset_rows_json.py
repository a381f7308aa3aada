"""The report's JSON from the executors' files (OffsetRows.json_array_items: blocks of text, not a Python
call per line) is byte for byte what the line-by-line writer gives for the same rows."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from offset_expiry.pipeline import OffsetRows
from offset_expiry.report import write_json


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def json_lines(self) -> Iterator[str]:
        return iter(self.lines)


CASES = [
    [],
    [[]],
    [['{"a": 1}']],
    [['{"a": 1}', '{"b": 2}'], [], ['{"c": "x\\ny"}']],
    [[f'{{"a": {i}, "pad": "{"x" * 30}"}}' for i in range(200_000)], ['{"z": 1}']],  # over one 4 MB block
]


@pytest.mark.parametrize("files", CASES)
def test_blocks_equal_lines(tmp_path: Path, files: list[list[str]]) -> None:
    for i, lines in enumerate(files):
        (tmp_path / f"part-{i:05d}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    rows = OffsetRows(str(tmp_path))
    blocks, lines = io.StringIO(), io.StringIO()
    write_json(blocks, {"summary": {"n": 1}, "offsets": rows})
    write_json(lines, {"summary": {"n": 1}, "offsets": _Lines([line for f in files for line in f])})
    assert blocks.getvalue() == lines.getvalue()
    assert len(json.loads(blocks.getvalue())["offsets"]) == sum(len(f) for f in files)
    rows._cleanup.detach()  # tmp_path is pytest's
    assert os.path.isdir(tmp_path)
