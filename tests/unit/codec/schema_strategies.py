"""Hypothesis strategies that build valid decoded values from the codec's own schemas.

Walking the schema (rather than hand-writing a strategy per record) means a field added to a schema
is generated, encoded and round-tripped without touching the tests.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from kafka_offsets_model.codec import RECORD_TYPES, schemas
from kafka_offsets_model.codec.schema import UNKNOWN_TAGS, Array, Message, Struct

_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}

# Short text keeps examples small; the alphabet includes multi-byte UTF-8.
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
UUIDS = st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="))


def _value(t: Any, version: int, flexible: bool, nullable: bool) -> st.SearchStrategy[Any]:
    if isinstance(t, str):
        if t in _INTS:
            bits = _INTS[t]
            base: st.SearchStrategy[Any] = st.integers(-(2**bits), 2**bits - 1)
        elif t == "string":
            base = TEXT
        elif t == "bytes":
            base = st.binary(max_size=12)
        elif t == "uuid":
            base = UUIDS
        elif t == "bool":
            base = st.booleans()
        else:
            raise AssertionError(t)
    elif isinstance(t, Array):
        base = st.lists(_value(t.item, version, flexible, False), max_size=3)
    else:
        base = struct_values(t, version, flexible)
    return st.none() | base if nullable else base


@st.composite
def _struct(draw: st.DrawFn, s: Struct, version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in s.fields:
        if not f.in_version(version):
            continue
        if f.tag is not None and not (flexible and draw(st.booleans())):
            continue  # tagged fields are optional
        out[f.name] = draw(_value(f.type, version, flexible, f.nullable(version)))
    if flexible and draw(st.booleans()):
        known = {f.tag for f in s.fields if f.tag is not None}
        tags = draw(st.lists(st.integers(0, 300).filter(lambda t: t not in known), max_size=2, unique=True))
        if tags:
            out[UNKNOWN_TAGS] = {str(t): draw(st.binary(max_size=4)) for t in tags}
    return out


def struct_values(s: Struct, version: int, flexible: bool) -> st.SearchStrategy[dict[str, Any]]:
    return _struct(s, version, flexible)


def message_values(m: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_values(m.struct, version, m.flexible(version))


@st.composite
def records(draw: st.DrawFn, *, consumer_protocol: bool = True) -> dict[str, Any]:
    """A decoded record of any type: supported values per schema, unsupported with raw bytes, or a
    tombstone. Classic consumer groups get decoded subscriptions/assignments when `consumer_protocol`."""
    type_id = draw(st.sampled_from(sorted(RECORD_TYPES)))
    rtype = RECORD_TYPES[type_id]
    rec: dict[str, Any] = {
        "type": rtype.name,
        "keyVersion": type_id,
        "key": draw(message_values(rtype.key_message, 0)),
    }
    if draw(st.integers(0, 9)) == 0:
        rec["valueVersion"], rec["value"] = None, None
    elif rtype.value is None:
        rec["valueVersion"] = draw(st.integers(0, 5))
        rec["value"] = {"_raw": draw(st.binary(max_size=20))}
    else:
        version = draw(st.integers(rtype.value.min_version, rtype.value.max_version))
        value = draw(message_values(rtype.value, version))
        if type_id == 2:
            value["protocolType"] = draw(st.sampled_from(["consumer", "connect", ""]))
            if value["protocolType"] == "consumer" and consumer_protocol:
                for member in value["members"]:
                    member["subscription"] = draw(_protocol("CONSUMER_PROTOCOL_SUBSCRIPTION"))
                    member["assignment"] = draw(_protocol("CONSUMER_PROTOCOL_ASSIGNMENT"))
            elif value["protocolType"] == "consumer":
                value["protocolType"] = "connect"
        rec["valueVersion"], rec["value"] = version, value
    if not rtype.supported:
        rec["unsupported"] = True
    return rec


@st.composite
def _protocol(draw: st.DrawFn, name: str) -> dict[str, Any]:
    schema: Message = getattr(schemas, name)
    version = draw(st.integers(0, schema.max_version))
    return {"version": version, **draw(message_values(schema, version))}
