"""The CSV file of `reset --from-file`, read as Apache Kafka's `kafka-consumer-groups.sh --from-file` reads
the file its `--export` writes (ConsumerGroupCommand.ConsumerGroupService.parseResetPlan and
exportOffsetsToCsv, CsvUtils.CsvRecordNoGroup / CsvRecordWithGroup; docs/kafka-semantics.md):

- one record a line, no header: `topic,partition,offset` (the export of one group), or
  `group,topic,partition,offset` (the export of several groups);
- which of the two is decided by the first line: if it reads as `topic,partition,offset` (and the command
  resets one group, as ours always does), every line is read so; otherwise every line is read with the group
  column, and only the lines of the group being reset count.

Stricter than Kafka's tool, and checked before any call: every line must be well formed (the tool stops at
the first bad line with a Jackson stack trace, or silently reads a malformed first line as the other
format); offsets are whole numbers from 0 (the tool would clamp a negative one to the log start); a
partition listed twice is refused (the tool keeps the last); blank lines and a trailing CR are ignored.
"""

from __future__ import annotations

import csv
import re

from ..model.offsets import TP, Committed

# Kafka's legal topic names (org.apache.kafka.common.internals.Topic.validate).
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class ResetFileError(ValueError):
    """A line of the file that cannot be read; the message names the line (1-based)."""


def parse_reset_file(text: str, group: str) -> dict[TP, Committed]:
    """The offsets the file gives `group`. Raises ResetFileError naming the first bad line, or saying that
    the file (with a group column) has no line of `group`."""
    lines = [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), 1)]
    lines = [(n, line) for n, line in lines if line.strip()]
    if not lines:
        raise ResetFileError("the file has no offsets (lines of topic,partition,offset)")
    records = [(n, _fields(line, n)) for n, line in lines]
    width = len(records[0][1])
    if width not in (3, 4):
        raise ResetFileError(f"line {records[0][0]}: {width} columns; want topic,partition,offset "
                             "or group,topic,partition,offset")
    out: dict[TP, Committed] = {}
    groups: set[str] = set()
    for n, fields in records:
        if len(fields) != width:
            want = "topic,partition,offset" if width == 3 else "group,topic,partition,offset"
            raise ResetFileError(f"line {n}: {len(fields)} columns, where line {records[0][0]} has {width} "
                                 f"({want})")
        if width == 4:
            owner, fields = fields[0], fields[1:]
            if not owner:
                raise ResetFileError(f"line {n}: the group is empty")
            groups.add(owner)
            if owner != group:
                continue
        topic, partition, offset = fields
        if not _TOPIC.match(topic) or topic in (".", ".."):
            raise ResetFileError(f"line {n}: {topic!r} is not a Kafka topic name")
        tp = (topic, _number(partition, n, "partition", _INT32_MAX))
        if tp in out:
            raise ResetFileError(f"line {n}: partition {topic}-{tp[1]} is listed a second time")
        out[tp] = Committed(_number(offset, n, "offset", _INT64_MAX), -1, "")
    if width == 4 and not out:
        shown = ", ".join(sorted(groups)[:5]) + (", ..." if len(groups) > 5 else "")
        raise ResetFileError(f"no line of group {group} (the file has groups {shown})")
    return out


def _fields(line: str, n: int) -> list[str]:
    """The CSV fields of one line (a group id with a comma is quoted, as Jackson's CSV writer quotes it)."""
    try:
        rows = list(csv.reader([line], strict=True))
    except csv.Error as exc:
        raise ResetFileError(f"line {n}: not CSV: {exc}") from None
    return [f.strip() for f in rows[0]] if rows else []


def _number(text: str, n: int, what: str, high: int) -> int:
    if not text.isascii() or not text.isdigit():
        raise ResetFileError(f"line {n}: the {what} {text!r} is not a whole number from 0")
    value = int(text)
    if value > high:
        raise ResetFileError(f"line {n}: the {what} {value} is larger than Kafka's {high}")
    return value
