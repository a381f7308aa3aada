"""The shipped ValidatingAdmissionPolicy (manifests/components/admission-policy, the chart's copy) evaluated
with a CEL interpreter (cel-rust, the `common-expression-language` package the emulated API server uses
too) on emulated admission requests: `object`, `oldObject` (null on CREATE), `request.operation` and
`request.userInfo.username`, its variables first, then each validation, as the API server does
(k8s.io/apiserver/pkg/admission/plugin/policy/validating). Proves who may approve and who may ask until the
real API server harness runs the same cases (tests/integration/operator/test_admission_real_api.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

from kafka_offset_operator.model.admission import (
    NAME,
    validating_admission_policy,
    validating_admission_policy_binding,
)

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "manifests" / "components" / "admission-policy" / "admission-policy.yaml"
CHART_COPY = ROOT / "charts" / "kafka-offset-operator" / "files" / "admission-policy.yaml"

ALICE, BOB, OPERATOR = "alice", "bob", "system:serviceaccount:kafka-offset-operator:kafka-offset-operator"


def shipped() -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = yaml.safe_load_all(SHIPPED.read_text())
    return policy, binding


def admit(operation: str, user: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The messages of the validations that refuse the request (empty: admitted)."""
    policy, _ = shipped()
    spec = policy["spec"]
    request = {"operation": operation, "userInfo": {"username": user, "groups": ["system:authenticated"]}}
    base = {"object": new, "oldObject": old, "request": request}
    variables: dict[str, Any] = {}
    for variable in spec["variables"]:  # in order: a variable may read the ones before it
        context = cel.Context()
        for key, value in {**base, "variables": dict(variables)}.items():
            context.add_variable(key, value)
        variables[variable["name"]] = cel.evaluate(variable["expression"], context)
    refused = []
    for validation in spec["validations"]:
        context = cel.Context()
        for key, value in {**base, "variables": variables}.items():
            context.add_variable(key, value)
        if cel.evaluate(validation["expression"], context) is not True:
            text = (cel.evaluate(validation["messageExpression"], context) if "messageExpression" in validation
                    else validation["message"])
            refused.append(str(text))
    return refused


def deletion(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "OffsetDeletion",
            "metadata": {"name": "old-orders", "namespace": "team-a"},
            "spec": {"policyRef": {"name": "p"}, "group": "reporting", "topics": [{"name": "orders"}],
                     "approved": False, **spec}}


def approved(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"].update(approved=True, **spec)
    return out


# -- the artifact


def test_the_shipped_files_are_the_models_policy_and_binding() -> None:
    assert shipped() == (validating_admission_policy(), validating_admission_policy_binding())
    assert CHART_COPY.read_text() == SHIPPED.read_text()


def test_it_is_a_v1_policy_bound_with_deny_on_both_kinds_without_params() -> None:
    policy, binding = shipped()
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert binding["spec"] == {"policyName": NAME, "validationActions": ["Deny"]}
    assert "paramKind" not in policy["spec"] and policy["spec"]["failurePolicy"] == "Fail"
    rule = policy["spec"]["matchConstraints"]["resourceRules"][0]
    # The status subresource is not matched: the operator's status writes approve nothing.
    assert rule["resources"] == ["offsetdeletions", "offsetresets"] and rule["operations"] == ["CREATE", "UPDATE"]
    assert {v["reason"] for v in policy["spec"]["validations"]} <= {"Forbidden", "Invalid"}


# -- approvals


def test_an_approval_naming_the_approver_is_admitted() -> None:
    old = deletion()
    assert admit("UPDATE", ALICE, approved(old, approvedBy=ALICE), old) == []


@pytest.mark.parametrize(("change", "why"), [
    ({"approvedBy": BOB}, "naming someone else"),
    ({}, "without approvedBy"),
])
def test_an_approval_not_naming_the_sender_is_refused(change: dict[str, Any], why: str) -> None:
    old = deletion()
    refused = admit("UPDATE", ALICE, approved(old, **change), old)
    assert refused == ["spec.approvedBy must be your user name, alice, set together with spec.approved: true "
                       "(the API server records who approves)"], why


def test_a_create_that_is_approved_already_must_name_its_sender() -> None:
    assert admit("CREATE", OPERATOR, approved(deletion(), approvedBy=OPERATOR, requestedBy=OPERATOR)) == []
    assert len(admit("CREATE", ALICE, approved(deletion(), approvedBy=BOB))) == 1


def test_approvedby_cannot_be_put_in_someone_elses_name_before_the_approval_either() -> None:
    old = deletion()
    assert len(admit("UPDATE", ALICE, deletion(approvedBy=BOB), old)) == 1
    assert admit("UPDATE", ALICE, deletion(approvedBy=ALICE), old) == []


def test_writes_that_approve_nothing_are_admitted() -> None:
    """The operator's finalizer and label patches, an edit of an unapproved proposal, a re-apply of an
    approved object by GitOps: nothing turns approved true and approvedBy stays as it was."""
    old = approved(deletion(), approvedBy=BOB)
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["finalizers"] = ["kopf.zalando.org/KopfFinalizerMarker"]
    assert admit("UPDATE", OPERATOR, relabelled, old) == []
    assert admit("UPDATE", ALICE, deletion(topics=[{"name": "payments"}]), deletion()) == []
    assert admit("CREATE", ALICE, deletion()) == []


# -- requesters


def test_a_create_may_name_only_its_sender_as_requester() -> None:
    assert admit("CREATE", ALICE, deletion(requestedBy=ALICE)) == []
    assert admit("CREATE", ALICE, deletion(requestedBy=BOB)) == [
        "spec.requestedBy must be your user name, alice, or be left out"]


def test_the_operators_proposals_name_the_operator() -> None:
    assert admit("CREATE", OPERATOR, deletion(requestedBy=OPERATOR, separateApprover=True)) == []


# -- four eyes


def test_four_eyes_refuse_the_requesters_own_approval() -> None:
    old = deletion(requestedBy=ALICE, separateApprover=True)
    assert admit("UPDATE", ALICE, approved(old, approvedBy=ALICE), old) == [
        "four eyes (spec.separateApprover): the requester (spec.requestedBy) may not approve; another user must"]
    assert admit("UPDATE", BOB, approved(old, approvedBy=BOB), old) == []


def test_four_eyes_need_a_requester_at_creation() -> None:
    assert admit("CREATE", ALICE, deletion(separateApprover=True)) == [
        "spec.separateApprover (four eyes) needs spec.requestedBy: your user name"]


def test_four_eyes_refuse_a_request_created_approved_by_its_requester() -> None:
    assert len(admit("CREATE", ALICE, approved(deletion(requestedBy=ALICE, separateApprover=True),
                                               approvedBy=ALICE))) == 1


def test_an_operator_proposal_with_four_eyes_is_approved_by_a_person() -> None:
    old = deletion(requestedBy=OPERATOR, separateApprover=True)
    assert admit("UPDATE", ALICE, approved(old, approvedBy=ALICE), old) == []
    assert len(admit("UPDATE", OPERATOR, approved(old, approvedBy=OPERATOR), old)) == 1


def test_offset_resets_are_checked_alike() -> None:
    reset = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "OffsetReset",
             "metadata": {"name": "r", "namespace": "team-a"},
             "spec": {"policyRef": {"name": "p"}, "group": "g", "allTopics": True, "target": {"earliest": True},
                      "requestedBy": ALICE, "separateApprover": True}}
    assert len(admit("UPDATE", ALICE, approved(reset, approvedBy=ALICE), reset)) == 1
    assert admit("UPDATE", BOB, approved(reset, approvedBy=BOB), reset) == []
