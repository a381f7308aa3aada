"""A resource's fields written once, as frozen dataclasses, from which both its OpenAPI schema (what a CRD
carries, `kubectl explain` reads and the API server checks) and its parsed value come.

The idea is controller-gen's (kubebuilder), where Go types with marker comments generate a CRD: here a
dataclass's fields, in order, are the object's properties; their Python types give the OpenAPI types (str,
int, bool, tuple[X, ...] as an array of X, a nested dataclass as an object, `X | None` as an optional field);
and markers in `typing.Annotated` metadata give the rest, in the order they are written:

    group: Annotated[str, Check(minLength=1, maxLength=253), Doc("The consumer group id.")]

- `Doc(text)`: the field's description (what `kubectl explain` shows). A dataclass's docstring is the
  description of an object of its type when the field gives none.
- `Check(**keywords)`: OpenAPI keywords as the API server reads them (pattern, maxLength, minimum, title,
  format, ...), copied into the schema where they stand.
- `Default(value)`: the schema's default, which the API server fills in, and the value `parse` gives an
  absent field (a spec that skipped defaulting, such as a file, means the same).
- `ListMap(*keys)`: a list whose items are keyed (`x-kubernetes-list-type: map`).
- `Rule(cel, message, field_path)`: a CEL rule (`x-kubernetes-validations`), on a field or, with `@rules`,
  on an object; `FrozenOnceApproved` is a rule written from the object's own fields (every field keeps its
  value once `approved` was true), so a field added later is frozen too.
- `Raw(schema)`: a field whose schema is written elsewhere (shared by several kinds); its value stays the
  mapping it was.
- `OneOfRequired(*names)` (with `@rules`): exactly one of these fields is given.
- `Json(name)`: the field's JSON name, where it is not its Python name in camelCase (`policy_ref`:
  `policyRef`).

A field without a default is required. `schema_of(cls)` writes the schema; `parse(cls, value)` builds the dataclass from a value
already checked against that schema (kafka_offsets_model.openapi.SchemaCheck), so parsing never meets a
wrong type, and only what a schema cannot say is left to the caller.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from .openapi import Schema

T = TypeVar("T")


@dataclass(frozen=True)
class Doc:
    text: str


class Check:
    """OpenAPI keywords, in the order given (which is their order in the written schema)."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords


@dataclass(frozen=True)
class Json:
    """The field's JSON name, where it is not the camelCase of its Python name."""

    name: str


@dataclass(frozen=True, eq=False)  # compared (and hashed) as itself: a default may be a dict
class Default:
    value: Any


@dataclass(frozen=True)
class ListMap:
    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)


@dataclass(frozen=True)
class Rule:
    rule: str
    message: str
    field_path: str | None = None

    def schema(self) -> Schema:
        out: Schema = {"rule": self.rule}
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        out["message"] = self.message
        return out


@dataclass(frozen=True, eq=False)  # compared (and hashed) as itself: a schema is a dict
class Raw:
    schema: Schema


@dataclass(frozen=True)
class OneOfRequired:
    names: tuple[str, ...]

    def __init__(self, *names: str) -> None:
        object.__setattr__(self, "names", names)


@dataclass(frozen=True)
class FrozenOnceApproved:
    """Transition rules (they read oldSelf, so the API server evaluates them on updates only): once
    spec.approved was true, every field but `mutable` keeps its value, and approved stays true. Written field
    by field because CEL cannot iterate a structured object's fields. An optional field must stay absent or
    keep its value."""

    mutable: tuple[str, ...]
    message: str
    kind: str

    def schemas(self, properties: Mapping[str, Any], required: tuple[str, ...]) -> list[Schema]:
        same = []
        for name in properties:
            if name in (*self.mutable, "approved"):
                continue
            if name in required:
                same.append(f"self.{name} == oldSelf.{name}")
            else:
                same.append(f"has(self.{name}) == has(oldSelf.{name}) && "
                            f"(!has(self.{name}) || self.{name} == oldSelf.{name})")
        approved_before = "!has(oldSelf.approved) || !oldSelf.approved"
        return [
            {"rule": f"{approved_before} || ({' && '.join(same)})", "message": self.message},
            {
                "rule": f"{approved_before} || (has(self.approved) && self.approved)",
                "fieldPath": ".approved",
                "message": f"cannot be set back to false once true: delete the {self.kind} to cancel it",
            },
        ]


ObjectMarker = Rule | OneOfRequired | FrozenOnceApproved
_OBJECT_MARKERS = "__schema_rules__"


def rules(*markers: ObjectMarker) -> Callable[[type[T]], type[T]]:
    """An object's own markers (its CEL rules, which of its fields are alternatives), in order."""

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, _OBJECT_MARKERS, markers)
        return cls

    return mark


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _description(cls: type[Any]) -> str | None:
    """The docstring a person wrote (a dataclass without one gets a generated signature)."""
    doc = cls.__doc__
    if not doc or doc.startswith(f"{cls.__name__}("):
        return None
    return " ".join(doc.split())


def _split(hint: Any) -> tuple[Any, list[Any], bool]:
    """(the bare type, its markers, whether None is allowed)."""
    markers: list[Any] = []
    optional = False
    while True:
        if typing.get_origin(hint) is Annotated:
            inner, *extra = typing.get_args(hint)
            markers = [*extra, *markers]  # an alias's markers come before the field's own
            hint = inner
            continue
        if typing.get_origin(hint) in (types.UnionType, typing.Union):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(args) == 1 and len(args) < len(typing.get_args(hint)):
                optional = True
                hint = args[0]
                continue
        return hint, markers, optional


@functools.cache
def _split_once(hint: Any) -> tuple[Any, list[Any], bool]:
    """`_split`, once per type: `parse` meets the same few types for every value."""
    return _split(hint)


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:  # a dataclass (Any: functools.cache types its argument Hashable)
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _fields(cls: Any) -> tuple[tuple[str, str, Any, Default | None], ...]:
    """Each field's Python name, JSON name, type and Default marker, read once per class."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        markers = _split(hints[f.name])[1]
        override = next((m for m in markers if isinstance(m, Json)), None)
        default = next((m for m in markers if isinstance(m, Default)), None)
        out.append((f.name, override.name if override is not None else _camel(f.name), hints[f.name], default))
    return tuple(out)


_SCALARS = {str: "string", int: "integer", bool: "boolean"}


def _schema(hint: Any, doc: str | None = None) -> Schema:
    bare, markers, _ = _split(hint)
    raw = next((m for m in markers if isinstance(m, Raw)), None)
    if raw is not None:
        return dict(raw.schema)
    field_doc = next((m.text for m in reversed(markers) if isinstance(m, Doc)), doc)
    keywords: Schema = {}
    for marker in markers:
        if isinstance(marker, Check):
            keywords.update(marker.keywords)
        elif isinstance(marker, Default):
            keywords["default"] = marker.value
        elif isinstance(marker, ListMap):
            keywords["x-kubernetes-list-type"] = "map"
            keywords["x-kubernetes-list-map-keys"] = list(marker.keys)
        elif isinstance(marker, Rule):
            keywords.setdefault("x-kubernetes-validations", []).append(marker.schema())
    if dataclasses.is_dataclass(bare):
        return _object(typing.cast(type[Any], bare), keywords, field_doc)
    if typing.get_origin(bare) is tuple:
        item, _ellipsis = typing.get_args(bare)
        out: Schema = {"type": "array", **keywords}
        if field_doc is not None:
            out["description"] = field_doc
        out["items"] = _schema(item)
        return out
    if bare not in _SCALARS:
        raise TypeError(f"no OpenAPI type for {bare!r}: give it a Raw schema")
    out = {"type": _SCALARS[bare], **keywords}
    if field_doc is not None:
        out["description"] = field_doc
    return out


def _object(cls: type[Any], keywords: Schema, doc: str | None) -> Schema:
    properties: Schema = {}
    required: list[str] = []
    defaults = {f.name for f in dataclasses.fields(cls)
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    for field, name, hint, _default in _fields(typing.cast(Any, cls)):
        properties[name] = _schema(hint)
        if field not in defaults:
            required.append(name)
    out: Schema = {"type": "object", **keywords}
    description = doc if doc is not None else _description(cls)
    if description is not None:
        out["description"] = description
    if required:
        out["required"] = required
    validations: list[Schema] = []
    for marker in getattr(cls, _OBJECT_MARKERS, ()):
        if isinstance(marker, OneOfRequired):
            out["oneOf"] = [{"required": [name]} for name in marker.names]
        elif isinstance(marker, FrozenOnceApproved):
            validations += marker.schemas(properties, tuple(required))
        else:
            validations.append(marker.schema())
    if validations:
        out["x-kubernetes-validations"] = validations
    out["properties"] = properties
    return out


def schema_of(cls: type[Any]) -> Schema:
    """The OpenAPI schema of an object of this dataclass, as a CRD carries it."""
    return _object(cls, {}, None)


def parse(cls: type[T], value: Mapping[str, Any]) -> T:
    """The dataclass of a value already checked against `schema_of(cls)` (absent fields: their Default
    marker's value, else the dataclass's default)."""
    given: dict[str, Any] = {}
    for field, name, hint, default in _fields(typing.cast(Any, cls)):
        if value.get(name) is not None:
            given[field] = _value(hint, value[name])
        elif default is not None:
            given[field] = _value(hint, default.value)
    return cls(**given)


def _value(hint: Any, value: Any) -> Any:
    bare, markers, _ = _split_once(hint)
    if any(isinstance(m, Raw) for m in markers):
        return value
    if dataclasses.is_dataclass(bare):
        return parse(typing.cast(type[Any], bare), value)
    if typing.get_origin(bare) is tuple:
        item = typing.get_args(bare)[0]
        return tuple(_value(item, v) for v in value)
    return value
