"""The analysis' output: one result per committed offset, and the summary (issue 4's JSON shape).

```
{"summary": {"recordsScanned", "groups", "offsets", "candidates", "byReason": {reason: count},
             "skippedRecords", "snapshot": {partition: endOffset}},
 "offsets": [{"group", "groupType", "groupState", "protocolType", "topic", "partition", "offset",
              "commitTimestamp", "brokerExpiresAt", "candidate", "reason"}]}
```

Timestamps are milliseconds since the epoch; `brokerExpiresAt` is null when the broker will not expire
the offset while the group stays in its current state. `byReason` lists every reason of the closed set,
kept and candidate alike, with 0 for those that did not occur, so dashboards see a fixed set of keys.
Offsets are sorted by group, topic and partition.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from kafka_offsets_model.rules import CANDIDATE_REASONS, OffsetReason

RESULT_FIELDS = (
    "group",
    "groupType",
    "groupState",
    "protocolType",
    "topic",
    "partition",
    "offset",
    "commitTimestamp",
    "brokerExpiresAt",
    "candidate",
    "reason",
)
_CANDIDATE_VALUES = frozenset(r.value for r in CANDIDATE_REASONS)


def summary(
    *,
    records_scanned: int,
    groups: int,
    reasons: Mapping[str, int],
    skipped_records: int,
    snapshot: Mapping[int, int],
) -> dict[str, Any]:
    """`reasons`: how many offsets got each reason."""
    by_reason = {r.value: int(reasons.get(r.value, 0)) for r in OffsetReason}
    candidates = sum(n for r, n in by_reason.items() if r in _CANDIDATE_VALUES)
    return {
        "recordsScanned": records_scanned,
        "groups": groups,
        "offsets": sum(by_reason.values()),
        "candidates": candidates,
        "byReason": by_reason,
        "skippedRecords": skipped_records,
        "snapshot": {str(p): int(end) for p, end in sorted(snapshot.items())},
    }


def write_json_atomically(path: str, report: Mapping[str, Any]) -> None:
    """Temp file in the same directory, fsync, rename: an interrupted run leaves the old file or none."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".analysis-", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            write_json(out, report)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(out: Any, report: Mapping[str, Any]) -> None:
    """One offset per line, so large reports stay readable and diffable."""
    out.write('{"summary": ')
    out.write(json.dumps(report["summary"], sort_keys=False))
    out.write(', "offsets": [')
    separator = "\n  "
    offsets = report["offsets"]
    items = getattr(offsets, "write_array_items", None)  # pipeline.OffsetRows: the executors' bytes
    if items is not None:
        out.write("\n]}\n" if items(out) else "]}\n")
        return
    json_lines = getattr(offsets, "json_lines", None)
    lines = json_lines() if json_lines is not None else (json.dumps(result) for result in offsets)
    for line in lines:
        out.write(separator)
        out.write(line)
        separator = ",\n  "
    out.write("]}\n" if separator == "\n  " else "\n]}\n")
