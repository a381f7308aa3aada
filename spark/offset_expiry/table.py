"""The human-readable report: one line per (group, topic, reason), partitions folded into ranges,
broker expiry as a time relative to the analysis' `now`. KIND says what the group is, since the rules differ
by kind: `classic` (a consumer group of the classic protocol; `classic/connect` etc. for other protocol
types), `simple` (offsets committed without a group: standalone consumers, admin tools), `consumer`
(KIP-848), `streams` (KIP-1071), `share` (KIP-932)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kafka_offsets_model.durations import UNITS_MS, format_duration_ms
from kafka_offsets_model.policy import plural

HEADERS = ("GROUP", "KIND", "TOPIC", "PARTITIONS", "STATE", "CANDIDATE", "REASON", "BROKER EXPIRY")


def kind(group_type: str, protocol_type: str, state: str = "Empty") -> str:
    """The KIND column: a group's type, with the protocol type where it tells more (module docstring). A
    classic group with members and protocol type "" is not simple (rules.GroupView.is_simple): `classic/""`."""
    if group_type != "classic":
        return group_type
    if not protocol_type:
        return "simple" if state == "Empty" else 'classic/""'
    return "classic" if protocol_type == "consumer" else f"classic/{protocol_type}"


def relative(at_ms: int | None, now_ms: int) -> str:
    """'in 3d4h', '2h5m ago', 'now', or 'never' (two most significant units)."""
    if at_ms is None:
        return "never"
    delta = at_ms - now_ms
    if delta == 0:
        return "now"
    text = _two_units(abs(delta))
    return f"in {text}" if delta > 0 else f"{text} ago"


def _two_units(ms: int) -> str:
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        n, ms = divmod(ms, UNITS_MS[unit])
        if n or parts:
            parts.append(f"{n}{unit}" if n else "")
        if len(parts) == 2:
            break
    text = "".join(parts)
    return text or "<1s"


def fold_partitions(partitions: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    ordered = sorted(set(partitions))
    spans: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        spans.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(spans)


def render(summary: Mapping[str, Any], offsets: Iterable[Mapping[str, Any]], now_ms: int) -> str:
    rows: dict[tuple[str, str, str, bool, str, str], dict[str, Any]] = {}
    for r in offsets:
        group_kind = kind(r["groupType"], r["protocolType"], r["groupState"])
        key = (r["group"], r["topic"], r["reason"], r["candidate"], r["groupState"], group_kind)
        row = rows.setdefault(key, {"partitions": [], "expiry": []})
        row["partitions"].append(r["partition"])
        row["expiry"].append(r["brokerExpiresAt"])
    lines = [HEADERS]
    ordered = sorted(rows.items(), key=lambda kv: (not kv[0][3], kv[0][0], kv[0][1], kv[0][2]))
    for (group, topic, reason, candidate, state, group_kind), row in ordered:
        known = [e for e in row["expiry"] if e is not None]
        expiry = relative(min(known), now_ms) if known else "never"
        if known and len(known) < len(row["expiry"]):
            expiry += " (some never)"
        lines.append(
            (
                group,
                group_kind,
                topic,
                fold_partitions(row["partitions"]),
                state,
                "yes" if candidate else "no",
                reason,
                expiry,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    if len(lines) == 1:
        text = ["(no offsets to list)"]
    return "\n".join([*text, "", *summary_lines(summary)]) + "\n"


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    by_reason = summary["byReason"]
    counted = ", ".join(f"{reason} {n}" for reason, n in by_reason.items() if n)
    partitions = len(summary["snapshot"])
    candidates, offsets, groups = summary["candidates"], summary["offsets"], summary["groups"]
    scanned, skipped = summary["recordsScanned"], summary["skippedRecords"]
    lines = [
        f"{candidates} deletion {plural(candidates, 'candidate')} among {offsets} committed "
        f"{plural(offsets, 'offset')} of {groups} {plural(groups, 'group')}"
        + (f" ({counted})" if counted else ""),
        f"scanned {scanned} {plural(scanned, 'record')} in {partitions} {plural(partitions, 'partition')} of "
        f"__consumer_offsets; {skipped} undecodable {plural(skipped, 'record')} skipped",
    ]
    if summary.get("now") is not None and summary.get("brokerRetentionMs") is not None:
        now = datetime.fromtimestamp(summary["now"] / 1000, UTC).isoformat(timespec="seconds")
        lines.append(
            f"as of {now.replace('+00:00', 'Z')}, with a broker offset retention of "
            f"{format_duration_ms(summary['brokerRetentionMs'])}"
        )
    if summary.get("brokerCheckIntervalMs") is not None:
        assumed = (
            " (Kafka's default; the broker did not say)"
            if summary.get("brokerCheckIntervalSource") == "default"
            else ""
        )
        lines.append(
            "BROKER EXPIRY is when an offset becomes due; the broker deletes it at its next cleanup run, "
            f"within {format_duration_ms(summary['brokerCheckIntervalMs'])} after that "
            f"(offsets.retention.check.interval.ms{assumed})"
        )
    return lines
