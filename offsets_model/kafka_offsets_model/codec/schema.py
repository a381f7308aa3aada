"""A small interpreter for Kafka message schemas (the shape of Kafka's JSON message specs, in Python).

A schema lists fields with the versions they exist in, which versions may hold null, and which are
tagged. Decoding yields plain dicts keyed by Kafka's own field names, holding only the fields that the
version has (so a v3 OffsetCommitValue has no `expireTimestamp`); tagged fields appear only when the
bytes carry them, and tags this code does not know are kept under `_unknownTaggedFields`, so that
encoding a decoded dict gives back the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from .wire import CodecError, Reader, Writer

UNKNOWN_TAGS = "_unknownTaggedFields"
_NO_DEFAULT = object()
_NON_NULLABLE_TYPES = frozenset({"int8", "int16", "int32", "int64", "bool", "uuid"})
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

FieldType = Union[str, "Struct", "Array"]


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Array:
    item: FieldType


@dataclass(frozen=True)
class Field:
    """One field. `until` is inclusive; `tag` makes it a tagged field of the flexible versions."""

    name: str
    type: FieldType
    since: int = 0
    until: int | None = None
    nullable_since: int | None = None
    default: Any = _NO_DEFAULT
    tag: int | None = None

    def in_version(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)

    def nullable(self, version: int) -> bool:
        return self.nullable_since is not None and version >= self.nullable_since


@dataclass(frozen=True)
class Message:
    """A versioned top-level schema: a record key, a record value, or an embedded protocol blob."""

    name: str
    struct: Struct
    min_version: int
    max_version: int
    flexible_since: int | None = None

    def flexible(self, version: int) -> bool:
        return self.flexible_since is not None and version >= self.flexible_since

    def check_version(self, version: int, reader: Reader | None = None, offset: int = 0) -> None:
        if not self.min_version <= version <= self.max_version:
            message = (
                f"unknown {self.name} version {version} "
                f"(known versions {self.min_version}..{self.max_version})"
            )
            if reader is not None:
                raise reader.error(message, offset)
            raise CodecError(message)

    def decode(self, reader: Reader, version: int) -> dict[str, Any]:
        return _decode_struct(self.struct, reader, version, self.flexible(version), self.name)

    def encode(self, writer: Writer, value: Mapping[str, Any], version: int, part: str) -> None:
        self.check_version(version)
        _encode_struct(self.struct, writer, value, version, self.flexible(version), part)


# Decoding runs a "plan" per (struct, version, flexible, path): the fields present in that version,
# each with a reader closure that already knows its type, nullability and error path. Plans are built on
# first use and cached, so the per-record work is the reading itself. The cache is keyed by id() for
# speed and holds the struct itself, so an id cannot be reused by another struct while its plan lives.
Decoder = Callable[[Reader], Any]
Plan = tuple[Struct, list[tuple[str, Decoder]], dict[int, tuple[str, Decoder]]]
_PLANS: dict[tuple[int, int, bool, str], Plan] = {}


def _decode_struct(st: Struct, r: Reader, version: int, flexible: bool, path: str) -> dict[str, Any]:
    plan = _PLANS.get((id(st), version, flexible, path))
    if plan is None:
        plan = _make_plan(st, version, flexible, path)
    _, untagged, tagged = plan
    out: dict[str, Any] = {}
    for name, read in untagged:
        out[name] = read(r)
    if flexible:
        spans = r.tagged_fields(path)
        if spans:
            unknown: dict[str, bytes] = {}
            for tag, (start, end) in spans.items():
                known = tagged.get(tag)
                if known is None:
                    unknown[str(tag)] = bytes(r.buf[start:end])
                    continue
                # Read the field in place, bounded by its size, so errors give the byte in the whole value.
                name, read = known
                sub = Reader(r.buf, r.part, start, end)
                out[name] = read(sub)
                sub.expect_end(f"{path}.{name} (tag {tag})")
            if unknown:
                out[UNKNOWN_TAGS] = unknown
    return out


def _make_plan(st: Struct, version: int, flexible: bool, path: str) -> Plan:
    untagged: list[tuple[str, Decoder]] = []
    tagged: dict[int, tuple[str, Decoder]] = {}
    for f in st.fields:
        if not f.in_version(version):
            continue
        read = _decoder(f.type, version, flexible, f.nullable(version), f"{path}.{f.name}", f.tag is not None)
        if f.tag is None:
            untagged.append((f.name, read))
        elif flexible:
            tagged[f.tag] = (f.name, read)
    plan = (st, untagged, tagged)
    _PLANS[(id(st), version, flexible, path)] = plan
    return plan


def _decoder(t: FieldType, version: int, flexible: bool, nullable: bool, path: str, tagged: bool) -> Decoder:
    """A closure that reads one value of type `t` (the cached form of the field's shape)."""
    if isinstance(t, str):
        if t == "int32":
            return lambda r: r.int32(path)
        if t == "int64":
            return lambda r: r.int64(path)
        if t == "string":
            return lambda r: r.string(path, flexible, nullable)
        if t == "int16":
            return lambda r: r.int16(path)
        if t == "int8":
            return lambda r: r.int8(path)
        if t == "bytes":
            return lambda r: r.bytes_(path, flexible, nullable)
        if t == "uuid":
            return lambda r: r.uuid(path)
        if t == "bool":
            return lambda r: r.boolean(path)
        raise AssertionError(f"unknown schema type {t}")
    if isinstance(t, Array):
        if t.item == "int32":
            return lambda r: r.int32_array(path, flexible, nullable)
        item = _decoder(t.item, version, flexible, False, path, False)
        return lambda r: r.array(path, flexible, nullable, item)
    struct = t

    def read_struct(r: Reader) -> Any:
        # A nullable struct starts with a presence marker. Kafka's generated readers
        # (MessageDataGenerator.generateStructReader) take an int8 (negative = null) in the struct's
        # place, and an unsigned varint (0 = null) inside a tagged field; its writers put 1 for present.
        if nullable and ((r.uvarint(path) == 0) if tagged else (r.int8(path) < 0)):
            return None
        return _decode_struct(struct, r, version, flexible, path)

    return read_struct


def _encode_struct(
    st: Struct, w: Writer, value: Mapping[str, Any], version: int, flexible: bool, path: str
) -> None:
    if not isinstance(value, Mapping):
        raise CodecError(f"{path}: expected an object, got {type(value).__name__}")
    tags: dict[int, bytes] = {}
    for f in st.fields:
        if not f.in_version(version):
            continue
        if f.tag is not None:
            if f.name in value:
                sub = Writer()
                _encode_value(
                    f.type,
                    sub,
                    value[f.name],
                    version,
                    flexible,
                    f.nullable(version),
                    f"{path}.{f.name}",
                    tagged=True,
                )
                tags[f.tag] = sub.getvalue()
            continue
        if f.name in value:
            v = value[f.name]
        elif f.default is not _NO_DEFAULT:
            v = f.default
        else:
            raise CodecError(f"{path}.{f.name}: missing (required in version {version})")
        _encode_value(f.type, w, v, version, flexible, f.nullable(version), f"{path}.{f.name}")
    if flexible:
        unknown = value.get(UNKNOWN_TAGS) or {}
        if not isinstance(unknown, Mapping):
            raise CodecError(f"{path}.{UNKNOWN_TAGS}: expected an object of tag number -> hex")
        for tag, raw in unknown.items():
            number = _tag_number(tag, f"{path}.{UNKNOWN_TAGS}")
            if number in tags or any(f.tag == number for f in st.fields):
                raise CodecError(f"{path}.{UNKNOWN_TAGS}: tag {number} is a known field of {st.name}")
            tags[number] = as_bytes(raw, f"{path}.{UNKNOWN_TAGS}.{tag}")
        w.tagged_fields(tags)


def _tag_number(tag: Any, path: str) -> int:
    if isinstance(tag, int) and not isinstance(tag, bool):
        number = tag
    elif isinstance(tag, str) and tag.isascii() and tag.isdigit():
        number = int(tag)
    else:
        raise CodecError(f"{path}: tag {tag!r} is not a number")
    if not 0 <= number <= 0x7FFFFFFF:
        raise CodecError(f"{path}: tag {number} is out of range")
    return number


def _encode_value(
    t: FieldType,
    w: Writer,
    v: Any,
    version: int,
    flexible: bool,
    nullable: bool,
    path: str,
    tagged: bool = False,
) -> None:
    if v is None and (not nullable or t in _NON_NULLABLE_TYPES):
        raise CodecError(f"{path}: null is not allowed here (version {version})")
    if isinstance(t, str):
        if t in _INT_RANGES:
            if not isinstance(v, int) or isinstance(v, bool):
                raise CodecError(f"{path}: expected an integer ({t}), got {v!r}")
            low, high = _INT_RANGES[t]
            if not low <= v <= high:
                raise CodecError(f"{path}: {v} does not fit in {t}")
            getattr(w, t)(v)
        elif t == "string":
            if v is not None and not isinstance(v, str):
                raise CodecError(f"{path}: expected a string, got {v!r}")
            try:
                w.string(v, flexible)
            except ValueError as exc:
                raise CodecError(f"{path}: {exc}") from None
        elif t == "bytes":
            w.bytes_(None if v is None else as_bytes(v, path), flexible)
        elif t == "uuid":
            try:
                w.uuid(v)
            except (ValueError, TypeError) as exc:
                raise CodecError(f"{path}: {exc}") from None
        elif t == "bool":
            if not isinstance(v, bool):
                raise CodecError(f"{path}: expected true or false, got {v!r}")
            w.boolean(v)
        else:
            raise AssertionError(f"unknown schema type {t}")
        return
    if isinstance(t, Array):
        if v is not None and not isinstance(v, (list, tuple)):
            raise CodecError(f"{path}: expected a list, got {type(v).__name__}")
        w.array_length(None if v is None else len(v), flexible)
        for i, item in enumerate(v or ()):
            _encode_value(t.item, w, item, version, flexible, False, f"{path}[{i}]")
        return
    if nullable:
        marker = w.uvarint if tagged else w.int8
        if v is None:
            marker(0 if tagged else -1)
            return
        marker(1)
    _encode_struct(t, w, v, version, flexible, path)


def as_bytes(v: Any, path: str) -> bytes:
    """Bytes fields accept bytes, or hex text as the CLI prints them."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        try:
            return bytes.fromhex(v)
        except ValueError:
            raise CodecError(f"{path}: {v[:40]!r} is not hex") from None
    raise CodecError(f"{path}: expected bytes or a hex string, got {type(v).__name__}")
