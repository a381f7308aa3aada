"""What the Kubernetes API server does with a custom resource before it stores it, for the emulated API
(emulated_cluster.Emulator), so tests meet the refusals a real cluster gives:

- the status subresource: a create drops `.status`, a write of the object keeps the stored `.status`, a
  write of `/status` changes only `.status`;
- unknown fields: refused with 400 under `fieldValidation=Strict` (kubectl's default when it validates),
  dropped otherwise; null values of fields that are not `nullable` are dropped;
- `default:` values filled in (nested ones included), as the API server does on every write;
- the openAPIV3Schema (kafka_offsets_model.openapi.SchemaCheck does the JSON Schema part) and
  `x-kubernetes-list-type` duplicates;
- the CEL rules (`x-kubernetes-validations`) with the `common-expression-language` package (cel-rust):
  transition rules (those that read `oldSelf`) only on updates where the old value exists, `message`,
  `messageExpression`, `fieldPath` and `reason`; a rule is skipped, as the API server skips them all, when
  the schema check found a type, required, enum or size error. The Kubernetes CEL libraries the CRDs use are
  added: the regex library's find/findAll and cel.stdlib's strings and lists (sum, indexOf, ...).

Any problem answers 422 Invalid with the API server's Status: one cause per field error, each with the
field and the message kubectl prints (`spec: Invalid value: spec is frozen once approved: ...`).

What is not emulated: CEL sees date-time strings as strings (the API
server gives timestamps), set and map lists are compared in key order (the API server ignores order; rules
that index into them see sorted lists here), the runtime cost budget is not metered, and validation
ratcheting (keeping an unchanged invalid value) is not done. The API server's static cost estimate is
approximated by `cost_problems` when a CRD is registered: a rule may reach only bounded lists, maps and
strings, and may sit under bounded lists only.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import cel
from cel.stdlib import add_stdlib_to_context
from jsonschema import ValidationError

from kafka_offsets_model.openapi import (
    Schema,
    SchemaCheck,
    field_path,
    list_type_duplicates,
    prune_nulls,
    without_cel_rules,
)

# Kubernetes' field.ErrorType values, as StatusCause.reason carries them.
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
REQUIRED = "FieldValueRequired"
NOT_SUPPORTED = "FieldValueNotSupported"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
_WORDS = {INVALID: "Invalid value", TYPE_INVALID: "Invalid value", REQUIRED: "Required value",
          NOT_SUPPORTED: "Unsupported value", TOO_LONG: "Too long", TOO_MANY: "Too many",
          DUPLICATE: "Duplicate value", FORBIDDEN: "Forbidden"}
# Errors after which the API server evaluates no CEL rule (strategy.go's hasBlockingErr).
_BLOCKING = {NOT_SUPPORTED, REQUIRED, TOO_LONG, TOO_MANY, TYPE_INVALID}
_RULES_SKIPPED = ("some validation rules were not checked because the object was invalid; correct the existing "
                  "errors to complete validation")
_MAX_MESSAGE = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")  # the API server's, not the schema's to prune


class _Omit:
    def __repr__(self) -> str:
        return "<omitted>"


OMIT: Any = _Omit()


@dataclass(frozen=True)
class FieldError:
    """One field.Error: `str()` is what kubectl prints for it."""

    type: str
    field: str
    value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """field.Error.ErrorBody: the message without the field."""
        word = _WORDS[self.type]
        if self.type in (REQUIRED, FORBIDDEN, TOO_LONG) or self.value is OMIT:
            out = word
        else:
            out = f"{word}: {go_value(self.value)}"
        return f"{out}: {self.detail}" if self.detail else out

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


class Invalid(Exception):
    """422 Invalid, with the API server's Status (errors.NewInvalid)."""

    def __init__(self, group: str, kind: str, name: str, errors: list[FieldError]) -> None:
        self.group, self.kind, self.name, self.errors = group, kind, name, errors
        unique = list(dict.fromkeys(str(e) for e in errors))  # ToAggregate drops repeated messages
        shown = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
        super().__init__(f'{kind}.{group} "{name}" is invalid: {shown}')

    @property
    def message(self) -> str:
        return str(self)

    def details(self) -> dict[str, Any]:
        return {"name": self.name, "group": self.group, "kind": self.kind,
                "causes": [{"reason": e.type, "message": e.body(), "field": e.field} for e in self.errors]}


class BadRequest(Exception):
    """400 BadRequest: a body the API server cannot decode (strict field validation)."""


def go_value(value: Any) -> str:
    """A value as field.Error prints it (ErrorBody, Kubernetes 1.36): %q for strings, %v for numbers and
    booleans, json.Marshal for the rest."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:  # json.Marshal(nil)
        return "null"
    if isinstance(value, (Mapping, list)):  # encoding/json: sorted keys, no spaces, <>& escaped
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return str(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# -- CEL


def _find(text: str, pattern: str) -> str:
    """Kubernetes' regex library: the first match, or ""."""
    found = re.search(pattern, text)
    return found.group(0) if found else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Kubernetes' regex library: every match (at most `limit` when it is not negative)."""
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


def cel_context(variables: Mapping[str, Any]) -> cel.Context:
    """A context with the Kubernetes CEL libraries the CRDs use (cel.stdlib's strings and lists, the regex
    library) and `variables`."""
    context = cel.Context()
    add_stdlib_to_context(context)
    context.add_function("find", _find)
    context.add_function("findAll", _find_all)
    for name, value in variables.items():
        context.add_variable(name, value)
    return context


@dataclass(frozen=True)
class CelRule:
    """One x-kubernetes-validations entry, compiled."""

    source: Mapping[str, Any]
    program: cel.Program
    message_program: cel.Program | None
    transition: bool  # reads oldSelf: evaluated on updates only, with the old value

    @classmethod
    def compile(cls, source: Mapping[str, Any], where: str) -> CelRule:
        """Raises ValueError naming `where` (the rule's place in the CRD) when the rule cannot compile."""
        try:
            program = cel.compile(source["rule"])
            message = cel.compile(source["messageExpression"]) if source.get("messageExpression") else None
        except (ValueError, RuntimeError) as exc:
            raise ValueError(f"{where}: Invalid value: {source.get('rule')!r}: compilation failed: {exc}") from None
        return cls(source, program, message, "oldSelf" in program.variables())

    @property
    def error_string(self) -> str:
        """ruleErrorString: the message, else the rule."""
        return str(self.source.get("message") or self.source["rule"]).strip()

    def evaluate(self, at: str, kind: str, value: Any, old: Any) -> FieldError | None:
        """The field error when the rule does not hold for `value` (and `old`, for a transition rule)."""
        variables = {"self": value, **({"oldSelf": old} if self.transition else {})}
        try:
            result = self.program.execute(cel_context(variables))
        except Exception as exc:  # cel raises ValueError, KeyError, TypeError, OverflowError, RuntimeError
            detail = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            return FieldError(INVALID, at, kind, f"{_one_line(detail)} evaluating rule: {self.error_string}")
        if result is True:
            return None
        where = at + str(self.source.get("fieldPath") or "")
        detail = self._message(variables)
        # validation.go: the value itself, omitted for an object or an array (Kubernetes 1.36).
        shown = OMIT if kind in ("object", "array") else value
        reason = self.source.get("reason")
        if reason == FORBIDDEN:
            return FieldError(FORBIDDEN, where, OMIT, detail)
        if reason == REQUIRED:
            return FieldError(REQUIRED, where, OMIT, detail)
        if reason == DUPLICATE:
            return FieldError(DUPLICATE, where, shown)
        return FieldError(INVALID, where, shown, detail)

    def _message(self, variables: Mapping[str, Any]) -> str:
        """messageExpression's result when it gives a usable one line, else message, else `failed rule`."""
        if self.message_program is not None:
            try:
                text = self.message_program.execute(cel_context(variables))
            except Exception:  # the API server logs it and falls back on message
                text = None
            if isinstance(text, str) and text.strip() and "\n" not in text.strip() and len(text.strip()) <= _MAX_MESSAGE:
                return text.strip()
        if self.source.get("message"):
            return str(self.source["message"]).strip()
        return f"failed rule: {self.error_string}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- one served version of a CRD


@dataclass
class ResourceSchema:
    """One version of a CRD as the API server serves it: its schema compiled, its rules compiled."""

    group: str
    kind: str
    schema: Schema
    status_subresource: bool
    check: SchemaCheck = field(init=False)
    rules: dict[int, list[CelRule]] = field(init=False)  # by id() of the schema node that carries them

    def __post_init__(self) -> None:
        # apiVersion, kind and metadata are the API server's at the root, whatever the schema says of them.
        root = without_cel_rules(self.schema)
        root["properties"] = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                              **(root.get("properties") or {})}
        self.check = SchemaCheck(root)
        self.rules = {}
        for node, where in _nodes(self.schema, "spec.validation.openAPIV3Schema"):
            for i, source in enumerate(node.get("x-kubernetes-validations") or ()):
                self.rules.setdefault(id(node), []).append(CelRule.compile(source, f"{where}.x-kubernetes-validations[{i}].rule"))

    @classmethod
    def from_crd(cls, crd: Mapping[str, Any], version: Mapping[str, Any]) -> ResourceSchema:
        """Raises ValueError when a rule does not compile or could cost too much (see cost_problems)."""
        schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
        problems = cost_problems(schema)
        if problems:
            raise ValueError(f"CustomResourceDefinition.apiextensions.k8s.io {crd['metadata']['name']!r} is invalid: "
                             + "; ".join(problems))
        return cls(crd["spec"]["group"], crd["spec"]["names"]["kind"], schema,
                   "status" in (version.get("subresources") or {}))

    def admit(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, subresource: str | None = None,
              strict: bool = False) -> dict[str, Any]:
        """The object the API server would store for this write of `obj` (the whole object after the patch,
        if one), `old` being the stored one (None on create). Raises Invalid or BadRequest."""
        new: dict[str, Any] = copy.deepcopy(dict(obj))
        if self.status_subresource:
            new = _status_subresource(new, old, subresource)
        name = str((new.get("metadata") or {}).get("name") or "")
        unknown = list(_unknown_fields(new, self.schema, "", root=True))
        if unknown and strict:
            raise BadRequest(f"{self.kind} in version {new.get('apiVersion', '').split('/')[-1]!r} cannot be handled "
                             f"as a {self.kind}: strict decoding error: "
                             + ", ".join(f'unknown field "{u}"' for u in unknown))
        new = prune_nulls(_prune(new, self.schema, root=True), self.schema)
        default(new, self.schema)
        errors = self.errors(new, old)
        if errors:
            raise Invalid(self.group, self.kind, name, errors)
        return new

    def errors(self, new: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
        """The schema's errors, list-type duplicates, then the CEL rules' (unless a blocking error came first).
        On an update, an error about a value the write left as it was is dropped (validation ratcheting, on
        by default since Kubernetes 1.30): an object that a newer CRD calls invalid can still get its status
        written and its other fields fixed."""
        found: list[tuple[FieldError, tuple[str | int, ...]]] = []
        for error in self.check.errors(new):
            parts = tuple(error.absolute_path)
            if error.validator == "required":
                parts = (*parts, *_missing(error)[:1])
            found.append((_field_error(error), parts))
        for dup in list_type_duplicates(new, self.schema):
            item = {k: dup.item.get(k) for k in dup.keys} if dup.keys else dup.item
            found.append((FieldError(DUPLICATE, field_path("", dup.parts).lstrip("."), item), dup.parts))
        errors = [e for e, parts in found if old is None or not _unchanged(self.schema, new, old, parts)]
        if any(e.type in _BLOCKING for e in errors):
            return [*errors, FieldError(INVALID, "<nil>", None, _RULES_SKIPPED)]
        return errors + list(self._rule_errors(self.schema, new, old if old is not None else _ABSENT, "", False))

    def _rule_errors(self, node: Mapping[str, Any], value: Any, old: Any, at: str, parent_unchanged: bool) -> Iterator[FieldError]:
        """validation.go's walk: rules of `node` on non-null `value`, then its fields and items, each with its
        old value where the API server correlates one (fields, map keys, map-list items by key). A rule that
        does not read oldSelf reports nothing about a value left as it was (ratcheting; where there is no old
        value to correlate, the nearest correlated parent decides)."""
        if value is None:
            return
        unchanged = value == old if old is not _ABSENT else parent_unchanged
        if id(node) in self.rules:
            kind = str(node.get("type") or "")
            current, before = _canonical(value, node), _canonical(old, node)
            for rule in self.rules[id(node)]:
                if rule.transition and old is _ABSENT:
                    continue
                error = rule.evaluate(at or "<nil>", kind, current, before)
                if error is not None and (rule.transition or not unchanged):
                    yield error
        if isinstance(value, Mapping):
            props: Mapping[str, Any] = node.get("properties") or {}
            extra = node.get("additionalProperties")
            for key, item in value.items():
                sub = props.get(key, extra if isinstance(extra, Mapping) else None)
                if sub is None:
                    continue
                correlated = key in props or node.get("x-kubernetes-map-type") != "atomic"
                before = old.get(key, _ABSENT) if correlated and isinstance(old, Mapping) else _ABSENT
                yield from self._rule_errors(sub, item, before, field_path(at, [key]).lstrip("."), unchanged)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            keys = node.get("x-kubernetes-list-map-keys") or ()
            olds = {}
            if node.get("x-kubernetes-list-type") == "map" and isinstance(old, list):
                olds = {_map_key(o, keys): o for o in old if isinstance(o, Mapping)}
            for i, item in enumerate(value):
                before = olds.get(_map_key(item, keys), _ABSENT) if isinstance(item, Mapping) and olds else _ABSENT
                yield from self._rule_errors(node["items"], item, before, field_path(at, [i]), unchanged)


class _Absent:
    pass


_ABSENT: Any = _Absent()


def _unchanged(schema: Mapping[str, Any], new: Any, old: Any, parts: tuple[str | int, ...]) -> bool:
    """Whether the write left the value at `parts` as it was: followed down fields, map keys and map-list
    items (by their keys); below a list the API server cannot correlate, that list decides."""
    node: Mapping[str, Any] = schema
    for part in parts:
        if isinstance(part, int):
            if node.get("x-kubernetes-list-type") != "map" or not isinstance(new, list) or not isinstance(old, list):
                break
            if part >= len(new) or not isinstance(new[part], Mapping):
                break
            keys = node.get("x-kubernetes-list-map-keys") or ()
            olds = {_map_key(o, keys): o for o in old if isinstance(o, Mapping)}
            new, old = new[part], olds.get(_map_key(new[part], keys), _ABSENT)
            node = node.get("items") or {}
        else:
            if not isinstance(new, Mapping):
                break
            props: Mapping[str, Any] = node.get("properties") or {}
            extra = node.get("additionalProperties")
            new = new.get(part, _ABSENT)
            old = old.get(part, _ABSENT) if isinstance(old, Mapping) else _ABSENT
            sub = props.get(part, extra if isinstance(extra, Mapping) else None)
            node = sub if isinstance(sub, Mapping) else {}
    return bool(new == old)


def _map_key(item: Mapping[str, Any], keys: Any) -> str:
    return repr([item.get(k) for k in keys])


def _canonical(value: Any, node: Mapping[str, Any]) -> Any:
    """`value` with set and map lists in a fixed order, so CEL's == ignores their order as the API server's
    does for those list types."""
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            out[key] = _canonical(item, sub) if isinstance(sub, Mapping) else item
        return out
    if isinstance(value, list):
        items = node.get("items")
        listed = [_canonical(v, items) if isinstance(items, Mapping) else v for v in value]
        kind = node.get("x-kubernetes-list-type")
        if kind == "map":
            keys = node.get("x-kubernetes-list-map-keys") or ()
            return sorted(listed, key=lambda v: json.dumps([v.get(k) for k in keys] if isinstance(v, Mapping) else v))
        if kind == "set":
            return sorted(listed, key=lambda v: json.dumps(v, sort_keys=True))
        return listed
    return value


# -- what happens before validation


def _status_subresource(new: dict[str, Any], old: Mapping[str, Any] | None, subresource: str | None) -> dict[str, Any]:
    """With the status subresource, a create cannot set status, a write of the object keeps the stored
    status, and a write of /status changes the status only."""
    if old is None:
        new.pop("status", None)
        return new
    if subresource == "status":
        out = copy.deepcopy(dict(old))
        if "status" in new:
            out["status"] = new["status"]
        else:
            out.pop("status", None)
        return out
    if "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)
    return new


def _closed(node: Mapping[str, Any]) -> bool:
    return "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields") and not isinstance(
        node.get("additionalProperties"), Mapping) and node.get("additionalProperties") is not True


def _unknown_fields(value: Any, node: Mapping[str, Any], at: str, root: bool = False) -> Iterator[str]:
    """Paths of the fields the schema does not know (structural pruning would drop them)."""
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            here = f"{at}.{key}" if at else key
            if root and key in _ROOT_FIELDS:
                continue
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                yield from _unknown_fields(item, sub, here)
            elif _closed(node):
                yield here
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            yield from _unknown_fields(item, node["items"], f"{at}[{i}]")


def _prune(value: Any, node: Mapping[str, Any], root: bool = False) -> Any:
    """`value` without the fields the schema does not know."""
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = node.get("properties") or {}
        extra = node.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if root and key in _ROOT_FIELDS:
                out[key] = item
            elif sub is not None:
                out[key] = _prune(item, sub)
            elif not _closed(node):
                out[key] = item
        return out
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [_prune(item, node["items"]) for item in value]
    return value


def default(value: Any, node: Mapping[str, Any]) -> None:
    """Fill in `default:` values in place (structuraldefaulting.Default): an absent field with a default gets
    a copy of it, and defaults below apply to it too."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = node.get("properties") or {}
        for key, sub in props.items():
            if "default" in sub and key not in value:
                value[key] = copy.deepcopy(sub["default"])
        extra = node.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if isinstance(sub, Mapping):
                default(item, sub)
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for item in value:
            default(item, node["items"])


# -- schema errors as the API server words them (kubeOpenAPIResultToFieldErrors, kube-openapi's messages)


def _missing(error: ValidationError) -> list[str]:
    """The required fields a `required` error is about."""
    names: Any = error.validator_value
    value: Any = error.instance
    return [n for n in names if isinstance(value, Mapping) and n not in value]


def _field_error(error: ValidationError) -> FieldError:
    at = field_path("", list(error.absolute_path)).lstrip(".") or "<nil>"
    kind = str(error.validator)
    expected: Any = error.validator_value
    value: Any = error.instance
    if kind == "required":
        name = next(iter(_missing(error)), "")
        return FieldError(REQUIRED, f"{at}.{name}" if at != "<nil>" else name)
    if kind == "type":
        return FieldError(TYPE_INVALID, at, _json_type(value), f'{at} in body must be of type {expected}: "{_json_type(value)}"')
    if kind == "enum":
        return FieldError(NOT_SUPPORTED, at, value, "supported values: " + ", ".join(json.dumps(str(o)) for o in expected))
    if kind == "maxLength":
        return FieldError(TOO_LONG, at, value, f"may not be longer than {expected}")
    if kind == "maxItems":
        return FieldError(TOO_MANY, at, len(value), f"must have at most {expected} items")
    if kind == "maxProperties":
        return FieldError(TOO_MANY, at, len(value), f"must have at most {expected} items")
    messages = {
        "pattern": f"{at} in body should match '{expected}'",
        "minLength": f"{at} in body should be at least {expected} chars long",
        "minItems": f"{at} in body should have at least {expected} items",
        "minimum": f"{at} in body should be greater than or equal to {expected}",
        "maximum": f"{at} in body should be less than or equal to {expected}",
        "oneOf": f"{at} in body must validate one and only one schema (oneOf)",
        "anyOf": f"{at} in body must validate at least one schema (anyOf)",
        "format": f"{at} in body must be of type {expected}: {json.dumps(value)}",
    }
    shown = len(value) if kind == "minItems" else _json_type(value) if kind in ("oneOf", "anyOf") else value
    return FieldError(INVALID, at, shown, messages.get(kind, _one_line(error.message)))


# -- the API server's cost check, approximated


def _nodes(node: Mapping[str, Any], where: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    yield node, where
    for name, sub in (node.get("properties") or {}).items():
        yield from _nodes(sub, f"{where}.properties[{name}]")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), Mapping):
            yield from _nodes(node[key], f"{where}.{key}")


def _unbounded(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "string":
        return "maxLength" not in node and "enum" not in node
    if kind == "array":
        return "maxItems" not in node
    if kind == "object" and isinstance(node.get("additionalProperties"), Mapping):
        return "maxProperties" not in node
    return False


def cost_problems(schema: Mapping[str, Any]) -> list[str]:
    """Rules that a real API server could refuse for their estimated cost: it estimates every list, map and
    string without maxItems, maxProperties or maxLength from its 3 MiB request limit, and multiplies a
    rule's cost by how often it runs (once per item of every list above it). Conservative: here a rule may
    reach (its node and below) and sit under (the lists above it) bounded ones only."""
    problems: list[str] = []

    def walk(node: Mapping[str, Any], where: str, above_unbounded: str | None) -> None:
        for i, _ in enumerate(node.get("x-kubernetes-validations") or ()):
            rule = f"{where}.x-kubernetes-validations[{i}]"
            reached = [w for n, w in _nodes(node, where) if _unbounded(n)]
            if above_unbounded is not None:
                problems.append(f"{rule}: Forbidden: estimated rule cost exceeds budget: it runs once per item of "
                                f"{above_unbounded} (add maxItems there)")
            elif reached:
                problems.append(f"{rule}: Forbidden: estimated rule cost exceeds budget: it reaches {', '.join(reached)} "
                                "(add maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
        for name, sub in (node.get("properties") or {}).items():
            walk(sub, f"{where}.properties[{name}]", above_unbounded)
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, Mapping):
                repeats = node.get("type") == "array" or key == "additionalProperties"
                walk(sub, f"{where}.{key}", above_unbounded or (where if repeats and _unbounded(node) else None))

    walk(schema, "spec.validation.openAPIV3Schema", None)
    return problems
