"""Hostile specs, fast (many examples): specs of both kinds generated from the CRDs' schemas (valid ones, and
near misses with one thing wrong, tests/support/crd_strategies.py), given to every product function that
reads a spec. Each answers with a value or a SpecError naming a field of the spec, never another exception;
what a spec parser accepts, the functions that use it take without failing (the SparkApplication, the
canonical policy the analysis re-reads, keep-alive's lead, the backoff).

The slow, end-to-end half (specs applied through the emulated API to a running operator) is
tests/integration/operator/test_hostile_specs.py; docs/safety.md records how many were tried.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from crd_strategies import near_miss_specs, valid_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_offset_demo.api_validation import BadRequest, Invalid, ResourceSchema
from kafka_offset_operator.decisions import deletion_steps, keepalive, reset_steps, schedule, step_outcomes
from kafka_offset_operator.decisions import spark_application as spark_app
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.decisions.reset_spec import parse_reset_spec
from kafka_offset_operator.model.api import DELETION_KIND, POLICY_KIND, RESET_KIND
from kafka_offset_operator.model.crds import build_crds, spec_schema
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck
from kafka_offsets_model.policy import parse_policy

FAST = settings(max_examples=50, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

SECRET = {"username": b"user", "password": b"pass", "ca.crt": b"CA", "tls.crt": b"C", "tls.key": b"K"}
BAD_BYTES = {"username": b"\xff\xfe", "password": b"\xc3\x28", "ca.crt": b"", "tls.crt": b"\x00", "tls.key": b"K"}
POLICY_BODY = {"metadata": {"name": "p", "namespace": "kafka", "uid": "u"}}
OWNER = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy", "name": "p", "uid": "u"}


def read_secret(name: str) -> Mapping[str, bytes]:
    """Some Secrets exist, some hold bytes that are not text, some are missing."""
    found = (SECRET, BAD_BYTES, None)[len(name) % 3]
    if found is None:
        raise LookupError(name)
    return found


def named(error: SpecError, prefix: str) -> None:
    assert error.field.startswith(prefix), error.field
    assert error.problem and "\n" not in str(error), str(error)


def no_strimzi(plural: str, name: str) -> Mapping[str, Any]:
    """No Strimzi resource exists: a spec naming one is answered StrimziNotReady, naming the field."""
    raise LookupError(name)


def deletion_decisions(spec: Any) -> None:
    # Kopf's `when` filter reads the raw spec of every OffsetDeletion it sees, before anything is checked.
    deletion_steps.needs_work(spec, None)
    deletion_steps.needs_work(spec, {"phase": "Running", "target": {"spec": {"group": "g"}}})
    try:
        parsed = parse_spec(spec)
    except SpecError as exc:
        named(exc, "spec")
        return
    assert parsed.group and parsed.topics
    if parsed.kafka is not None:
        try:
            connection_from_spec(parsed.kafka, read_secret, read_resource=no_strimzi)
        except SpecError as exc:
            named(exc, "spec.kafka")
    assert isinstance(spec, Mapping)
    target = step_outcomes.target_of(spec, parsed.kafka or {}, "cluster", "kafka:9092")
    assert deletion_steps.frozen_fields(spec, {"target": target}) == []


def reset_decisions(spec: Any) -> None:
    reset_steps.needs_work(spec, None)
    reset_steps.needs_work(spec, {"phase": "Running", "target": {"spec": {"group": "g"}}})
    try:
        parsed = parse_reset_spec(spec)
    except SpecError as exc:
        named(exc, "spec")
        return
    assert parsed.group and (parsed.scope.all_topics or parsed.scope.topics)
    if parsed.kafka is not None:
        try:
            connection_from_spec(parsed.kafka, read_secret, read_resource=no_strimzi)
        except SpecError as exc:
            named(exc, "spec.kafka")
    assert isinstance(spec, Mapping)
    target = step_outcomes.target_of(spec, parsed.kafka or {}, "cluster", "kafka:9092")
    assert deletion_steps.frozen_fields(spec, {"target": target}) == []
    parse_reset_spec(yaml.safe_load(reset_steps.undo_of("ns", "r", target["spec"], "offset-backup-x")["manifest"])["spec"])


def policy_decisions(spec: Any) -> None:
    try:
        parsed = parse_policy_spec(spec)
    except SpecError as exc:
        named(exc, "spec")
        return
    try:
        settings = connection_from_spec(parsed.kafka, read_secret, read_resource=no_strimzi)
    except SpecError as exc:
        named(exc, "spec.kafka")
        settings = None
    # What the analysis runs with (a file or a ConfigMap the Spark job parses again) means the same.
    assert parse_policy(parsed.analysis_spec) == parsed.policy
    if settings is not None:
        spark_app.manifest(POLICY_BODY, OWNER, parsed, settings, "r1", image="img",
                           retention_ms=parsed.broker_retention_ms, now_ms=0)
    for retention in (parsed.broker_retention_ms or 1, 1, 7 * 86_400_000):
        assert 0 <= keepalive.lead_ms(retention, parsed.interval_ms) <= retention
    assert schedule.retry_delay_ms(40, 300, parsed.interval_ms) <= max(300, schedule.MAX_BACKOFF_MS)


# Each property runs twice: a few examples in the fast suite, many in the slow one (docs/safety.md gives the
# count tried). The examples are specs; TRIED counts them per test, for that record.
FEW, MANY = 50, 500
TRIED: dict[str, int] = {}
CASES: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "valid_deletion": (valid_specs(DELETION_KIND), lambda spec: deletion_decisions(spec)),
    "near_miss_deletion": (near_miss_specs(DELETION_KIND), lambda spec: deletion_decisions(spec)),
    "valid_reset": (valid_specs(RESET_KIND), lambda spec: reset_decisions(spec)),
    "near_miss_reset": (near_miss_specs(RESET_KIND), lambda spec: reset_decisions(spec)),
    "valid_policy": (valid_specs(POLICY_KIND), lambda spec: policy_decisions(spec)),
    "near_miss_policy": (near_miss_specs(POLICY_KIND), lambda spec: policy_decisions(spec)),
    # The analysis' own reader of policy files (`analyze --policy`) and of the ConfigMap a SparkApplication
    # run gets: the operator's sections are not its to check.
    "policy_file": (st.one_of(valid_specs(POLICY_KIND), near_miss_specs(POLICY_KIND)), lambda spec: policy_file(spec)),
}


def policy_file(spec: Any) -> None:
    try:
        parse_policy(spec)
    except SpecError as exc:
        named(exc, "spec")


def run_case(name: str, examples: int) -> None:
    strategy, check = CASES[name]
    TRIED[name] = 0

    @settings(FAST, max_examples=examples)
    @given(strategy)
    def prop(spec: Any) -> None:
        TRIED[name] += 1
        check(spec)

    prop()


@pytest.mark.parametrize("case", sorted(CASES))
def test_specs_are_parsed_or_refused_naming_the_field(case: str) -> None:
    run_case(case, FEW)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_many_specs_are_parsed_or_refused_naming_the_field(case: str) -> None:
    run_case(case, MANY)
    print(f"hostile specs tried ({case}): {TRIED[case]}")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)


# Built once per kind, not per example: spec_schema builds every CRD, SchemaCheck compiles a validator.
SPEC_CHECKS = {kind: SchemaCheck(spec_schema(kind)) for kind in (DELETION_KIND, RESET_KIND, POLICY_KIND)}


@FAST
@pytest.mark.parametrize("kind", [DELETION_KIND, RESET_KIND, POLICY_KIND])
@given(value=JSON)
def test_any_json_is_refused_naming_the_field(kind: str, value: Any) -> None:
    try:
        SPEC_CHECKS[kind].check(value, "spec")
    except SpecError as exc:
        named(exc, "spec")


RESOURCES = {crd["spec"]["names"]["kind"]: ResourceSchema.from_crd(crd, crd["spec"]["versions"][0])
             for crd in build_crds().values()}
ANY_SPEC = {kind: st.one_of(valid_specs(kind), near_miss_specs(kind)) for kind in (DELETION_KIND, RESET_KIND, POLICY_KIND)}


@FAST
@pytest.mark.parametrize("kind", [DELETION_KIND, RESET_KIND, POLICY_KIND])
@given(data=st.data())
def test_the_emulated_api_admits_or_refuses_with_a_status(kind: str, data: st.DataObject) -> None:
    """The emulated API server (which the end-to-end half applies specs through) answers every spec with
    the object it stores or a 422/400, as the API server does; what it stores, the operator parses or
    refuses naming the field."""
    spec = data.draw(ANY_SPEC[kind])
    obj = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    try:
        stored = RESOURCES[kind].admit(obj, None, None, True)
    except (Invalid, BadRequest):
        return
    {DELETION_KIND: deletion_decisions, RESET_KIND: reset_decisions, POLICY_KIND: policy_decisions}[kind](stored["spec"])


# -- what the properties found


@pytest.mark.parametrize("kind", [DELETION_KIND, POLICY_KIND])
def test_a_spec_that_is_not_a_mapping_is_an_invalid_spec_not_a_crash(kind: str) -> None:
    """Found by the near misses: Kopf's filter of OffsetDeletions (needs_work) read any spec as a mapping."""
    for spec in (True, "x", [], 0):
        assert deletion_steps.needs_work(spec, None)  # visited once, to say what is wrong
        with pytest.raises(SpecError, match=r"^spec: expected a mapping"):
            (parse_spec if kind == DELETION_KIND else parse_policy_spec)(spec)


def test_an_invalid_spec_of_its_own_waits_for_a_new_generation() -> None:
    """An OffsetDeletion whose own spec is invalid was visited every retry interval for ever (a GET and a
    parse each time: the retry loop of issue 9's finding 9). Only a new spec (a new generation) can fix it; a bad connection of the referenced
    policy can be fixed by editing the policy, so that one is still visited."""
    own = {"phase": "Pending", "observedGeneration": 2, "conditions": [
        {"type": "Degraded", "status": "True", "reason": "InvalidSpec", "message": "spec.group: must not be empty"}]}
    assert not deletion_steps.needs_work({"group": ""}, own, 2)
    assert deletion_steps.needs_work({"group": "g"}, own, 3)  # edited: look again
    policy_side = {**own, "conditions": [{**own["conditions"][0],
                                         "message": "ConsumerGroupOffsetPolicy p spec.kafka.bootstrapServers: bad"}]}
    assert deletion_steps.needs_work({"group": "g"}, policy_side, 2)


def test_a_secret_that_is_not_text_is_named_not_a_crash() -> None:
    """Found by the properties: a SASL password that is not UTF-8 raised UnicodeDecodeError."""
    kafka = {"bootstrapServers": "k:1", "securityProtocol": "SASL_PLAINTEXT",
             "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "s"}}}
    with pytest.raises(SpecError, match=r"^spec\.kafka\.sasl\.secretRef\.usernameKey: .* is not UTF-8 text$"):
        connection_from_spec(kafka, lambda name: BAD_BYTES)


@pytest.mark.parametrize("text", ["orders\n", "orders\n\n", "\norders"])
def test_a_trailing_newline_does_not_pass_a_pattern(text: str) -> None:
    """Found by the near misses: Python's `$` also matches before a final newline, the API server's (RE2)
    does not; the operator's check and the emulated API now read patterns as the API server does."""
    spec = {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "topics": [{"name": text}]}
    with pytest.raises(SpecError, match=r"^spec\.topics\[0\]\.name: .* is not a Kafka topic name"):
        parse_spec(spec)
    obj = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": DELETION_KIND, "metadata": {"name": "x"}, "spec": spec}
    with pytest.raises(Invalid, match=r"spec\.topics\[0\]\.name"):
        RESOURCES[DELETION_KIND].admit(obj, None, None, True)
