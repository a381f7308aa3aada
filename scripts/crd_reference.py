"""docs/crd-reference.md, rendered from the CRDs that kafka_offset_operator.model.crds builds: every field of
spec and status with its type, default, bounds and description, and the API server's CEL rules. Written by
scripts/generate.py, so the reference cannot drift from the schemas (its --check test fails when it does)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

HEADER = """# CRD reference

Generated from `operator/kafka_offset_operator/model/crds.py` by `scripts/dev.sh generate`; do not edit.
Every field the API server accepts, with what it refuses (bounds, patterns, enums) and its rules. A field
marked *required* must be set; a default is what the API server fills in when it is left out.
"""


def _type(schema: Mapping[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int or string"
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema and "properties" not in schema:
        return f"map of {_type(schema['additionalProperties'])}"
    return kind


def _bounds(schema: Mapping[str, Any]) -> str:
    parts = []
    if "enum" in schema:
        parts.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    for key, word in (("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤"),
                      ("minItems", "items ≥"), ("maxItems", "items ≤"), ("maxProperties", "entries ≤")):
        if key in schema:
            parts.append(f"{word} {schema[key]}")
    if "pattern" in schema:
        parts.append(f"pattern `{schema['pattern']}`")
    if "format" in schema:
        parts.append(f"format {schema['format']}")
    return "; ".join(parts)


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(schema: Mapping[str, Any], path: str, required: bool) -> Iterator[tuple[str, ...]]:
    default = f"`{_cell(json.dumps(schema['default']))}`" if "default" in schema else ""
    yield (f"`{path}`" + (" *required*" if required else ""), _type(schema), default, _cell(_bounds(schema)),
           _cell(schema.get("description", "")))
    target = schema.get("items", {}) if schema.get("type") == "array" else schema
    needed = set(target.get("required", ()))
    suffix = "[]" if schema.get("type") == "array" else ""
    for name, child in (target.get("properties") or {}).items():
        yield from _rows(child, f"{path}{suffix}.{name}", name in needed)


def _rules(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, str, str]]:
    for rule in schema.get("x-kubernetes-validations", ()):
        yield path, _cell(rule["rule"]), _cell(rule.get("message") or rule.get("messageExpression", ""))
    target = schema.get("items", {}) if schema.get("type") == "array" else schema
    suffix = "[]" if schema.get("type") == "array" else ""
    for name, child in (target.get("properties") or {}).items():
        yield from _rules(child, f"{path}{suffix}.{name}")


def render(crds: Mapping[str, Mapping[str, Any]]) -> str:
    out = [HEADER]
    for crd in sorted(crds.values(), key=lambda c: str(c["spec"]["names"]["kind"])):
        names, version = crd["spec"]["names"], crd["spec"]["versions"][0]
        schema = version["schema"]["openAPIV3Schema"]
        out.append(f"## {names['kind']}\n")
        out.append(f"`{crd['spec']['group']}/{version['name']}`, {crd['spec']['scope']}; plural `{names['plural']}`, "
                   f"short names {', '.join(f'`{n}`' for n in names.get('shortNames', ()))}; "
                   f"categories {', '.join(f'`{c}`' for c in names.get('categories', ()))}.\n")
        if schema.get("description"):
            out.append(_cell(schema["description"]) + "\n")
        for part in ("spec", "status"):
            sub = schema["properties"][part]
            out.append(f"### {names['kind']} {part}\n")
            out.append("| field | type | default | bounds | description |\n|---|---|---|---|---|")
            for row in list(_rows(sub, part, part in schema.get("required", ())))[1:]:
                out.append("| " + " | ".join(row) + " |")
            out.append("")
        rules = list(_rules(schema, ""))
        if rules:
            out.append(f"### {names['kind']} rules the API server checks (CEL)\n")
            out.append("| on | rule | message |\n|---|---|---|")
            out.extend(f"| `{p.lstrip('.') or '(object)'}` | `{r}` | {m} |" for p, r, m in rules)
            out.append("")
    return "\n".join(out)
