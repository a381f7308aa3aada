"""Helpers for the group tests: the records `dump` reads back. The clients themselves (GroupConsumer) are in
tests/support/kafka_clients.py, KIP-848 groups to seed in tests/support/brokers.py."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from kafka_offset_operator.cli import main


def dump(bootstrap: str) -> list[dict[str, Any]]:
    """`kafka-offset-operator dump --from-beginning --no-follow`: every record of __consumer_offsets. The
    command runs in this process (its own process costs a Python start and kafka-python's import per call;
    test_sandbox_offsets_topic.py runs it as a process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["dump", "--bootstrap-server", bootstrap, "--from-beginning", "--no-follow"])
    assert code == 0, code
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def record_shape(record: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a record for comparisons: type, key fields and whether it is a tombstone."""
    return (record["type"], *record["key"].values(), "tombstone" if record["value"] is None else "value")


def group_records(records: list[dict[str, Any]], group: str) -> list[dict[str, Any]]:
    """One group's records in log order (a group's records all live in one partition)."""
    mine = [r for r in records if r["key"].get("group", r["key"].get("GroupId")) == group]
    return sorted(mine, key=lambda r: r["offset"])

