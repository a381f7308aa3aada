"""Who asked and who approved (issue 18 item 5), and keep-alive's rebase as a proposal that waits for an
approval (item 3), against the operator under Kopf on the real kube-apiserver (the install applied, the
operator on the installed ServiceAccount's token, a fresh namespace per test: installed_api.py) and Apache
Kafka (the session's broker, emptied after each test; the sandbox with KOO_KAFKA_VERSIONS=sandbox): an
approval the install cannot vouch for changes nothing; four eyes are kept by the operator too (for a policy's
setting that admission cannot read); the approver and the requester reach the backup store, the audit line and
the Events; a rebase OffsetDeletion shows its plan, changes nothing until approved, then leaves a simple group
with the same offsets. No test here needs the sandbox's faults or clock.

The API server's own check of the names is the install's admission policy, in force here: alice, bob and the
operator's ServiceAccount each send their own requests (the admin impersonates them: Kube.as_user), so the
names the operator records are the ones the API server verified. The cases only the operator can catch
(an approval without approvedBy, four eyes without a requester: the admission policy refuses both before the
operator sees them) run with the policy removed (`without_admission_policy`, restored and in force again
afterwards), as on a cluster older than 1.30 or while the policy was deleted. These operators run only the OffsetDeletion
and OffsetReset handlers: the policies here are read for their connection, protection and approval
settings, and no analysis is wanted."""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from brokers import make_topics
from installed_api import OPERATOR_USER, InstalledApi
from kafka_clients import committed, empty_group
from kafka_under_test import Kafka
from kube_fixtures import approvals_policy_enforced, kubectl, remove_approvals_policy
from operator_harness import FINAL, GROUP_VERSION, ROOT, Kube, KubeApiError, OperatorThread, condition
from test_offset_deletion import deletion
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.decisions.policy_spec import Mode
from kafka_offset_operator.decisions.proposals import Approvals, rebase_manifest
from kafka_offset_operator.handlers import offset_deletion, offset_reset
from kafka_offset_operator.model.backups import Action, BackupRecord, decode
from kafka_offset_operator.model.connection import ConnectionSettings

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf per test, with end-to-end waits

Start = Callable[..., OperatorThread]
OPERATOR = OPERATOR_USER
ADMISSION_POLICY = ROOT / "manifests" / "components" / "admission-policy" / "admission-policy.yaml"
ALICE, BOB = "alice", "bob"
INVOICES = {("invoices", 0): 9, ("invoices", 1): 4}


@pytest.fixture(autouse=True)
def people(kube: Kube) -> None:
    """alice and bob may create and approve requests in the test's namespace (a Role bound to them)."""
    rbac = "rbac.authorization.k8s.io/v1"
    kube.create("roles", {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "offset-requesters"}, "rules": [
        {"apiGroups": ["kafkaoffsets.dev"], "resources": ["offsetdeletions", "offsetresets"],
         "verbs": ["get", "list", "create", "patch"]}]})
    kube.create("rolebindings", {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "offset-requesters"},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                             "name": "offset-requesters"},
                                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": who}
                                              for who in (ALICE, BOB)]})

    def allowed() -> bool:  # the authorizer reads RBAC through an informer
        try:
            kube.as_user(BOB).list(GROUP_VERSION, "offsetdeletions")
        except KubeApiError as exc:
            if exc.status == 403:
                return False
            raise
        return True

    wait_until(allowed, 30, "alice's and bob's Role in force")


@pytest.fixture
def without_admission_policy(api: InstalledApi) -> Iterator[None]:
    """The install without its admission policy (a cluster older than 1.30, or the policy deleted): only the
    operator checks approvals. Put back afterwards, and in force again before the next test."""
    remove_approvals_policy(api.plane)
    try:
        yield
    finally:
        out = kubectl(api.plane.kubeconfig, "apply", "-f", str(ADMISSION_POLICY))
        assert out.returncode == 0, out.stderr
        wait_until(lambda: approvals_policy_enforced(api.plane), 30, "the admission policy in force again")


def start(start_operator: Start, options: OperatorOptions, **changes: Any) -> OperatorThread:
    """An operator of OffsetDeletions and OffsetResets only (no policy runs), installed with the admission
    policy (approvals verified) unless told otherwise."""
    changes = {"approvals_verified": True, "user": OPERATOR, **changes}
    return start_operator(dataclasses.replace(options, **changes),
                          registrars=[offset_deletion.register, offset_reset.register])


def policy(kafka: Kafka, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name},
            "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, "mode": "Approve",
                     "schedule": {"interval": "24h"}, **spec}}


def backups(kube: Kube) -> list[BackupRecord]:
    return [decode(base64.b64decode(cm["binaryData"]["backup.json.gz"])) for cm in kube.list("v1", "configmaps")
            if (cm["metadata"].get("labels") or {}).get("kafkaoffsets.dev/backup") == "true"]


def approve(kube: Kube, name: str, by: str, plural: str = "offsetdeletions") -> None:
    """`by` approves, sending the patch as themself (the admission policy checks approvedBy against that)."""
    kube.as_user(by).patch(GROUP_VERSION, plural, name, {"spec": {"approved": True, "approvedBy": by}})


def unsigned(body: dict[str, Any]) -> dict[str, Any]:
    """An approval without approvedBy (test_offset_deletion.deletion names the admin)."""
    del body["spec"]["approvedBy"]
    return body


def audit_lines(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kafka_offset_operator.audit"]


# -- approvals the operator does not act on


def test_an_approval_without_approved_by_changes_nothing_where_approvers_are_verified(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions,
        without_admission_policy: None) -> None:
    """Approved before the admission policy was installed (or while it was removed): not verified, not done."""
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    start(start_operator, operator_options)
    kube.create("offsetdeletions", unsigned(deletion("unsigned", "reporting", [{"name": "invoices"}],
                                                     kafka={"bootstrapServers": kafka.bootstrap_servers})))
    status = kube.wait_for_reason("unsigned", "ApprovalRefused")
    ready = condition(status, "Ready")
    assert ready["status"] == "False" and ready["message"].startswith("spec.approvedBy: is required with spec.approved")
    assert condition(status, "Stalled")["status"] == "True" and "backup" not in status
    assert committed(kafka.bootstrap_servers, "reporting") == INVOICES and backups(kube) == []


def test_the_same_approval_is_acted_on_where_the_install_verifies_nobody(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions,
        without_admission_policy: None) -> None:
    """A cluster older than 1.30 (no admission policy, no --approvals-verified): approvedBy is recorded when
    given, not required."""
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    start(start_operator, operator_options, approvals_verified=False)
    kube.create("offsetdeletions", unsigned(deletion("unsigned", "reporting", [{"name": "invoices"}],
                                                     kafka={"bootstrapServers": kafka.bootstrap_servers})))
    kube.wait_for_phase("unsigned", "Succeeded")
    assert committed(kafka.bootstrap_servers, "reporting") == {}


def test_four_eyes_of_the_referenced_policy_refuse_the_requesters_own_approval(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions) -> None:
    """The policy's spec.approval.separateApprover reaches a hand-written request only through the operator
    (admission cannot read the policy): alice's own approval is refused, bob's is acted on."""
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    kube.create("consumergroupoffsetpolicies", policy(kafka, "team", approval={"separateApprover": True}))
    start(start_operator, operator_options)
    own = deletion("own", "reporting", [{"name": "invoices"}], policy="team", approved=False)
    own["spec"]["requestedBy"] = ALICE
    kube.as_user(ALICE).create("offsetdeletions", own)
    kube.wait_for_phase("own", "AwaitingApproval")
    approve(kube, "own", ALICE)
    message = condition(kube.wait_for_reason("own", "ApprovalRefused"), "Ready")["message"]
    assert message.startswith("spec.approvedBy: alice requested this change and may not approve it too")
    assert committed(kafka.bootstrap_servers, "reporting") == INVOICES
    other = deletion("reviewed", "reporting", [{"name": "invoices"}], policy="team", approved=False)
    other["spec"]["requestedBy"] = ALICE
    kube.as_user(ALICE).create("offsetdeletions", other)
    kube.wait_for_phase("reviewed", "AwaitingApproval")
    approve(kube, "reviewed", BOB)
    kube.wait_for_phase("reviewed", "Succeeded")
    assert committed(kafka.bootstrap_servers, "reporting") == {}


def test_four_eyes_need_a_requester_to_compare(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions,
        without_admission_policy: None) -> None:
    """The admission policy refuses such a request at its creation; without it, the operator does."""
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    start(start_operator, operator_options, approvals_verified=False)
    anonymous = deletion("anonymous", "reporting", [{"name": "invoices"}],
                         kafka={"bootstrapServers": kafka.bootstrap_servers}, approved=False)
    anonymous["spec"]["separateApprover"] = True
    kube.create("offsetdeletions", anonymous)
    kube.wait_for_phase("anonymous", "AwaitingApproval")
    approve(kube, "anonymous", BOB)
    message = condition(kube.wait_for_reason("anonymous", "ApprovalRefused"), "Ready")["message"]
    assert message.startswith("spec.requestedBy: is required by four eyes (spec.separateApprover)")
    assert committed(kafka.bootstrap_servers, "reporting") == INVOICES


# -- who approved, recorded


def test_the_approver_and_the_requester_reach_the_backup_the_audit_line_and_the_events(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions, caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="kafka_offset_operator.audit")
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    start(start_operator, operator_options)
    request = deletion("signed", "reporting", [{"name": "invoices"}],
                       kafka={"bootstrapServers": kafka.bootstrap_servers}, approved=False)
    request["spec"]["requestedBy"] = BOB
    kube.as_user(BOB).create("offsetdeletions", request)
    kube.wait_for_phase("signed", "AwaitingApproval")
    approve(kube, "signed", ALICE)
    status = kube.wait_for_phase("signed", "Succeeded")
    (stored,) = backups(kube)
    assert stored.name == status["backup"]["name"]
    assert (stored.requested_by.approved_by, stored.requested_by.requested_by) == (ALICE, BOB)
    assert status["target"]["spec"]["approvedBy"] == ALICE  # recorded at approval with the rest of the spec
    (line,) = [a for a in audit_lines(caplog) if a.startswith("OffsetDelete ")]
    assert line.endswith("approvedBy=alice requestedBy=bob")
    wait_until(lambda: [e for e in kube.events_for("signed") if e["reason"] == "BackedUp"], what="the BackedUp event")
    (event,) = [e for e in kube.events_for("signed") if e["reason"] == "BackedUp"]
    assert event["message"].endswith("(approved by alice, requested by bob)")


def test_an_offset_reset_records_its_approver_and_refuses_an_unverified_approval(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions, caplog: Any,
        without_admission_policy: None) -> None:
    """Without the admission policy (which would refuse the unverified one), both created approved by the
    admin: the operator acts on the signed one only."""
    caplog.set_level(logging.INFO, logger="kafka_offset_operator.audit")
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "reporting", INVOICES)
    start(start_operator, operator_options)
    spec = {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, "group": "reporting", "allTopics": True,
            "target": {"shiftBy": -1}, "approved": True, "requestedBy": BOB}
    kube.create("offsetresets", {"apiVersion": GROUP_VERSION, "kind": "OffsetReset",
                                 "metadata": {"name": "unsigned"}, "spec": spec})
    kube.create("offsetresets", {"apiVersion": GROUP_VERSION, "kind": "OffsetReset",
                                 "metadata": {"name": "signed"},
                                 "spec": {**spec, "approvedBy": ALICE}})

    def phase(name: str) -> str | None:
        return (kube.get(GROUP_VERSION, "offsetresets", name).get("status") or {}).get("phase")

    wait_until(lambda: phase("signed") == "Succeeded", what="the signed reset Succeeded")
    unsigned = wait_until(lambda: (lambda s: s if any(c["reason"] == "ApprovalRefused" for c in s.get("conditions", []))
                                   else None)(kube.get(GROUP_VERSION, "offsetresets", "unsigned").get("status") or {}),
                          what="the unsigned reset refused")
    assert "backup" not in unsigned and phase("unsigned") != "Succeeded"
    assert committed(kafka.bootstrap_servers, "reporting") != INVOICES  # the signed one moved them (one commit)
    (stored,) = [b for b in backups(kube) if b.action is Action.RESET]
    assert (stored.requested_by.name, stored.requested_by.approved_by, stored.requested_by.requested_by) == (
        "signed", ALICE, BOB)
    (line,) = [a for a in audit_lines(caplog) if a.startswith("OffsetCommit ")]
    assert "OffsetReset" in line and line.endswith("approvedBy=alice requestedBy=bob")


# -- keep-alive's rebase as a proposal (Approve mode)


def protocol_type(kafka: Kafka, group: str) -> str:
    with KafkaAdmin(ConnectionSettings(kafka.bootstrap_servers)) as admin:
        return admin.describe_group(group).protocol_type


def test_a_rebase_proposal_shows_its_plan_changes_nothing_until_approved_then_keeps_the_offsets(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions) -> None:
    """The OffsetDeletion an Approve policy's keep-alive proposes (decisions/proposals.rebase_manifest): on a
    group its policy protects, back up, DeleteGroups and restore at once, once approved by a person."""
    make_topics(kafka, {"invoices": 2})
    empty_group(kafka.bootstrap_servers, "billing-monthly", INVOICES)
    guard = kube.create("consumergroupoffsetpolicies", policy(
        kafka, "guard", protect={"groups": ["billing-*"], "keepAlive": True}))
    start(start_operator, operator_options)
    manifest = rebase_manifest(guard, "billing-monthly", INVOICES, Mode.APPROVE, 0, Approvals(OPERATOR))
    assert manifest is not None
    name = manifest["metadata"]["name"]
    kube.as_user(OPERATOR).create("offsetdeletions", manifest)  # as the policy's keep-alive would
    waiting = kube.wait_for_phase(name, "AwaitingApproval")
    assert "plan: keep-alive rebase of protected group billing-monthly: back up its 2 committed offsets" in condition(
        waiting, "Ready")["message"]
    assert protocol_type(kafka, "billing-monthly") == "consumer"  # nothing changed while it waits
    assert committed(kafka.bootstrap_servers, "billing-monthly") == INVOICES and backups(kube) == []
    approve(kube, name, ALICE)
    done = kube.wait_for_phase(name, "Restored", "Failed", "PartiallyFailed")
    assert done["phase"] == "Restored", done.get("conditions")
    assert protocol_type(kafka, "billing-monthly") == ""  # a simple group: its offsets expire by commit time
    assert committed(kafka.bootstrap_servers, "billing-monthly") == INVOICES
    records = {b.action: b for b in backups(kube)}
    assert set(records) == {Action.DELETE, Action.RESTORE}
    assert records[Action.DELETE].requested_by.approved_by == ALICE
    assert records[Action.DELETE].requested_by.requested_by == OPERATOR


def test_a_rebase_of_a_group_that_is_simple_already_deletes_nothing(
        kafka: Kafka, kube: Kube, start_operator: Start, operator_options: OperatorOptions) -> None:
    """The fresh check before DeleteGroups: a group without a protocol type needs no rebase (Auto rebased it
    meanwhile, say), so an approval that comes late changes nothing."""
    from kafka_clients import admin_commit

    make_topics(kafka, {"invoices": 2})
    admin_commit(kafka.bootstrap_servers, "billing-standalone", INVOICES)
    guard = kube.create("consumergroupoffsetpolicies", policy(
        kafka, "guard", protect={"groups": ["billing-*"], "keepAlive": True}))
    start(start_operator, operator_options)
    manifest = rebase_manifest(guard, "billing-standalone", INVOICES, Mode.APPROVE, 0, Approvals(OPERATOR))
    assert manifest is not None
    kube.as_user(OPERATOR).create("offsetdeletions", manifest)  # as the policy's keep-alive would
    kube.wait_for_phase(manifest["metadata"]["name"], "AwaitingApproval")
    approve(kube, manifest["metadata"]["name"], ALICE)
    status = kube.wait_for_phase(manifest["metadata"]["name"], *FINAL)
    assert (status["phase"], condition(status, "Ready")["reason"]) == ("Failed", "GroupChanged")
    assert "simple group already" in condition(status, "Ready")["message"]
    assert committed(kafka.bootstrap_servers, "billing-standalone") == INVOICES
