"""The emulated API server's admission of custom resources (kafka_offset_demo.api_validation): the CEL glue
(Kubernetes' libraries, transition rules, messages, errors), the API server's error wording, and our CRDs'
rules as it evaluates them: what is frozen once approved, the durations' cap (the same as the code's), the
bounds."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kafka_offset_demo.api_validation import (
    OMIT,
    BadRequest,
    CelRule,
    FieldError,
    Invalid,
    ResourceSchema,
    cel_context,
    cost_problems,
    go_value,
)
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.model.crds import build_crds
from kafka_offset_operator.model.kinds.common import MAX_PARTITIONS
from kafka_offset_operator.model.kinds.offset_deletion import FROZEN_MESSAGE
from kafka_offsets_model.durations import MAX_DURATION_LENGTH, MAX_DURATION_MS, parse_duration_ms
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy_schema import duration_rule

API = "kafkaoffsets.dev/v1alpha1"


def resource(kind: str) -> ResourceSchema:
    crd = next(c for c in build_crds().values() if c["spec"]["names"]["kind"] == kind)
    return ResourceSchema.from_crd(crd, crd["spec"]["versions"][0])


DELETIONS = resource("OffsetDeletion")
POLICIES = resource("ConsumerGroupOffsetPolicy")
DURATION_RULE = CelRule.compile(duration_rule(), "duration")


def deletion(**spec: Any) -> dict[str, Any]:
    base = {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "topics": [{"name": "orders"}]}
    return {"apiVersion": API, "kind": "OffsetDeletion", "metadata": {"name": "d"}, "spec": {**base, **spec}}


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ConsumerGroupOffsetPolicy", "metadata": {"name": "p"},
            "spec": {"kafka": {"bootstrapServers": "k:9092"}, **spec}}


def refusal(schema: ResourceSchema, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    with pytest.raises(Invalid) as info:
        schema.admit(obj, old)
    return [str(e) for e in info.value.errors]


def edit(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"].update(spec)
    return out


# -- the CEL glue


def rule(source: dict[str, Any]) -> CelRule:
    return CelRule.compile(source, "here")


def test_kubernetes_libraries_are_there() -> None:
    context = cel_context({"self": "1d12h"})
    assert rule({"rule": "self.findAll('[0-9]+[a-z]+') == ['1d', '12h']"}).program.execute(context) is True
    assert rule({"rule": "self.find('[a-z]+$') == 'h' && 'x'.find('[0-9]') == ''"}).program.execute(context) is True
    assert rule({"rule": "[1, 2, 3].sum() == 6 && 'abc'.indexOf('c') == 2"}).program.execute(context) is True


def test_a_transition_rule_is_known_by_oldSelf() -> None:
    assert rule({"rule": "self == oldSelf"}).transition
    assert not rule({"rule": "self.a > 0"}).transition


def test_messages_as_the_api_server_picks_them() -> None:
    failing = {"rule": "self.n < 3"}
    assert rule(failing).evaluate("spec", "object", {"n": 5}, None) == FieldError(
        "FieldValueInvalid", "spec", OMIT, "failed rule: self.n < 3")
    assert rule({**failing, "message": "too big"}).evaluate("spec", "object", {"n": 5}, None) == FieldError(
        "FieldValueInvalid", "spec", OMIT, "too big")
    with_expression = {**failing, "message": "too big", "messageExpression": "'n is ' + string(self.n)"}
    assert rule(with_expression).evaluate("spec", "object", {"n": 5}, None).detail == "n is 5"  # type: ignore[union-attr]
    broken = {**failing, "message": "too big", "messageExpression": "self.missing"}  # fails: message instead
    assert rule(broken).evaluate("spec", "object", {"n": 5}, None).detail == "too big"  # type: ignore[union-attr]
    placed = {**failing, "fieldPath": ".n", "reason": "FieldValueForbidden", "message": "no"}
    assert str(rule(placed).evaluate("spec", "object", {"n": 5}, None)) == "spec.n: Forbidden: no"
    assert rule(failing).evaluate("spec", "object", {"n": 1}, None) is None


def test_a_rule_that_cannot_evaluate_says_so() -> None:
    error = rule({"rule": "self.missing > 0", "message": "m"}).evaluate("spec", "object", {}, None)
    assert error is not None and error.detail.endswith("evaluating rule: m") and "missing" in error.detail


def test_a_rule_that_does_not_compile_names_its_place() -> None:
    with pytest.raises(ValueError, match=r"^here: Invalid value: 'self \+': compilation failed"):
        rule({"rule": "self +"})


def test_field_errors_read_as_kubectl_prints_them() -> None:
    assert str(FieldError("FieldValueInvalid", "spec", OMIT, "frozen")) == 'spec: Invalid value: frozen'
    assert str(FieldError("FieldValueRequired", "spec.group")) == "spec.group: Required value"
    assert str(FieldError("FieldValueTooMany", "spec.topics", 1001, "must have at most 1000 items")) == (
        "spec.topics: Too many: 1001: must have at most 1000 items")
    assert str(FieldError("FieldValueTooLong", "spec.group", "x" * 9, "may not be longer than 8")) == (
        "spec.group: Too long: may not be longer than 8")
    assert go_value({"name": "a"}) == '{"name":"a"}' and go_value(None) == "null" and go_value(True) == "true"


def test_invalid_is_the_api_servers_status() -> None:
    error = Invalid("kafkaoffsets.dev", "OffsetDeletion", "d", [FieldError("FieldValueInvalid", "spec", OMIT, "x")])
    assert error.message == 'OffsetDeletion.kafkaoffsets.dev "d" is invalid: spec: Invalid value: x'
    assert error.details() == {"name": "d", "group": "kafkaoffsets.dev", "kind": "OffsetDeletion", "causes": [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: x', "field": "spec"}]}
    two = Invalid("g", "K", "n", [FieldError("FieldValueRequired", "a"), FieldError("FieldValueRequired", "b")])
    assert two.message == 'K.g "n" is invalid: [a: Required value, b: Required value]'


def test_the_cost_check_wants_bounds_where_a_rule_reaches() -> None:
    unbounded = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [{"rule": "size(self.names) < 3"}],
        "properties": {"names": {"type": "array", "items": {"type": "string", "maxLength": 3}}}}}}
    assert "reaches spec.validation.openAPIV3Schema.properties[spec].properties[names]" in cost_problems(unbounded)[0]
    under = {"type": "array", "items": {"type": "string", "maxLength": 9, "x-kubernetes-validations": [{"rule": "self != ''"}]}}
    assert "runs once per item of spec.validation.openAPIV3Schema" in cost_problems(under)[0]
    for crd in build_crds().values():  # ours pass (and so register in the emulator)
        assert cost_problems(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]) == []


# -- what the API server does before it validates


def test_defaults_are_filled_in_and_unknown_fields_and_nulls_dropped() -> None:
    stored = POLICIES.admit({**policy(mode=None, bogus=1), "status": {"x": 1}}, None)
    assert "bogus" not in stored["spec"] and "status" not in stored  # a create cannot set status
    assert stored["spec"]["mode"] == "DryRun" and stored["spec"]["schedule"] == {"interval": "1h"}
    assert stored["spec"]["kafka"]["securityProtocol"] == "PLAINTEXT"
    with pytest.raises(BadRequest, match=re.escape('strict decoding error: unknown field "spec.bogus"')):
        POLICIES.admit(policy(bogus=1), None, strict=True)


def test_status_subresource() -> None:
    old = {**DELETIONS.admit(deletion(), None), "status": {"phase": "Running"}}
    written = DELETIONS.admit({**edit(old, restore=True), "status": {"phase": "Failed"}}, old)
    assert written["status"] == {"phase": "Running"} and written["spec"]["restore"] is True
    status = DELETIONS.admit({**edit(old, restore=True), "status": {"phase": "Failed"}}, old, subresource="status")
    assert status["status"] == {"phase": "Failed"} and status["spec"]["restore"] is False
    with pytest.raises(Invalid, match=re.escape('status.phase: Unsupported value: "Lost"')):
        DELETIONS.admit({**old, "status": {"phase": "Lost"}}, old, subresource="status")


# -- our CRDs' rules


def test_an_approved_deletion_is_frozen_but_for_restore() -> None:
    draft = DELETIONS.admit(deletion(), None)
    assert DELETIONS.admit(edit(draft, group="other"), draft)["spec"]["group"] == "other"  # not approved yet
    approved = DELETIONS.admit(edit(draft, approved=True), draft)
    frozen = f'spec: Invalid value: {FROZEN_MESSAGE}'
    assert refusal(DELETIONS, edit(approved, group="other"), approved) == [frozen]
    assert refusal(DELETIONS, edit(approved, topics=[{"name": "orders", "partitions": [0]}]), approved) == [frozen]
    assert refusal(DELETIONS, edit(approved, expectedOffsets=[{"topic": "orders", "partition": 0, "offset": 1}]),
                   approved) == [frozen]
    assert refusal(DELETIONS, edit(approved, kafka={"bootstrapServers": "elsewhere:9092"}), approved) == [frozen]
    moved = edit(approved, policyRef={"name": "p"})
    del moved["spec"]["kafka"]
    assert refusal(DELETIONS, moved, approved) == [frozen]
    assert refusal(DELETIONS, edit(approved, approved=False), approved) == [
        'spec.approved: Invalid value: cannot be set back to false once true: delete the OffsetDeletion '
        "to cancel it"]
    assert DELETIONS.admit(edit(approved, restore=True), approved)["spec"]["restore"] is True
    # Only what is stored counts: the same topics in another order are the same topics (a map list).
    two = DELETIONS.admit(deletion(topics=[{"name": "a"}, {"name": "b"}], approved=True), None)
    DELETIONS.admit(edit(two, topics=[{"name": "b"}, {"name": "a"}]), two)


def test_a_status_write_is_not_refused_for_an_old_invalid_spec() -> None:
    """Ratcheting: what a write leaves as it was is not held against it."""
    old = {**policy(mode="Sometimes"), "status": {}}
    assert POLICIES.admit({**old, "status": {"observedGeneration": 1}}, old, subresource="status")["status"] == {
        "observedGeneration": 1}
    assert refusal(POLICIES, edit(old, mode="Never"), old)[0].startswith('spec.mode: Unsupported value: "Never"')


@pytest.mark.parametrize("value", ["1s", "500ms", "7d", "1d12h", "3650d", "521w3d", "315360000000ms", "87600h",
                                   "3649d23h59m59s999ms"])
def test_durations_up_to_ten_years_pass(value: str) -> None:
    assert parse_duration_ms(value) <= MAX_DURATION_MS
    interval = value if parse_duration_ms(value) >= 60_000 else "1m"  # schedule.interval: at least a minute
    POLICIES.admit(policy(rules={"emptyGroupRetention": value}, schedule={"interval": interval}), None)


@pytest.mark.parametrize("value", ["0s", "1s", "0ms", "59s", "59999ms", "0d0h0m59s"])
def test_an_interval_under_a_minute_is_refused_by_the_rule_and_the_code(value: str) -> None:
    assert refusal(POLICIES, policy(schedule={"interval": value})) == [
        f'spec.schedule.interval: Invalid value: "{value}": must be at least 1m, not {value}']
    with pytest.raises(SpecError, match="must be at least 1m"):
        parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "schedule": {"interval": value}})


@pytest.mark.parametrize("value", ["1m", "60s", "60000ms", "59s1000ms", "3650d"])
def test_an_interval_of_a_minute_or_more_passes(value: str) -> None:
    POLICIES.admit(policy(schedule={"interval": value}), None)
    assert parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "schedule": {"interval": value}}).interval_ms >= 60_000


def test_an_absurd_interval_gets_the_caps_message_alone() -> None:
    """The minimum's rule lets a part too large to multiply pass, for the cap's rule to refuse."""
    assert refusal(POLICIES, policy(schedule={"interval": "99999999999999999999d"})) == [
        'spec.schedule.interval: Invalid value: "99999999999999999999d": must be at most 3650d (10 years), not 99999999999999999999d']


@pytest.mark.parametrize("value", ["3651d", "521w4d", "3650d1ms", "315360000001ms", "99999999999999999999d",
                                   "9999999999999999999w9999999999999w", "1d" * 16 + "3635d"])
def test_durations_over_ten_years_are_refused_by_the_rule_and_the_code(value: str) -> None:
    with pytest.raises(ValueError, match="longer than 3650d"):
        parse_duration_ms(value)
    errors = refusal(POLICIES, policy(rules={"standaloneRetention": value}), None)
    assert errors == [f'spec.rules.standaloneRetention: Invalid value: "{value}": must be at most 3650d (10 years), '
                      f"not {value}"] or errors[0].startswith("spec.rules.standaloneRetention: Too long")


def test_a_duration_is_at_most_so_long_to_write() -> None:
    """The API server's bound for the rule's cost; the code has no need for it."""
    assert refusal(POLICIES, policy(schedule={"interval": "1d" * 17}))[0] == (
        "spec.schedule.interval: Too long: may not be longer than 32")


def test_bad_values_name_the_field() -> None:
    assert refusal(POLICIES, policy(mode="Sometimes")) == [
        'spec.mode: Unsupported value: "Sometimes": supported values: "DryRun", "Approve", "Auto"',
        '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation"]
    assert refusal(POLICIES, policy(kafka={"bootstrapServers": "no-port"}))[0].startswith(
        'spec.kafka.bootstrapServers: Invalid value: "no-port": spec.kafka.bootstrapServers in body should match')
    assert refusal(POLICIES, policy(groups={"include": ["x"] * 101}))[0] == (
        "spec.groups.include: Too many: 101: must have at most 100 items")
    assert refusal(DELETIONS, deletion(group="g" * 40000))[0] == "spec.group: Too long: may not be longer than 32767"
    assert refusal(DELETIONS, deletion(topics=[{"name": f"t{i}"} for i in range(1001)]))[0] == (
        "spec.topics: Too many: 1001: must have at most 1000 items")
    assert refusal(DELETIONS, deletion(topics=[{"name": "a"}, {"name": "a"}])) == [
        'spec.topics[1]: Duplicate value: {"name":"a"}']
    assert refusal(DELETIONS, {**deletion(), "spec": {"group": "g", "topics": [{"name": "a"}]}}) == [
        "spec: Invalid value: \"object\": spec in body must validate one and only one schema (oneOf)"]
    assert refusal(DELETIONS, deletion(group=None))[0] == "spec.group: Required value"


def test_a_deletion_lists_at_most_so_many_partitions() -> None:
    half = list(range(MAX_PARTITIONS // 2))
    DELETIONS.admit(deletion(topics=[{"name": "a", "partitions": half}, {"name": "b", "partitions": half}]), None)
    assert refusal(DELETIONS, deletion(topics=[{"name": "a", "partitions": half}, {"name": "b", "partitions": [*half, -1 + 10**6]},
                                                {"name": "c", "partitions": [0]}])) == [
        f'spec.topics: Invalid value: lists more than {MAX_PARTITIONS} partitions in all: split the deletion '
        "into several OffsetDeletions"]


def test_the_root_fields_are_the_api_servers() -> None:
    """A CRD whose schema leaves out apiVersion, kind and metadata (spark-operator's stand-in) still admits them."""
    crd = {"metadata": {"name": "things.example.com"}, "spec": {"group": "example.com", "names": {"kind": "Thing"}}}
    version = {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
    thing = ResourceSchema.from_crd(crd, version)
    stored = thing.admit({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
                          "spec": {"anything": [1]}, "extra": 1}, None)
    assert stored == {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"anything": [1]}}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4000) | st.integers(0, 315360000001) | st.integers(0, 10**15), st.sampled_from(["ms", "s", "m", "h", "d", "w"])), min_size=1, max_size=6))
def test_the_durations_rule_and_the_code_agree(parts: list[tuple[int, str]]) -> None:
    """The CRD's CEL cap and parse_duration_ms refuse the same durations (of the lengths the CRD admits)."""
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assume(len(text) <= MAX_DURATION_LENGTH)
    try:
        within = parse_duration_ms(text) <= MAX_DURATION_MS
    except ValueError:
        within = False
    assert (DURATION_RULE.evaluate("spec.x", "string", text, None) is None) == within, text


@pytest.mark.parametrize(("kafka", "message"), [
    ({"securityProtocol": "PLAINTEXT"}, "set either bootstrapServers or strimzi"),
    ({"bootstrapServers": "k:9092", "strimzi": {"kafka": "events"}}, "set either bootstrapServers or strimzi"),
    ({"strimzi": {"kafka": "events"}, "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "s"}}}, "remove sasl and tls"),
])
def test_the_connection_names_brokers_or_a_strimzi_cluster_not_both(kafka: dict[str, Any], message: str) -> None:
    for schema, obj in ((DELETIONS, deletion(kafka=kafka)), (POLICIES, policy(kafka=kafka))):
        with pytest.raises(Invalid) as caught:
            schema.admit(obj, None)
        assert message in str(caught.value)
    assert DELETIONS.admit(deletion(kafka={"strimzi": {"kafka": "events", "user": "u"}}), None)
