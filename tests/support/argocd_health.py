"""Runs an Argo CD health check (resource_customizations/<group>/<Kind>/health.lua) the way Argo CD does:
a real Lua interpreter (lupa) with the object as the global `obj`, the script's returned table as the health."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lupa import LuaRuntime

ROOT = Path(__file__).resolve().parents[2]
CUSTOMIZATIONS = ROOT / "integrations" / "argocd" / "resource_customizations"


def health_script(group: str, kind: str) -> Path:
    return CUSTOMIZATIONS / group / kind / "health.lua"


def _to_lua(lua: LuaRuntime, value: Any) -> Any:
    """Argo CD hands Lua the object as nested tables, lists 1-based; so does this."""
    if isinstance(value, Mapping):
        return lua.table_from({k: _to_lua(lua, v) for k, v in value.items()})
    if isinstance(value, list):
        return lua.table_from([_to_lua(lua, v) for v in value])
    return value


def health(script: Path, obj: Mapping[str, Any]) -> dict[str, str]:
    """{"status": ..., "message": ...} as the script returns them ("" for a missing message)."""
    lua = LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = _to_lua(lua, obj)
    result = lua.execute(script.read_text())
    return {"status": str(result["status"]), "message": str(result["message"] or "")}
