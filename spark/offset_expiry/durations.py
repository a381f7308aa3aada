"""Durations as people write them in specs and flags: "7d", "36h", "1d12h", "90m", "500ms".

One grammar everywhere (CRD pattern, CLI flags, the sandbox broker): digits followed by a unit, repeated.
"""

from __future__ import annotations

import re

UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
# Also the CRDs' OpenAPI pattern for duration fields, and the title their errors use.
DURATION_PATTERN = r"^([0-9]+(ms|s|m|h|d|w))+$"
DURATION_TITLE = "duration like 7d, 36h, 1d12h, 90m, 30s or 500ms"
# The longest duration that means anything here: Kafka's own ceiling for offsets.retention.minutes (an INT
# of minutes, about 4083 years). Longer ones are typos, and would overflow timestamps further on.
MAX_DURATION_MS = (2**31 - 1) * 60_000
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_WHOLE = re.compile(DURATION_PATTERN)


def parse_duration_ms(text: str) -> int:
    """Raises ValueError with a message fit to show after the field's name."""
    if not isinstance(text, str) or not _WHOLE.match(text.strip()):
        raise ValueError(f"{text!r} is not a {DURATION_TITLE}")
    total = 0
    for digits, unit in _PART.findall(text.strip()):
        total += int(digits[-20:]) * UNITS_MS[unit] if len(digits.lstrip("0")) <= 20 else MAX_DURATION_MS + 1
    if total > MAX_DURATION_MS:
        raise ValueError(f"{text!r} is longer than {MAX_DURATION_MS // 60_000} minutes, the longest retention Kafka accepts")
    return total


def format_duration_ms(ms: int) -> str:
    """The shortest exact spelling: 604800000 -> "7d", 5400000 -> "1h30m"."""
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    parts = []
    for unit in ("d", "h", "m", "s", "ms"):
        n, ms = divmod(ms, UNITS_MS[unit])
        if n:
            parts.append(f"{n}{unit}")
    return sign + "".join(parts)
