"""Times as the API shows them (RFC 3339, UTC, seconds; milliseconds only where a moment has them) and back
to epoch milliseconds. The one place the format is written: every layer formats and parses times here."""

from __future__ import annotations

import datetime

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"  # metav1.Time's format: UTC, whole seconds


def iso(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 (whole seconds)."""
    return iso_of(datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC))


def iso_of(moment: datetime.datetime) -> str:
    """An aware datetime as RFC 3339 in UTC (whole seconds)."""
    return moment.astimezone(datetime.UTC).strftime(RFC3339)


def now_iso() -> str:
    """Now, as the API's timestamps say it."""
    return iso_of(datetime.datetime.now(datetime.UTC))


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 with the milliseconds when there are any (a reset to a moment says the
    moment asked for, to the millisecond)."""
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    whole = iso_of(moment)
    return whole[:-1] + f".{ms % 1000:03d}Z" if ms % 1000 else whole


def parse_iso(text: str | None) -> int | None:
    """RFC 3339 (or ISO 8601 without a zone, taken as UTC) as epoch milliseconds; None if it is none."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
