"""The longest test files first (a pytest plugin registered by tests/conftest.py).

The integration tier runs in two pytest-xdist workers with `--dist loadfile`: xdist hands out whole files in
collection order, so a long file collected last (the Spark suites sort last by name) leaves one worker busy
for minutes after the other ran out of work. Handing out the longest files first (the classic
longest-processing-time rule) ends both workers at nearly the same time.

How long a file takes is what it took last time: every run records each file's seconds (setup, call and
teardown of its tests) into `~/.cache/kafka-offset-operator/test-file-seconds.json`, merged, so a run of a few
files updates only those. Where that cache is missing (a fresh CI machine), the committed
`tests/support/test-file-seconds.json` stands in (`python tests/support/file_order.py` refreshes it from the
cache). A file in neither counts as a middling one. Tests inside a file keep their order.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

COMMITTED = Path(__file__).with_name("test-file-seconds.json")
ROOT = Path(__file__).resolve().parents[2]


def cache_file() -> Path:
    base = os.environ.get("KOO_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator")
    return Path(base) / "test-file-seconds.json"


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def known_seconds() -> dict[str, float]:
    """Each file's last measured seconds: the committed table, overridden by this machine's cache."""
    return {**_read(COMMITTED), **_read(cache_file())}


def longest_first(files: list[str], seconds: dict[str, float]) -> list[str]:
    """The files (distinct, in collection order) sorted longest first; an unknown file counts as the median."""
    default = statistics.median(seconds.values()) if seconds else 0.0
    return sorted(files, key=lambda f: -seconds.get(f, default))


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    order = {f: i for i, f in enumerate(longest_first(list(dict.fromkeys(_file_of(i.nodeid) for i in items)),
                                                        known_seconds()))}
    items.sort(key=lambda item: order[_file_of(item.nodeid)])  # stable: a file's tests keep their order


def records_seconds(markexpr: str) -> bool:
    """Whether a run with this `-m` expression records its files' seconds: not the version matrix, which runs a
    file once per older version (its sum is not what the file costs the integration tier)."""
    return "matrix" not in markexpr


_measured: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or not _measured:
        return  # an xdist worker: the controller sees every report and writes once
    if not records_seconds(session.config.getoption("markexpr", "") or ""):
        return
    path = cache_file()
    merged = {**_read(path), **{f: round(s, 1) for f, s in _measured.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the order falls back to the committed table


if __name__ == "__main__":
    COMMITTED.write_text(json.dumps(dict(sorted(_read(cache_file()).items())), indent=1) + "\n")
    print(f"{COMMITTED.relative_to(ROOT)}: {len(_read(COMMITTED))} files")
