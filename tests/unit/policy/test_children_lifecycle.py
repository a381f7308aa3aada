"""A policy's OffsetDeletions over their life, as data in / data out (decisions/proposals.py): which are the
policy's own, which have started, what the policy's deletion takes, what the history limit trims, which
Auto approves; and what a DryRun policy's keep-alive says instead of acting (decisions/keepalive.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions import proposals
from kafka_offset_operator.decisions.keepalive import Method, preview
from kafka_offset_operator.decisions.policy_spec import Mode, parse_policy_spec
from kafka_offset_operator.model.api import POLICY_LABEL
from kafka_offsets_model.errors import SpecError

POLICY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
          "metadata": {"name": "stale", "namespace": "kafka", "uid": "u-1"}}
KAFKA = {"bootstrapServers": "kafka:9092"}


def child(name: str, phase: str | None = None, *, approved: bool = False, uid: str | None = "u-1",
          policy: str = "stale", owner_uid: str | None = None, version: str = "7", restore: bool = False,
          created: str = "2026-01-01T00:00:00Z", **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kafka", "resourceVersion": version,
                            "creationTimestamp": created, "labels": {POLICY_LABEL: policy}, "annotations": {}}
    if uid is not None:
        meta["annotations"][proposals.POLICY_UID] = uid
    if owner_uid is not None:
        meta["ownerReferences"] = [{"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
                                    "name": policy, "uid": owner_uid, "controller": True}]
    body: dict[str, Any] = {"metadata": meta, "spec": {"approved": approved, "restore": restore}}
    if phase is not None:
        body["status"] = {"phase": phase, **status}
    return body


def test_a_child_is_the_policys_by_label_and_uid_not_by_name_alone() -> None:
    assert proposals.belongs_to(child("a"), POLICY)
    assert not proposals.belongs_to(child("a", uid="u-0"), POLICY)  # an earlier policy of the same name
    assert not proposals.belongs_to(child("a", policy="other"), POLICY)
    assert not proposals.belongs_to(child("a", uid=None), POLICY)  # hand-made, labelled like ours
    assert proposals.belongs_to(child("a", uid=None, owner_uid="u-1"), POLICY)  # made by an older operator


@pytest.mark.parametrize(("body", "started"), [
    (child("new"), False),  # no status yet
    (child("waiting", "AwaitingApproval"), False),
    (child("approved", "AwaitingApproval", approved=True), False),  # approved, no backup taken yet
    (child("pending", "Pending", approved=True), False),  # approved, Kafka down before the backup
    (child("backed-up", "Pending", approved=True, backup={"takenAt": "t", "partitions": 1}), True),
    (child("stored", "Pending", approved=True, backupRef={"name": "b"}), True),  # the backup store's reference
    (child("sent", "Pending", approved=True, deleteStartTime="t"), True),
    (child("running", "Running", approved=True), True),
    (child("done", "Succeeded", approved=True), True),
    (child("failed", "Failed", approved=True), True),
])
def test_started_means_a_backup_was_taken_or_the_phase_is_past_the_wait(body: dict[str, Any], started: bool) -> None:
    assert proposals.started(body) is started


def test_finished_means_a_final_phase_with_no_restore_to_run() -> None:
    assert proposals.finished(child("a", "Succeeded"))
    assert proposals.finished(child("a", "PartiallyFailed"))
    assert proposals.finished(child("a", "Failed"))
    assert proposals.finished(child("a", "Restored", restore=True, restoreTime="t"))
    assert not proposals.finished(child("a", "Succeeded", restore=True))  # a restore asked, still to run
    assert not proposals.finished(child("a", "Running"))
    assert not proposals.finished(child("a", "AwaitingApproval"))


def test_a_deleted_policy_takes_only_its_unstarted_proposals() -> None:
    items = [
        child("waiting", "AwaitingApproval", version="11"),
        child("approved", "Pending", approved=True, version="12"),
        child("running", "Running", approved=True, backup={"partitions": 1}),
        child("done", "Succeeded", approved=True),
        child("old-owned", "Succeeded", approved=True, uid=None, owner_uid="u-1", version="13"),
        child("old-waiting", "AwaitingApproval", uid=None, owner_uid="u-1", version="14"),
        child("someone-elses", "AwaitingApproval", uid="u-2"),
    ]
    plan = proposals.on_policy_deleted(items, POLICY)
    assert plan.delete == (("waiting", "11"), ("approved", "12"), ("old-waiting", "14"))
    # A child an older operator made with an ownerReference is released from it, so garbage collection
    # does not take it with the policy.
    assert plan.release == (("old-owned", {"metadata": {"ownerReferences": None,
                                                         "annotations": {proposals.POLICY_UID: "u-1"}}}),)


def test_history_keeps_the_newest_finished_children_and_trims_the_oldest_first() -> None:
    items = [child(f"d{i}", "Succeeded", completionTime=f"2026-01-0{i}T00:00:00Z", version=str(i)) for i in range(1, 6)]
    items += [child("restored", "Restored", completionTime="2026-01-01T00:00:00Z", restoreTime="2026-01-09T00:00:00Z"),
              child("restoring", "Succeeded", restore=True, completionTime="2025-01-01T00:00:00Z"),
              child("waiting", "AwaitingApproval"), child("running", "Running"),
              child("another-policy", "Succeeded", uid="u-9", completionTime="2020-01-01T00:00:00Z")]
    plan = proposals.history_overflow(items, POLICY, 3)
    assert plan.delete == (("d1", "1"), ("d2", "2"), ("d3", "3"))  # restored (the newest), d5 and d4 stay
    assert [name for name, _ in proposals.history_overflow(items, POLICY, 0).delete] == [
        "d1", "d2", "d3", "d4", "d5", "restored"]
    assert proposals.history_overflow(items, POLICY, 20).delete == ()


def test_auto_approves_a_waiting_child_of_its_own_only() -> None:
    assert proposals.approve_existing(Mode.AUTO, child("a", "AwaitingApproval"), POLICY)
    assert not proposals.approve_existing(Mode.APPROVE, child("a", "AwaitingApproval"), POLICY)
    assert not proposals.approve_existing(Mode.AUTO, child("a", "AwaitingApproval", approved=True), POLICY)
    assert not proposals.approve_existing(Mode.AUTO, child("a", "AwaitingApproval", uid="u-2"), POLICY)
    assert not proposals.approve_existing(Mode.AUTO, child("a", "AwaitingApproval", policy="other"), POLICY)
    assert not proposals.approve_existing(Mode.AUTO, None, POLICY)


def test_the_history_limit_is_read_from_the_spec_with_the_crds_default_and_bounds() -> None:
    assert parse_policy_spec({"kafka": KAFKA}).finished_deletions_limit == 20
    assert parse_policy_spec({"kafka": KAFKA, "history": {"finishedDeletionsLimit": 0}}).finished_deletions_limit == 0
    for bad in (-1, 1001, "5"):
        with pytest.raises(SpecError) as err:
            parse_policy_spec({"kafka": KAFKA, "history": {"finishedDeletionsLimit": bad}})
        assert err.value.field == "spec.history.finishedDeletionsLimit"


def test_only_approve_and_auto_write_to_kafka() -> None:
    modes = {m: parse_policy_spec({"kafka": KAFKA, "mode": m.value}).writes_to_kafka for m in Mode}
    assert modes == {Mode.DRY_RUN: False, Mode.APPROVE: True, Mode.AUTO: True}


def test_dry_run_keep_alive_says_what_it_would_do() -> None:
    assert preview(Method.REBASE, 3).startswith("would rebase as a simple group (DeleteGroups, then re-commit its 3 ")
    assert preview(Method.RECOMMIT, 2).startswith("would re-commit 2 offsets")
    assert "DryRun writes nothing to Kafka" in preview(Method.RECOMMIT, 2)
