"""Who asked and who approved, as the operator decides it (decisions/approval.py) and writes it into a policy's
proposals (decisions/proposals.py): plain data in, plain data out."""

from __future__ import annotations

import pytest

from kafka_offset_operator.decisions.approval import Approval, approval_of, approval_problem
from kafka_offset_operator.decisions.policy_spec import Mode, parse_policy_spec
from kafka_offset_operator.decisions.proposals import (
    MAX_PARTITIONS,
    Approvals,
    Proposal,
    approve_existing,
    child_manifest,
    rebase_manifest,
    rebase_state,
)
from kafka_offset_operator.model.backups import Action, BackupRecord, Requester, decode, encode
from kafka_offset_operator.model.offsets import Committed
from kafka_offsets_model.errors import SpecError

POLICY = {"metadata": {"name": "stale", "namespace": "team-a", "uid": "u-1"}}
OPERATOR = "system:serviceaccount:kafka-offset-operator:kafka-offset-operator"


@pytest.mark.parametrize(("approval", "verified", "policy_separate", "problem"), [
    (Approval(), False, False, None),  # no admission policy: nothing to vouch for, nothing required
    (Approval("alice"), True, False, None),
    (Approval(), True, False, "spec.approvedBy"),  # approved before the policy was installed
    (Approval("alice", "bob", True), True, False, None),
    (Approval("alice", "alice", True), True, False, "spec.approvedBy"),  # four eyes
    (Approval("alice", "alice"), False, True, "spec.approvedBy"),  # the referenced policy's four eyes
    (Approval("alice", None, True), False, False, "spec.requestedBy"),
    (Approval(None, "bob", True), False, False, "spec.approvedBy"),  # nobody to compare, even unverified
])
def test_an_approval_is_acted_on_only_when_it_can_be_vouched_for(
        approval: Approval, verified: bool, policy_separate: bool, problem: str | None) -> None:
    found = approval_problem(approval, verified=verified, policy_separate=policy_separate, policy="team")
    assert (found[0] if found else None) == problem


def test_the_refusal_says_why_and_what_to_do() -> None:
    found = approval_problem(Approval("alice", "alice"), verified=False, policy_separate=True, policy="team")
    assert found == ("spec.approvedBy", "alice requested this change and may not approve it too (four eyes, "
                     "ConsumerGroupOffsetPolicy team spec.approval.separateApprover); nothing was changed: an approved "
                     "spec is frozen, so delete this request and create it again, approved by another user")


def test_the_spec_fields_are_read_as_given() -> None:
    assert approval_of({"approvedBy": "a", "requestedBy": "b", "separateApprover": True}) == Approval("a", "b", True)
    assert approval_of(None) == Approval()


def proposal() -> Proposal:
    return Proposal("old", "classic", {("orders", 0): 3}, {("orders", 0): "EmptyGroup"}, None)


def test_proposals_name_the_operator_as_requester_and_as_approver_in_auto_mode() -> None:
    approvals = Approvals(OPERATOR, separate_approver=True)
    waiting = child_manifest(POLICY, proposal(), Mode.APPROVE, 0, approvals)["spec"]
    assert (waiting["approved"], waiting["requestedBy"], waiting["separateApprover"]) == (False, OPERATOR, True)
    assert "approvedBy" not in waiting
    auto = child_manifest(POLICY, proposal(), Mode.AUTO, 0, Approvals(OPERATOR))["spec"]
    assert (auto["approved"], auto["approvedBy"], auto["requestedBy"]) == (True, OPERATOR, OPERATOR)
    assert approvals.approve_patch() == {"spec": {"approved": True, "approvedBy": OPERATOR}}
    unnamed = child_manifest(POLICY, proposal(), Mode.AUTO, 0)["spec"]  # an operator that does not know its name
    assert not {"approvedBy", "requestedBy", "separateApprover"} & set(unnamed)


def test_four_eyes_cannot_be_asked_of_an_auto_policy() -> None:
    spec = {"kafka": {"bootstrapServers": "k:9092"}, "mode": "Auto", "approval": {"separateApprover": True}}
    with pytest.raises(SpecError) as refused:
        parse_policy_spec(spec)
    assert refused.value.field == "spec.approval.separateApprover"
    assert parse_policy_spec({**spec, "mode": "Approve"}).separate_approver


def test_a_rebase_proposal_deletes_and_restores_the_whole_group_as_it_is_now() -> None:
    offsets = {("invoices", 0): 9, ("invoices", 1): 4}
    manifest = rebase_manifest(POLICY, "billing-monthly", offsets, Mode.APPROVE, 0, Approvals(OPERATOR))
    assert manifest is not None
    spec = manifest["spec"]
    assert (spec["deleteGroup"], spec["restore"], spec["rebase"], spec["approved"]) == (True, True, True, False)
    assert spec["policyRef"] == {"name": "stale"} and spec["requestedBy"] == OPERATOR
    assert spec["expectedOffsets"] == [{"topic": "invoices", "partition": 0, "offset": 9, "reason": "KeepAliveRebase"},
                                       {"topic": "invoices", "partition": 1, "offset": 4, "reason": "KeepAliveRebase"}]
    name = manifest["metadata"]["name"]
    assert name.startswith("stale-rebase-") and len(name) <= 63
    # The same group with the same offsets is the same proposal (found again, not made twice).
    again = rebase_manifest(POLICY, "billing-monthly", dict(offsets), Mode.APPROVE, 5, Approvals(OPERATOR))
    assert again is not None and again["metadata"]["name"] == name
    assert approve_existing(Mode.AUTO, manifest, POLICY)  # Auto approves a waiting one of its own policy
    too_big = {("t", p): 1 for p in range(MAX_PARTITIONS + 1)}
    assert rebase_manifest(POLICY, "huge", too_big, Mode.APPROVE, 0) is None


def test_backups_keep_who_asked_and_who_approved_and_read_older_ones_without() -> None:
    record = BackupRecord("b", Action.DELETE, "c", "k:9092", "g", {("t", 0): Committed(1, -1, "")}, Requester("OffsetDeletion", "ns", "od", "u", "approved OffsetDeletion", "bob", "alice"), "t0", "t1")
    back = decode(encode(record)).requested_by
    assert (back.requested_by, back.approved_by, back.people) == ("bob", "alice", " (approved by alice, requested by bob)")
    older = Requester("OffsetDeletion", "ns", "od", "u", "r")
    assert decode(encode(BackupRecord("b", Action.DELETE, "c", "k", "g", {}, older, "t0", "t1"))).requested_by == older


def test_a_rebase_proposal_is_made_once_and_an_ended_one_is_said_not_repeated() -> None:
    """Where the policy's keep-alive finds its rebase proposal (decisions/proposals.rebase_state): made when
    missing, left waiting, left alone under way, and reported (not silently dropped) once it ended."""
    manifest = rebase_manifest(POLICY, "billing-monthly", {("invoices", 0): 5}, Mode.APPROVE, 0)
    assert manifest is not None
    mine = {**manifest, "metadata": {**manifest["metadata"], "annotations": {
        **manifest["metadata"]["annotations"], "kafkaoffsets.dev/policy-uid": "u-1"}}}
    assert rebase_state(None, POLICY) == "missing"
    assert rebase_state(mine, POLICY) == "waiting"
    approved = {**mine, "spec": {**mine["spec"], "approved": True}, "status": {"phase": "Succeeded"}}
    assert rebase_state(approved, POLICY) == "under way"  # deleted, its restore still to run
    assert rebase_state({**approved, "status": {"phase": "Restored"}}, POLICY) == "ended"
    assert rebase_state({**approved, "status": {"phase": "Failed"}}, POLICY) == "ended"
    other = {**POLICY, "metadata": {**POLICY["metadata"], "uid": "u-2"}}  # a policy of the same name, later
    assert rebase_state(mine, other) == "ended"
