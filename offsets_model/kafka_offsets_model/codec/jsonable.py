"""Decoded records hold bytes; JSON shows them as lowercase hex (what `encode_record` accepts back)."""

from __future__ import annotations

from typing import Any


def to_jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return value
