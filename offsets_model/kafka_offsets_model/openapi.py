"""Values checked against an OpenAPI v3 schema as a CustomResourceDefinition carries it, read the way the
Kubernetes API server reads it, with the first problem raised as SpecError naming the field
(`spec.topics[1].name: 'a' is listed twice`).

A CRD's openAPIV3Schema is JSON Schema draft 4 plus a few OpenAPI and Kubernetes words; jsonschema's
Draft4Validator does the checking, and what is not JSON Schema is handled here on purpose:

- `nullable`: without it the API server drops a null field before it validates (as if it were absent),
  so `check` drops it too; with `nullable: true` null is a value of the field.
- Unknown fields: the API server's strict field validation (kubectl's default) refuses them, so every
  object with `properties` is closed (`additionalProperties: false`) unless it says
  `x-kubernetes-preserve-unknown-fields: true` or gives `additionalProperties` itself.
- `x-kubernetes-list-type`: `set` and `map` (keyed by `x-kubernetes-list-map-keys`) refuse duplicates as the
  API server does; `atomic` is a plain list. `x-kubernetes-int-or-string` accepts an integer or a string.
  Any other `x-kubernetes-*` word is refused when the schema is compiled, since this checker could not
  honour it. CEL rules (`x-kubernetes-validations`) are the API server's to evaluate: a caller that leaves
  them to it says so by compiling `without_cel_rules(schema)`, so nobody reads a SchemaCheck as checking them
  (the operator's spec parsers do, with a code-side twin where a rule matters to them, such as the
  durations' cap; the emulated API server of kafka_offset_demo evaluates them).
- `default`: an annotation for JSON Schema. The API server fills defaults in; the spec parsers apply the
  same defaults themselves, so a spec that skipped defaulting (a policy file) means the same.
- `format`: `date-time` is checked as the API server checks it (kube-openapi's strfmt.IsDateTime: a date,
  a `T` (or `t`), then `HH:MM:SS[.frac]` and `Z` or `+HH:MM`); `int64` refuses
  an integer past 64 bits, as the API server's JSON decoder does; other formats are annotations here.
- `pattern`: the API server matches with RE2, where `$` is the end of the text; Python's `$` also matches
  before a final newline, so patterns are compiled with `\\Z` for `$` (`re2_anchors`).

Messages are one line. `title`, where a schema gives one, names what a value is ("duration like 7d, ..."),
so a wrong value reads `'7 days' is not a duration like 7d, ...` rather than showing a regular expression.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft4Validator, FormatChecker, ValidationError, validators

from .errors import SpecError

Schema = dict[str, Any]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_LIST_TYPE = "x-kubernetes-list-type"
_MAP_KEYS = "x-kubernetes-list-map-keys"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_UNDERSTOOD = {_PRESERVE, _LIST_TYPE, _MAP_KEYS, _INT_OR_STRING}
_CEL = "x-kubernetes-validations"

# kube-openapi pkg/validation/strfmt (default.go: DateTimePattern, IsDateTime, IsDate), Kubernetes 1.36.
_TIME_OF_DAY = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def is_date_time(value: object) -> bool:
    """A `format: date-time` string as the API server admits it (strfmt.IsDateTime); not a string: the
    `type` check's to refuse."""
    if not isinstance(value, str):
        return True
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not _DATE.match(parts[0]):
        return False
    try:
        datetime.date.fromisoformat(parts[0])  # time.Parse("2006-01-02"): the day must exist
    except ValueError:
        return False
    found = _TIME_OF_DAY.match(parts[1])
    return found is not None and found[1] <= "23" and found[2] <= "59" and found[3] <= "59"


def is_int64(value: object) -> bool:
    """A number the API server's JSON decoder reads as an integer: one past int64 is refused (422)."""
    return not isinstance(value, int) or isinstance(value, bool) or -(2**63) <= value < 2**63


def _integer(_: Any, value: object) -> bool:
    """The API server decodes JSON numbers as float64 first: 1.0 is the integer 1 to it (draft 4 says no)."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_Validator = validators.create(  # draft 4 (the CRDs use no $ref), with the API server's integers
    meta_schema=Draft4Validator.META_SCHEMA,
    validators=Draft4Validator.VALIDATORS,
    type_checker=Draft4Validator.TYPE_CHECKER.redefine("integer", _integer),
    format_checker=Draft4Validator.FORMAT_CHECKER,
    id_of=lambda schema: str(schema.get("id", "")) if isinstance(schema, Mapping) else "",  # draft 4's "id"
)
_FORMATS = FormatChecker(formats=())
_FORMATS.checks("date-time")(is_date_time)
_FORMATS.checks("int64")(is_int64)


def _format(value: Any, fmt: Any, _: Mapping[str, Any]) -> Found:
    if fmt == "int64":
        return [], f"{value!r} is past a 64-bit integer"
    return [], f"{value!r} is not a {fmt} (RFC 3339, e.g. 2026-01-31T12:00:00Z)"


class SchemaCheck:
    """One schema, compiled once; `check` per value."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = copy.deepcopy(dict(schema))
        json_schema = _to_json_schema(self.schema, "#")
        Draft4Validator.check_schema(json_schema)
        self._validator = _Validator(json_schema, format_checker=_FORMATS)
        self._lists: set[int] = set()  # ids of the schema nodes with a list type at or below them
        _find_lists(self.schema, self._lists)

    def errors(self, value: Any) -> list[ValidationError]:
        """Every JSON Schema problem of `value` (nulls pruned first), for callers that report them all (the
        emulated API server); list types are `list_type_duplicates`'."""
        return list(self._validator.iter_errors(prune_nulls(value, self.schema)))

    def check(self, value: Any, path: str) -> Any:
        """`value` without the nulls the API server would drop; raises SpecError for its first problem.
        `path` names `value` itself (`spec`), so fields read `spec.rules.standaloneRetention`."""
        pruned = prune_nulls(value, self.schema)
        error = next(iter(self._validator.iter_errors(pruned)), None)
        if error is not None:
            at = field_path(path, error.absolute_path)
            below, problem = _explain(error, at)
            raise SpecError(field_path(at, below), problem)
        duplicate = next(_duplicates(pruned, self.schema, (), self._lists), None)
        if duplicate is not None:
            raise _duplicate_error(path, duplicate)
        return pruned


def without_cel_rules(schema: Mapping[str, Any]) -> Schema:
    """A copy of `schema` without its CEL rules (`x-kubernetes-validations`, at any depth): what a checker
    that leaves them to the API server compiles."""
    out: Schema = {}
    for key, value in schema.items():
        if key == _CEL:
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, Mapping):
            out[key] = {name: without_cel_rules(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key] = without_cel_rules(value)
        elif key in ("oneOf", "anyOf", "allOf") and isinstance(value, list):
            out[key] = [without_cel_rules(sub) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def field_path(base: str, parts: Sequence[str | int]) -> str:
    """`spec` + ['topics', 1, 'name'] -> `spec.topics[1].name`."""
    out = base
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def prune_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of `value` without null fields the schema does not call nullable (the API server's pruning)."""
    if isinstance(value, Mapping):
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is None:
                out[key] = item  # unknown: kept, so it is reported as unknown
            elif item is not None or sub.get("nullable"):
                out[key] = prune_nulls(item, sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [prune_nulls(item, schema["items"]) for item in value]
    return value


# -- compiling


def _to_json_schema(node: Mapping[str, Any], where: str) -> Schema:
    out: Schema = {}
    for key, value in node.items():
        if key == _CEL:
            raise ValueError(f"{where}: {key} (CEL) is not evaluated by kafka_offsets_model.openapi: compile "
                             "without_cel_rules(schema) and say who evaluates them")
        if key.startswith("x-kubernetes-") and key not in _UNDERSTOOD:
            raise ValueError(f"{where}: {key} is not checked by kafka_offsets_model.openapi; implement it there first")
        if key == "properties":
            out[key] = {name: _to_json_schema(sub, f"{where}.{name}") for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _to_json_schema(value, f"{where}[]")
        elif key in ("oneOf", "anyOf", "allOf"):
            out[key] = [_to_json_schema(sub, where) for sub in value]
        elif key == "not":
            out[key] = _to_json_schema(value, where)
        elif key == "pattern" and isinstance(value, str):
            out[key] = re2_anchors(value)
        elif key != "nullable":
            out[key] = value
    if node.get(_INT_OR_STRING):
        out["type"] = ["integer", "string"]
    if node.get("nullable"):
        kinds = out.get("type")
        out["type"] = [*(kinds if isinstance(kinds, list) else [kinds] if kinds else []), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if "properties" in out and "additionalProperties" not in out and not node.get(_PRESERVE):
        out["additionalProperties"] = False
    if out.get(_LIST_TYPE) == "map" and not out.get(_MAP_KEYS):
        raise ValueError(f"{where}: x-kubernetes-list-type map needs x-kubernetes-list-map-keys")
    return out


def re2_anchors(pattern: str) -> str:
    """`pattern` with the API server's meaning of `$` in Python's `re`: the end of the text (RE2, Go), not
    also before a final newline (Python), so "orders\\n" is not a topic name here either. Every `$` that is
    neither escaped nor in a character class becomes `\\Z`."""
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]" or out[-1] == "["
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append("\\Z")
            continue
        out.append(char)
    return "".join(out)


def _find_lists(node: Mapping[str, Any], out: set[int]) -> bool:
    subs = [*(node.get("properties") or {}).values(), node.get("items"), node.get("additionalProperties")]
    below = [_find_lists(sub, out) for sub in subs if isinstance(sub, Mapping)]
    if any(below) or node.get(_LIST_TYPE, "atomic") != "atomic":
        out.add(id(node))
        return True
    return False


@dataclass(frozen=True)
class Duplicate:
    """An item listed twice in an `x-kubernetes-list-type` `set` or `map` list."""

    parts: tuple[str | int, ...]  # from the checked value down to the second item
    item: Any
    keys: tuple[str, ...]  # a map list's keys; () for a set


def list_type_duplicates(value: Any, schema: Mapping[str, Any]) -> Iterator[Duplicate]:
    """x-kubernetes-list-type: every second item of a `set`, and every item with the keys of an earlier one
    in a `map`, as the API server refuses them."""
    lists: set[int] = set()
    _find_lists(schema, lists)
    return _duplicates(value, schema, (), lists)


def _duplicates(value: Any, schema: Mapping[str, Any], at: tuple[str | int, ...], lists: set[int]) -> Iterator[Duplicate]:
    """Walks only where the schema has list types; items of the wrong shape are the schema check's to report."""
    if id(schema) not in lists:
        return
    if isinstance(value, Mapping):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                yield from _duplicates(item, sub, (*at, key), lists)
    if isinstance(value, list):
        kind = schema.get(_LIST_TYPE, "atomic")
        keys = tuple(schema.get(_MAP_KEYS) or ()) if kind == "map" else ()
        seen: set[str] = set()
        for i, item in enumerate(value):
            if kind == "map" and not isinstance(item, Mapping):
                continue
            identity = repr([item.get(k) for k in keys] if kind == "map" else item)
            if kind != "atomic" and identity in seen:
                yield Duplicate((*at, i), item, keys)
            seen.add(identity)
            yield from _duplicates(item, schema.get("items") or {}, (*at, i), lists)


def _duplicate_error(path: str, found: Duplicate) -> SpecError:
    at = field_path(path, found.parts)
    if len(found.keys) == 1:
        return SpecError(field_path(at, [found.keys[0]]), f"{found.item.get(found.keys[0])!r} is listed twice")
    shown = ", ".join(f"{k}={found.item.get(k)!r}" for k in found.keys) if found.keys else repr(found.item)
    return SpecError(at, f"{shown} is listed twice")


# -- explaining


def _explain(error: ValidationError, at: str) -> tuple[list[str | int], str]:
    """Where below the error's own path (`at`) the problem is, and what it is, in one line."""
    if error.validator == "oneOf":
        found = _one_of(error.instance, error.validator_value, at)
        if found is not None:
            return found
    explain = _EXPLAIN.get(str(error.validator))
    if explain is not None:
        found = explain(error.instance, error.validator_value, error.schema if isinstance(error.schema, Mapping) else {})
        if found is not None:
            return found
    return [], error.message.replace("\n", " ")


Found = tuple[list[str | int], str] | None


def _type(value: Any, expected: Any, schema: Mapping[str, Any]) -> Found:
    kinds = expected if isinstance(expected, list) else [expected]
    if kinds[0] == "boolean" and value is not None:
        return [], f"{value!r} is not true or false"
    title = schema.get("title")
    noun = _a(title) if title else _NOUNS.get(kinds[0], _a(kinds[0]))
    if value is None or kinds[0] in ("object", "array"):
        return [], f"expected {noun}, got {_kind(value)}"
    return [], f"{value!r} is not {noun}"


def _titled(value: Any, _: Any, schema: Mapping[str, Any]) -> Found:
    """A string's pattern or length: what the value should be, by the schema's title."""
    title = schema.get("title")
    return ([], f"{value!r} is not {_a(title)}") if title else None


def _min_length(value: Any, minimum: Any, schema: Mapping[str, Any]) -> Found:
    if schema.get("title") and minimum == 1:
        return [], f"expected a non-empty {schema['title']}, got {value!r}"
    return [], "must not be empty" if minimum == 1 else f"must be at least {minimum} characters long"


def _max_length(value: Any, maximum: Any, schema: Mapping[str, Any]) -> Found:
    return [], f"is longer than {maximum} characters"


def _pattern(value: Any, pattern: Any, schema: Mapping[str, Any]) -> Found:
    return _titled(value, pattern, schema) or ([], f"{value!r} does not match {str(pattern).replace(chr(92) + 'Z', '$')}")


def _enum(value: Any, options: Any, _: Mapping[str, Any]) -> Found:
    return [], f"{value!r} is not one of {', '.join(str(o) for o in options if o is not None)}"


def _required(value: Any, names: Any, _: Mapping[str, Any]) -> Found:
    missing = [n for n in names if n not in value]
    return ([missing[0]], "is required") if missing else None


def _additional(value: Any, allowed: Any, schema: Mapping[str, Any]) -> Found:
    known = schema.get("properties") or {}
    for key in value:
        if not isinstance(key, str):
            return [], f"field names must be strings, got {key!r}"
        if key not in known:
            return [key], f"unknown field (known: {', '.join(sorted(known))})"
    return None


def _minimum(value: Any, minimum: Any, schema: Mapping[str, Any]) -> Found:
    word = "greater than" if schema.get("exclusiveMinimum") else "at least"
    return [], f"must be {word} {minimum}, not {value!r}"


def _maximum(value: Any, maximum: Any, schema: Mapping[str, Any]) -> Found:
    word = "less than" if schema.get("exclusiveMaximum") else "at most"
    return [], f"must be {word} {maximum}, not {value!r}"


def _min_items(value: Any, minimum: Any, _: Mapping[str, Any]) -> Found:
    return [], "must not be empty" if minimum == 1 else f"must have at least {minimum} items"


def _max_items(value: Any, maximum: Any, _: Mapping[str, Any]) -> Found:
    return [], f"must have at most {maximum} items, not {len(value)}"


def _one_of(value: Any, options: Any, at: str) -> Found:
    """`oneOf` of `required` alone (spec.kafka or spec.policyRef): which one to give."""
    if not isinstance(value, Mapping) or not all(isinstance(o, Mapping) and set(o) == {"required"} and len(o["required"]) == 1 for o in options):
        return None
    names = [o["required"][0] for o in options]
    given = [n for n in names if n in value]
    choices = " or ".join(f"{at}.{n}" for n in names)
    if given:
        return [given[-1]], f"give {choices}, {'not both' if len(names) == 2 else 'only one of them'}"
    return [names[0]], f"give {choices}"


def _unique(value: Any, _: Any, __: Mapping[str, Any]) -> Found:
    return [], "has duplicate items"


_EXPLAIN: dict[str, Callable[[Any, Any, Mapping[str, Any]], Found]] = {
    "type": _type,
    "pattern": _pattern,
    "minLength": _min_length,
    "maxLength": _max_length,
    "enum": _enum,
    "required": _required,
    "additionalProperties": _additional,
    "minimum": _minimum,
    "maximum": _maximum,
    "minItems": _min_items,
    "maxItems": _max_items,
    "uniqueItems": _unique,
    "format": _format,
}

_NOUNS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "a whole number",
          "number": "a number", "boolean": "true or false"}


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else type(value).__name__
