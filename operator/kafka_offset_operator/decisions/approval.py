"""Who asked for a change and who approved it (issue 18 item 5), as plain functions.

The API server verifies the names (the install's ValidatingAdmissionPolicy, model/admission.py): approvedBy
is the user who sent the approval, requestedBy the user who created the request. The operator cannot see who
sent a request, so it relies on that policy, and refuses what the policy would have refused had it been in
place: with `approvals_verified` (the install ships the policy; `run --approvals-verified`) an approval
without approvedBy was not verified (approved before the policy was installed, or while it was removed);
with four eyes (the object's spec.separateApprover, or the referenced policy's spec.approval.separateApprover,
which admission cannot read) an approval by the requester, or without a requester or approver to compare.

Refusing here changes nothing in Kafka. An approved spec is frozen (CRD transition rules), so the way on is
a new request approved properly: delete this one and create it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

AGAIN = "an approved spec is frozen, so delete this request and create it again"


@dataclass(frozen=True)
class Approval:
    """The approval fields of an OffsetDeletion's or OffsetReset's spec."""

    approved_by: str | None = None
    requested_by: str | None = None
    separate_approver: bool = False


def approval_of(spec: Mapping[str, Any] | None) -> Approval:
    spec = spec or {}
    approved_by = spec.get("approvedBy")
    requested_by = spec.get("requestedBy")
    return Approval(str(approved_by) if approved_by else None, str(requested_by) if requested_by else None,
                    bool(spec.get("separateApprover")))


def policy_wants_separate_approver(policy_spec: Mapping[str, Any] | None) -> bool:
    return bool(((policy_spec or {}).get("approval") or {}).get("separateApprover"))


def approval_problem(approval: Approval, *, verified: bool, policy_separate: bool = False,
                     policy: str | None = None) -> tuple[str, str] | None:
    """(field, problem) when an approved request must not be acted on yet; None when it may."""
    four_eyes = approval.separate_approver or policy_separate
    why = ("spec.separateApprover" if approval.separate_approver
           else f"ConsumerGroupOffsetPolicy {policy} spec.approval.separateApprover")
    if not approval.approved_by and (verified or four_eyes):
        reason = ("this install verifies approvers (ValidatingAdmissionPolicy)" if verified
                  else f"four eyes ({why}) compare the approver with the requester")
        return "spec.approvedBy", (f"is required with spec.approved: {reason}; nothing was changed: {AGAIN}")
    if four_eyes and not approval.requested_by:
        return "spec.requestedBy", f"is required by four eyes ({why}); nothing was changed: {AGAIN}"
    if four_eyes and approval.approved_by == approval.requested_by:
        return "spec.approvedBy", (f"{approval.approved_by} requested this change and may not approve it too "
                                   f"(four eyes, {why}); nothing was changed: {AGAIN}, approved by another user")
    return None
