"""Reconciling and Stalled, derived from Ready and Degraded in kstatus' abnormal-true form: present only while
True, Stalled for what only a person can clear, Reconciling while the operator still works, neither while a
deletion waits for its approval or once Ready holds."""

from __future__ import annotations

import pytest

from kafka_offset_operator.decisions.conditions import Condition, merge_conditions
from kafka_offset_operator.model.reasons import Reason as R


def kstatus(*updates: Condition, current: list[dict[str, str]] | None = None) -> list[tuple[str, str]]:
    merged = merge_conditions(current, updates, "t", 4)
    return [(c["type"], c["reason"]) for c in merged if c["type"] in ("Reconciling", "Stalled")]


def ready(status: str, reason: R) -> Condition:
    return Condition("Ready", status, reason, str(reason))


def degraded(status: str, reason: R) -> Condition:
    return Condition("Degraded", status, reason, str(reason))


@pytest.mark.parametrize(("updates", "expected"), [
    ((ready("True", R.SUCCEEDED), degraded("False", R.AS_EXPECTED)), []),
    ((ready("False", R.AWAITING_APPROVAL), degraded("False", R.AS_EXPECTED)), []),
    ((ready("False", R.RUNNING), degraded("False", R.AS_EXPECTED)), [("Reconciling", "Running")]),
    ((ready("False", R.KAFKA_UNAVAILABLE), degraded("True", R.KAFKA_UNAVAILABLE)), [("Reconciling", "KafkaUnavailable")]),
    ((ready("False", R.SECRET_NOT_FOUND), degraded("True", R.SECRET_NOT_FOUND)), [("Reconciling", "SecretNotFound")]),
    ((ready("True", R.SUCCEEDED), degraded("True", R.RESTORE_BLOCKED)), [("Reconciling", "RestoreBlocked")]),
    ((ready("False", R.INVALID_SPEC), degraded("True", R.INVALID_SPEC)), [("Stalled", "InvalidSpec")]),
    ((ready("False", R.FAILED), degraded("True", R.GROUP_NOT_FOUND)), [("Stalled", "GroupNotFound")]),
    ((ready("False", R.PARTIALLY_FAILED), degraded("True", R.PARTIALLY_FAILED)), [("Stalled", "PartiallyFailed")]),
    ((ready("False", R.PROTECTED), degraded("True", R.PROTECTED)), [("Stalled", "Protected")]),
    ((ready("True", R.SUCCEEDED), degraded("True", R.CLUSTER_MISMATCH)), [("Stalled", "ClusterMismatch")]),
    ((ready("True", R.SUCCEEDED), degraded("True", R.SPEC_FROZEN)), [("Stalled", "SpecFrozen")]),
    ((ready("False", R.GROUP_HAS_MEMBERS), degraded("True", R.GROUP_HAS_MEMBERS)), [("Reconciling", "GroupHasMembers")]),
    ((ready("False", R.AWAITING_APPROVAL), degraded("True", R.PLAN_REFUSED)), [("Stalled", "PlanRefused")]),
    ((Condition("Progressing", "True", R.ANALYSIS_RUNNING, "running"),), [("Reconciling", "AnalysisRunning")]),
])
def test_derived_from_ready_and_degraded(updates: tuple[Condition, ...], expected: list[tuple[str, str]]) -> None:
    assert kstatus(*updates) == expected


def test_a_policy_rerunning_after_a_success_is_not_reconciling() -> None:
    done = merge_conditions(None, [ready("True", R.ANALYSIS_SUCCEEDED), degraded("False", R.AS_EXPECTED)], "t1", 1)
    assert kstatus(Condition("Progressing", "True", R.ANALYSIS_RUNNING, "running"), current=done) == []


def test_cleared_when_the_problem_clears_and_kept_stable_while_it_lasts() -> None:
    first = merge_conditions(None, [ready("False", R.KAFKA_UNAVAILABLE), degraded("True", R.KAFKA_UNAVAILABLE)], "t1", 1)
    again = merge_conditions(first, [degraded("True", R.KAFKA_UNAVAILABLE)], "t2", 1)
    assert [c["lastTransitionTime"] for c in again if c["type"] == "Reconciling"] == ["t1"]
    healed = merge_conditions(again, [ready("True", R.SUCCEEDED), degraded("False", R.AS_EXPECTED)], "t3", 1)
    assert [c["type"] for c in healed] == ["Ready", "Degraded"]
    assert all(c["observedGeneration"] == 1 for c in healed)
