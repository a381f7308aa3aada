"""What the operator keeps of an analysis report (offset_expiry.report's JSON shape): the summary, the
candidate offsets (to propose deletions), the offsets of protected groups (for keep-alive) and the ids of
every group with an offset (to warn about group patterns that match none). Every other offset is dropped
while reading, so a report of millions of offsets costs the operator little memory:
report.write_json puts one offset per line, and `read_report` parses it line by line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_offsets_model.rules import CANDIDATE_REASONS, OffsetReason

_HEAD = '{"summary": '
_OFFSETS = ', "offsets": ['


class ReportError(ValueError):
    """The results are not an analysis report (a truncated file, a foreign ConfigMap)."""


@dataclass(frozen=True)
class ScannedOffset:
    group: str
    group_type: str
    group_state: str
    protocol_type: str
    topic: str
    partition: int
    offset: int
    commit_timestamp: int
    broker_expires_at: int | None
    candidate: bool
    reason: str

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class Report:
    summary: Mapping[str, Any]
    candidates: tuple[ScannedOffset, ...]
    protected: tuple[ScannedOffset, ...]
    groups: frozenset[str] = frozenset()  # every group with a committed offset in the report

    @property
    def candidates_by_reason(self) -> dict[str, int]:
        """Counts of the candidate reasons only (the summary also counts the reasons offsets are kept)."""
        by_reason = self.summary.get("byReason") or {}
        reasons = {o.reason for o in self.candidates}
        return {r: int(by_reason.get(r, 0)) for r in sorted(set(CANDIDATE_REASONS) | reasons)}


def wanted(row: Mapping[str, Any]) -> bool:
    """The rows the operator needs: candidates and protected groups' offsets."""
    return bool(row.get("candidate")) or row.get("reason") == OffsetReason.PROTECTED


def scanned_offset(row: Mapping[str, Any]) -> ScannedOffset:
    try:
        expires = row.get("brokerExpiresAt")
        return ScannedOffset(
            group=str(row["group"]),
            group_type=str(row.get("groupType") or "classic"),
            group_state=str(row.get("groupState") or ""),
            protocol_type=str(row.get("protocolType") or ""),
            topic=str(row["topic"]),
            partition=int(row["partition"]),
            offset=int(row["offset"]),
            commit_timestamp=int(row.get("commitTimestamp") or 0),
            broker_expires_at=None if expires is None else int(expires),
            candidate=bool(row.get("candidate")),
            reason=str(row.get("reason") or ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"an offset entry is malformed ({exc!s}): {str(dict(row))[:200]}") from None


def from_rows(summary: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Report:
    if not isinstance(summary, Mapping) or "recordsScanned" not in summary:
        raise ReportError("the report has no summary")
    candidates: list[ScannedOffset] = []
    protected: list[ScannedOffset] = []
    groups: set[str] = set()
    for row in rows:
        group = row.get("group") if isinstance(row, Mapping) else None
        if group is not None:
            groups.add(str(group))
        if not wanted(row):
            continue
        offset = scanned_offset(row)
        (candidates if offset.candidate else protected).append(offset)
    return Report(summary, tuple(candidates), tuple(protected), frozenset(groups))


def read_report(lines: Iterable[str]) -> Report:
    """Parse a report from its lines: streaming when it has write_json's one-offset-per-line layout,
    else as one JSON document."""
    it = iter(lines)
    first = next(it, "")
    head = first.rstrip("\n")
    if head.startswith(_HEAD) and head.endswith(_OFFSETS):
        try:
            summary = json.loads(head[len(_HEAD) : -len(_OFFSETS)])
        except json.JSONDecodeError:
            raise ReportError("the report's summary is not JSON") from None
        return from_rows(summary, _offset_lines(it))
    try:
        doc = json.loads(first + "".join(it))
    except json.JSONDecodeError as exc:
        raise ReportError(f"the results are not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, Mapping):
        raise ReportError("the results are not a JSON object")
    return from_rows(doc.get("summary") or {}, doc.get("offsets") or [])


def _offset_lines(lines: Iterator[str]) -> Iterator[Mapping[str, Any]]:
    closed = False
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text in ("]}", "]}\n"):
            closed = True
            break
        text = text.removesuffix(",")
        try:
            yield json.loads(text)
        except json.JSONDecodeError:
            raise ReportError("an offset line of the report is not JSON (truncated file?)") from None
    if not closed:
        raise ReportError("the report ends early (truncated file?)")

