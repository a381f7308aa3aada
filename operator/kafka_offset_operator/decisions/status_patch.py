"""JSON merge patches of a status (RFC 7386), computed here so a reconciler knows the status it wrote
without reading it back, and writes nothing when nothing changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 on plain data: what the API server makes of `patch` (None removes, lists are replaced)."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_patch(out[key], value)
        elif isinstance(value, Mapping):
            out[key] = merge_patch({}, value)
        else:
            out[key] = value
    return out


def changes(status: Mapping[str, Any], patch: Mapping[str, Any]) -> bool:
    """Whether writing `patch` would change anything (so an idle retry loop writes nothing)."""
    return bool(patch) and merge_patch(status, patch) != dict(status)
