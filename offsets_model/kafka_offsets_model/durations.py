"""Durations as people write them in specs and flags: "7d", "36h", "1d12h", "90m", "500ms".

One grammar everywhere (CRD pattern, CLI flags, the sandbox broker): digits followed by a unit, repeated.
"""

from __future__ import annotations

import re

UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
# Also the CRDs' OpenAPI pattern for duration fields, and the title their errors use.
DURATION_PATTERN = r"^([0-9]+(ms|s|m|h|d|w))+$"
DURATION_TITLE = "duration like 7d, 36h, 1d12h, 90m, 30s or 500ms"
# The longest duration accepted anywhere: 10 years (3650d). A retention or an interval longer than that is a
# typo, not a plan (Kafka's own ceiling, offsets.retention.minutes as an INT, is about 4083 years, and those
# numbers overflow timestamps further on). The CRDs say the same with a CEL rule and a maxLength
# (kafka_offsets_model.policy_schema.duration), so the API server refuses what this refuses.
MAX_DURATION = "3650d"
MAX_DURATION_MS = 3650 * UNITS_MS["d"]
# The CRDs' maxLength for a duration ("1d12h30m15s500ms" is 16): it bounds what the API server's CEL rule
# costs; the parser needs no such bound.
MAX_DURATION_LENGTH = 32
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
        raise ValueError(f"{text!r} is longer than {MAX_DURATION} (10 years), the longest retention or interval accepted")
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
