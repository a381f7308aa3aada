"""A record as read from `__consumer_offsets`: what both the reader and the reference take as input."""

from __future__ import annotations

from typing import NamedTuple

OFFSETS_TOPIC = "__consumer_offsets"


class RawRecord(NamedTuple):
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
