"""The ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) the install ships
so that the API server, not the operator, vouches for who approved and who asked (issue 18 item 5):

- an approval (spec.approved turning true, on create or update) or any change of spec.approvedBy must carry
  spec.approvedBy equal to the user sending it (request.userInfo.username);
- a create that names a requester (spec.requestedBy) must name the user sending it;
- four eyes: with spec.separateApprover (copied from the policy's spec.approval.separateApprover into its
  proposals), a create must name its requester, and the requester may not approve.

That requestedBy and separateApprover never change, and that an approved spec (approvedBy included) is frozen,
are CRD transition rules (model/crds.py): they hold on clusters without this policy too.

The expressions only read `object`, `oldObject` and `request` (no params, no paramKind), guard `oldObject`
(null on CREATE) behind `request.operation`, and compare strings the CRD bounds (maxLength), so a
kube-apiserver type-checks them against the CRD schema and finds their cost small. The status subresource is
not matched: the operator's status writes are not approvals. scripts/generate.py renders it into
manifests/components/admission-policy/ and the chart; tests/unit/crds/test_admission_policy.py evaluates it
with a CEL interpreter on emulated admission requests.
"""

from __future__ import annotations

from typing import Any

from .api import DELETIONS, GROUP, RESETS

NAME = "kafka-offset-operator-approvals"
ADMISSION_API = "admissionregistration.k8s.io/v1"

# An approval, or a change of the recorded approver: both must name the user sending the request.
APPROVING = ("has(object.spec.approved) && object.spec.approved && (request.operation == 'CREATE' || "
             "!has(oldObject.spec.approved) || !oldObject.spec.approved)")
APPROVER_CHANGED = ("request.operation == 'UPDATE' && (has(object.spec.approvedBy) ? "
                    "(!has(oldObject.spec.approvedBy) || object.spec.approvedBy != oldObject.spec.approvedBy) : "
                    "has(oldObject.spec.approvedBy))")
FOUR_EYES = "has(object.spec.separateApprover) && object.spec.separateApprover"

VALIDATIONS: list[dict[str, str]] = [
    {
        "expression": "!(variables.approving || variables.approverChanged) || "
                      "(has(object.spec.approvedBy) && object.spec.approvedBy == request.userInfo.username)",
        "messageExpression": "'spec.approvedBy must be your user name, ' + request.userInfo.username + "
                             "', set together with spec.approved: true (the API server records who approves)'",
        "reason": "Forbidden",
    },
    {
        "expression": "request.operation != 'CREATE' || !has(object.spec.requestedBy) || "
                      "object.spec.requestedBy == request.userInfo.username",
        "messageExpression": "'spec.requestedBy must be your user name, ' + request.userInfo.username + "
                             "', or be left out'",
        "reason": "Forbidden",
    },
    {
        "expression": "request.operation != 'CREATE' || !variables.fourEyes || has(object.spec.requestedBy)",
        "message": "spec.separateApprover (four eyes) needs spec.requestedBy: your user name",
        "reason": "Invalid",
    },
    {
        "expression": "!(variables.approving || variables.approverChanged) || !variables.fourEyes || "
                      "!has(object.spec.requestedBy) || object.spec.requestedBy != request.userInfo.username",
        "message": "four eyes (spec.separateApprover): the requester (spec.requestedBy) may not approve; "
                   "another user must",
        "reason": "Forbidden",
    },
]


def validating_admission_policy() -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": "kafka-offset-operator"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": [GROUP],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [DELETIONS, RESETS],
                }],
            },
            "variables": [
                {"name": "approving", "expression": APPROVING},
                {"name": "approverChanged", "expression": APPROVER_CHANGED},
                {"name": "fourEyes", "expression": FOUR_EYES},
            ],
            "validations": VALIDATIONS,
        },
    }


def validating_admission_policy_binding() -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": "kafka-offset-operator"}},
        "spec": {"policyName": NAME, "validationActions": ["Deny"]},
    }
