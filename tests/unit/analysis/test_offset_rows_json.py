"""The report's JSON from the executors' files (OffsetRows.json_array_items: blocks of text, not a Python
call per line) is byte for byte what the line-by-line writer gives for the same rows."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from offset_expiry.pipeline import Chunk, OffsetRows, merge_runs
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


def _row(group: str, topic: str, partition: int) -> str:
    return json.dumps(
        {"group": group, "groupType": "classic", "topic": topic, "partition": partition}, separators=(",", ":"),
        ensure_ascii=False,
    )


def test_sorted_runs_merge_by_group(tmp_path: Path) -> None:
    """Each file sorted on its own, no group in two files (what write_rows has the executors write):
    read back in (group, topic, partition) order, whatever the blocks, escapes or non-ASCII names."""
    import random

    rng = random.Random(13)
    names = [f"g-{rng.randrange(10**6):06d}" for _ in range(3000)] + ['q"uote', "back\\slash", "é-acute", "\t-tab", "z"]
    rows = sorted(
        (g, f"t{t}", p) for g in set(names) for t in range(rng.randrange(1, 3)) for p in range(rng.randrange(1, 4))
    )
    files: list[list[str]] = [[] for _ in range(4)]
    home = {g: rng.randrange(4) for g in set(names)}
    for g, t, p in rows:
        files[home[g]].append(_row(g, t, p))
    for i, lines in enumerate(files):
        (tmp_path / f"part-{i:05d}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    merged = OffsetRows(str(tmp_path), runs=True)
    merged._cleanup.detach()  # tmp_path is pytest's
    got = list(merged.json_lines())
    assert got == [_row(*r) for r in rows]
    blocks, lines = io.StringIO(), io.StringIO()
    write_json(blocks, {"summary": {}, "offsets": merged})
    write_json(lines, {"summary": {}, "offsets": _Lines(got)})
    assert blocks.getvalue() == lines.getvalue()
    # Small blocks: slices cross block boundaries.
    runs = [iter([_chunk(f[i : i + 7]) for i in range(0, len(f), 7)]) for f in files]
    assert b"\n".join(merge_runs(runs)).decode().split("\n") == got


def _chunk(lines: list[str]) -> Chunk:
    chunk = Chunk.of("".join(line + "\n" for line in lines).encode())
    assert chunk is not None
    return chunk
