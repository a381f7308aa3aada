"""Durations as people write them in specs and flags: "7d", "36h", "1d12h", "90m", "500ms".

One grammar everywhere (CRD pattern, CLI flags, the sandbox broker): digits followed by a unit, repeated.
"""

from __future__ import annotations

import re

UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
# Also the CRDs' OpenAPI pattern for duration fields.
DURATION_PATTERN = r"^([0-9]+(ms|s|m|h|d|w))+$"
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_WHOLE = re.compile(DURATION_PATTERN)


def parse_duration_ms(text: str) -> int:
    """Raises ValueError with a message fit to show after the field's name."""
    if not isinstance(text, str) or not _WHOLE.match(text.strip()):
        raise ValueError(f"{text!r} is not a duration like 7d, 36h, 1d12h, 90m, 30s or 500ms")
    return sum(int(n) * UNITS_MS[unit] for n, unit in _PART.findall(text.strip()))


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
