"""Evaluates the healthCheckExprs of integrations/flux/flux-kustomization.yaml as Flux does: CEL over the object,
`inProgress` first, then `failed`, then `current`; none true means InProgress (Flux's documented order). An
expression that reads a field the object does not have yet (no status at all) makes Flux wait, as here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cel
import yaml

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZATION = ROOT / "integrations" / "flux" / "flux-kustomization.yaml"


def expressions(kind: str) -> dict[str, str]:
    spec = yaml.safe_load(KUSTOMIZATION.read_text())["spec"]
    return next(e for e in spec["healthCheckExprs"] if e["kind"] == kind)


def flux_status(obj: Mapping[str, Any]) -> str:
    """InProgress, Failed or Current."""
    exprs = expressions(str(obj["kind"]))
    context = cel.Context()
    for key, value in obj.items():
        context.add_variable(key, value)
    for field, verdict in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        try:
            holds = field in exprs and cel.evaluate(exprs[field], context) is True
        except RuntimeError:  # an undefined field: Flux keeps waiting
            return "InProgress"
        if holds:
            return verdict
    return "InProgress"
