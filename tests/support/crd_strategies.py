"""Hypothesis strategies for hostile specs, walked from the CRDs' own schemas (model/crds.py), so a field
added to a CRD is generated without touching the tests.

- `valid_specs(kind)`: specs the schema accepts (types, required fields, patterns, lengths, bounds, enums,
  kafka-or-policyRef), values drawn near the bounds on purpose: the longest durations, the largest
  integers, unicode and control characters where a string has no pattern. The CRD's CEL rules (the
  durations' cap, the partitions' total) are not modelled: some of these the API server refuses.
- `near_miss_specs(kind)`: a valid spec with one thing wrong where a real user (or a broken tool) gets it
  wrong: a wrong type, a missing required field, an unknown field, a pattern broken by a trailing newline or
  a space, one past a bound, a number too big for any integer, a duration past 10 years, a list item twice.

The walk is ours, not hypothesis-jsonschema's `from_schema`: its object strategy calls Hypothesis'
`many.more()`, which Hypothesis 6.170 no longer has (hypothesis-jsonschema 0.23.1 is the latest release), and
its regular-expression strings are too slow for the hundreds of examples per second the fast suite needs.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from kafka_offset_operator.model.crds import spec_schema

Schema = Mapping[str, Any]
# Lists are drawn short (their maxItems is tested by the near misses), strings with a generous cap: a
# group id may be 32767 characters, and one long one in a spec is as hostile as thousands.
MAX_LIST = 4
# Unicode, control characters and surrogate-free: what YAML and JSON can carry to the API.
HOSTILE_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)
# Strings with a pattern come from a pool of tricky values (edges of Kafka's and Kubernetes' grammars,
# characters that look alike), and from short random words, each kept where the pattern and lengths take it.
# (Hypothesis' regular-expression strategy is too slow for hundreds of examples a second.)
POOL = ["a", "-", "_", ".", "..", "...", "a.b", "A-Z_0.9", "x" * 249, "x" * 250, "k:9092", "k:0", "k:1", "k:65535",
        "k:65536", "k:99999999999999999999", "k:007", "a:1,b:2", "a:1,b:2,c:3", "[::1]:9092", "h\u00e9:9092",
        "\u0430:9092", "k:\uff19", "0", "1", "512m", "9g", "99999999999999999999t", "1K", "img", "repo/img:tag",
        "repo/img@sha256:" + "a" * 64, "\u00e9\u00e9", "sa", "a-b.c", "a" * 253, "x\u200bx", "x\u00a0x"]
WORDS = st.text(alphabet="abcxyzABC019._-:,/@", min_size=1, max_size=12)


def _patterned(pattern: str, low: int, high: int) -> st.SearchStrategy[str]:
    compiled = re.compile(pattern.replace("$", r"\Z"))  # the API server's $ (RE2): the end of the text

    def fits(text: str) -> bool:
        return low <= len(text) <= high and compiled.search(text) is not None

    pool = [p for p in POOL if fits(p)]
    return (st.sampled_from(pool) if pool else st.nothing()) | WORDS.filter(fits)


DURATIONS = st.sampled_from(["1ms", "0s", "7d", "3650d", "3649d23h59m59s999ms", "521w", "1d12h", "999999999ms"])


def _leaf(schema: Schema) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        edges = [v for v in (low, high) if v is not None]
        return st.sampled_from(edges) | st.integers(low, high) if edges else st.integers()
    if kind == "string":
        if str(schema.get("title", "")).startswith("duration"):
            return DURATIONS
        longest = st.just("x" * int(schema["maxLength"])) if "maxLength" in schema else st.nothing()
        if "pattern" not in schema:  # free text: hostile characters, and the longest allowed now and then
            return HOSTILE_TEXT.filter(lambda s: len(s) >= int(schema.get("minLength", 0))) | longest
        return _patterned(schema["pattern"], int(schema.get("minLength", 0)), int(schema.get("maxLength", 10**6)))
    raise AssertionError(f"no strategy for {schema!r}")


_KEYS = st.lists(st.text(min_size=1, max_size=10), max_size=3, unique=True)


@st.composite
def _object(draw: st.DrawFn, schema: Schema) -> dict[str, Any]:
    props: Mapping[str, Schema] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    one_of = [o["required"][0] for o in schema.get("oneOf") or ()]
    if one_of:
        required.add(draw(st.sampled_from(one_of)))
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if name in one_of and name not in required:
            continue
        if name in required or draw(st.booleans()):
            out[name] = draw(value(sub))
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping) and not props:
        keys = draw(_KEYS)
        out.update({k: draw(value(extra)) for k in keys})
    return out


def _array(schema: Schema) -> st.SearchStrategy[list[Any]]:
    items = schema.get("items") or {}
    low = int(schema.get("minItems", 0))
    high = min(int(schema.get("maxItems", MAX_LIST)), MAX_LIST)
    kind = schema.get("x-kubernetes-list-type", "atomic")
    if kind == "map":
        keys = tuple(schema["x-kubernetes-list-map-keys"])
        return st.lists(value(items), min_size=low, max_size=high, unique_by=lambda i: tuple(repr(i.get(k)) for k in keys))
    if kind == "set":
        return st.lists(value(items), min_size=low, max_size=high, unique_by=repr)
    return st.lists(value(items), min_size=low, max_size=high)


# One strategy per schema node, built once: Hypothesis validates a new strategy (its emptiness, its filters'
# lambdas read from their source) before its first draw, and the objects' composites drew a fresh one per
# field per example, which cost more than the specs' checks themselves (the slow run's ~290 s).
_BUILT: dict[int, tuple[Schema, st.SearchStrategy[Any]]] = {}


def value(schema: Schema) -> st.SearchStrategy[Any]:
    """Values `schema` accepts (CEL rules aside)."""
    built = _BUILT.get(id(schema))
    if built is not None and built[0] is schema:
        return built[1]
    if schema.get("type") == "object" or "properties" in schema:
        strategy: st.SearchStrategy[Any] = _object(schema)
    elif schema.get("type") == "array":
        strategy = _array(schema)
    else:
        strategy = _leaf(schema)
    _BUILT[id(schema)] = (schema, strategy)  # the schema kept alive, so its id is not reused
    return strategy


@functools.cache
def _spec_schema(kind: str) -> Schema:
    """`spec_schema` builds every CRD on each call: once per kind is enough."""
    return spec_schema(kind)


def valid_specs(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return value(_spec_schema(kind))  # type: ignore[no-any-return]


# -- near misses


def _paths(node: Any, schema: Schema, at: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], Schema]]:
    """Every place in a value, with the schema that governs it."""
    out = [(at, schema)]
    if isinstance(node, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in node.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else {})
            out += _paths(item, sub, (*at, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            out += _paths(item, schema.get("items") or {}, (*at, i))
    return out


def _wrong(draw: st.DrawFn, node: Any, schema: Schema) -> Any:
    """`node` with one thing wrong that its schema governs (or a value of another type)."""
    kind = schema.get("type")
    choices: list[Any] = [None, 0, -1, "", "x", [], {}, True, 1.5, 10**30, "\x00", {"a": 1}, ["a"]]
    if kind == "string":
        text = str(node)
        choices += [text + "\n", " " + text, text + " ", text.upper(), "\n", "\u202e" + text, text * 200]
        if "maxLength" in schema:
            choices.append("a" * (int(schema["maxLength"]) + 1))
        if "enum" in schema:
            choices += [str(e).lower() for e in schema["enum"]]
        if str(schema.get("title", "")).startswith("duration"):
            choices += ["99999999999999999999d", "3651d", "3650d1ms", "0", "7 days", "-1d", "1.5h", "1D",
                        "00000000000000000000000000001d", "9223372036854775807ms", "1d" * 16]
    elif kind == "integer":
        for bound, step in (("minimum", -1), ("maximum", 1)):
            if bound in schema:
                choices.append(int(schema[bound]) + step)
        choices += [2**63, -(2**63) - 1, 2**64, "1", 1.0]
    elif kind == "array":
        items = list(node or [])
        if items:
            choices += [[*items, copy.deepcopy(items[0])], [None], [items[0], {}]]
        if "maxItems" in schema:
            template = items[0] if items else "a"
            choices.append([copy.deepcopy(template) for _ in range(int(schema["maxItems"]) + 1)])
    elif kind == "object" and isinstance(node, dict):
        smaller = dict(node)
        for name in schema.get("required") or ():
            smaller.pop(name, None)
        choices += [smaller, {**node, "unknownField": 1}, {**node, "": None}]
        for option in schema.get("oneOf") or ():  # both, or neither
            choices.append({k: v for k, v in node.items() if k != option["required"][0]})
    return draw(st.sampled_from(choices))


@st.composite
def near_miss_specs(draw: st.DrawFn, kind: str) -> Any:
    """A valid spec with one place (the spec itself, a field, a list item) made wrong."""
    schema = _spec_schema(kind)
    spec = draw(valid_specs(kind))
    path, sub = draw(st.sampled_from(_paths(spec, schema)))
    bad = _wrong(draw, _get(spec, path), sub)
    if not path:
        return bad
    out = copy.deepcopy(spec)
    _get(out, path[:-1])[path[-1]] = bad
    return out


def _get(node: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        node = node[part]
    return node
