"""Specs are checked against the CRDs' own schema (kafka_offsets_model.openapi), read as the API server reads it,
and the parsers' defaults are the CRDs' defaults: the CRD and the parsers cannot drift."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.decisions.reset_spec import parse_reset_spec
from kafka_offset_operator.model.api import DELETION_KIND, POLICY_KIND
from kafka_offset_operator.model.crds import build_crds, spec_schema
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import Schema, SchemaCheck, without_cel_rules
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.policy_schema import ANALYSIS_FIELDS, PolicyFileSpec
from kafka_offsets_model.typed_schema import schema_of

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
KAFKA = {"bootstrapServers": "kafka:9092"}
SASL_TLS = {"bootstrapServers": "kafka:9093", "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "user"}},
            "tls": {"caSecretRef": {"name": "ca"}, "certSecretRef": {"name": "client"}}}
SECRETS = {"user": {"username": b"u", "password": b"p"}, "ca": {"ca.crt": b"CA"},
           "client": {"tls.crt": b"C", "tls.key": b"K"}}


def analysis_properties() -> Schema:
    """`spec.groups`, `spec.rules` and `spec.protect`: what the analysis applies, as the CRD carries them."""
    properties = schema_of(PolicyFileSpec)["properties"]
    return {name: properties[name] for name in ANALYSIS_FIELDS}


def read_secret(name: str) -> dict[str, bytes]:
    return SECRETS[name]


def same_meaning(parsed: Any, defaulted: Any) -> None:
    """The spec is kept raw in `kafka`: that one means the same once connection_from_spec resolves it."""
    assert connection_from_spec(parsed.kafka, read_secret) == connection_from_spec(defaulted.kafka, read_secret)
    assert dataclasses.replace(parsed, kafka={}) == dataclasses.replace(defaulted, kafka={})


def with_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """What the API server stores: every absent field with a default gets it, nested ones included."""
    if isinstance(value, dict):
        out = dict(value)
        for name, sub in (schema.get("properties") or {}).items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
            if name in out:
                out[name] = with_defaults(out[name], sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(item, schema["items"]) for item in value]
    return value


@pytest.mark.parametrize(
    "spec",
    [
        {"kafka": KAFKA},
        {"kafka": KAFKA, "groups": {}, "rules": {}, "protect": {}, "schedule": {}, "analysis": {}},
        {"kafka": KAFKA, "analysis": {"engine": "SparkApplication", "sparkApplication": {"driver": {}, "executor": {}}}},
        {"kafka": SASL_TLS},
    ],
)
def test_policy_parser_defaults_are_the_crds(spec: dict[str, Any]) -> None:
    defaulted = with_defaults(spec, spec_schema(POLICY_KIND))
    assert defaulted != spec  # the CRD does default something here
    same_meaning(parse_policy_spec(spec), parse_policy_spec(defaulted))


def test_deletion_parser_defaults_are_the_crds() -> None:
    spec = {"kafka": KAFKA, "group": "g", "topics": [{"name": "orders"}]}
    defaulted = with_defaults(spec, spec_schema(DELETION_KIND))
    assert defaulted["approved"] is False and defaulted["kafka"]["securityProtocol"] == "PLAINTEXT"
    same_meaning(parse_spec(spec), parse_spec(defaulted))


def test_the_crd_carries_the_analysis_schema_of_offset_expiry() -> None:
    crd = next(c for c in build_crds().values() if c["spec"]["names"]["kind"] == POLICY_KIND)
    properties = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {name: properties[name] for name in analysis_properties()} == analysis_properties()
    # The parsers check the same, less the CEL rules (the API server's): spec_schema says so.
    parsed = spec_schema(POLICY_KIND)["properties"]
    assert {name: parsed[name] for name in analysis_properties()} == {
        name: without_cel_rules(schema) for name, schema in analysis_properties().items()}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_parses(example: Path) -> None:
    doc = yaml.safe_load(example.read_text())
    if doc["kind"] == POLICY_KIND:
        assert parse_policy_spec(doc["spec"]).kafka["bootstrapServers"]
        assert parse_policy(doc["spec"]) == parse_policy_spec(doc["spec"]).policy
    elif doc["kind"] == "OffsetReset":
        assert parse_reset_spec(doc["spec"]).scope.topics
    else:
        assert parse_spec(doc["spec"]).topics


# -- the checker: what is not JSON Schema in a CRD schema


def error(check: SchemaCheck, value: Any) -> tuple[str, str]:
    with pytest.raises(SpecError) as info:
        check.check(value, "spec")
    assert "\n" not in str(info.value)
    return info.value.field, info.value.problem


def test_null_is_absent_unless_nullable() -> None:
    check = SchemaCheck({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "nullable": True}, "c": {"type": "integer"}}})
    assert check.check({"a": "x", "b": None, "c": None}, "spec") == {"a": "x", "b": None}
    assert error(check, {"a": None}) == ("spec.a", "is required")
    assert error(check, {"a": "x", "b": 3}) == ("spec.b", "3 is not a string")


def test_unknown_fields_are_refused_unless_preserved() -> None:
    check = SchemaCheck({"type": "object", "properties": {
        "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
    }})
    assert check.check({"open": {"a": "x", "more": 1}}, "spec") == {"open": {"a": "x", "more": 1}}
    assert error(check, {"closed": {"b": 1}}) == ("spec.closed.b", "unknown field (known: a)")


def test_list_types_refuse_duplicates_as_the_api_server_does() -> None:
    check = SchemaCheck({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "n"],
                "items": {"type": "object", "required": ["k", "n"],
                          "properties": {"k": {"type": "string"}, "n": {"type": "integer"}}}},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "integer"}},
    }})
    check.check({"set": [1, 2], "map": [{"k": "a", "n": 1}, {"k": "a", "n": 2}], "atomic": [1, 1]}, "spec")
    assert error(check, {"set": [1, 2, 1]}) == ("spec.set[2]", "1 is listed twice")
    assert error(check, {"map": [{"k": "a", "n": 1}, {"k": "a", "n": 1}]}) == ("spec.map[1]", "k='a', n=1 is listed twice")


def test_int_or_string() -> None:
    check = SchemaCheck({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}})
    check.check({"port": 80}, "spec")
    check.check({"port": "http"}, "spec")
    assert error(check, {"port": [80]})[0] == "spec.port"


def test_rules_the_checker_cannot_honour_are_refused_when_compiled() -> None:
    cel = {"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}], "properties": {}}
    with pytest.raises(ValueError, match="x-kubernetes-validations"):
        SchemaCheck({"type": "object", "properties": {"a": cel}})


def test_deletion_spec_messages() -> None:
    check = SchemaCheck(spec_schema(DELETION_KIND))
    spec = {"kafka": KAFKA, "group": "g", "topics": [{"name": "orders"}]}
    assert error(check, {**spec, "topics": [{"name": "a"}, {"name": "a"}]}) == ("spec.topics[1].name", "'a' is listed twice")
    assert error(check, {k: v for k, v in spec.items() if k != "kafka"}) == (
        "spec.kafka", "give spec.kafka or spec.policyRef")
    assert error(check, {**spec, "policyRef": {"name": "p"}}) == (
        "spec.policyRef", "give spec.kafka or spec.policyRef, not both")
    assert error(check, {**spec, "topics": [{"name": "a", "partitions": [2**31]}]}) == (
        "spec.topics[0].partitions[0]", "must be at most 2147483647, not 2147483648")
    assert error(check, {**spec, "topics": "orders"}) == ("spec.topics", "expected a list, got a string")
    assert error(check, {**spec, "kafka": {"bootstrapServers": "k:9092", "securityProtocol": "TLS"}}) == (
        "spec.kafka.securityProtocol", "'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
