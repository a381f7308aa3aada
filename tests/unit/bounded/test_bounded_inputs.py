"""Huge inputs stay bounded (issue 9, finding 9): a policy splits a group's candidates into OffsetDeletions
the API server accepts; an OffsetDeletion's results are summarised by Kafka error past a limit, so its
status stays under a byte budget; a write the API server refuses (413, 422, etcd's limit) is recorded without
the per-partition details, not retried as it is. The end-to-end half, 6,000 partitions through the emulated
API with its size limits, is tests/integration/operator/test_huge_inputs.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_offset_demo.api_validation import ResourceSchema
from kafka_offset_operator.decisions import deletion_steps as steps
from kafka_offset_operator.decisions import proposals, step_outcomes
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.policy_spec import Mode
from kafka_offset_operator.model.crds import build_crds
from kafka_offset_operator.model.kinds.common import MAX_PARTITIONS, MAX_TOPICS
from kafka_offset_operator.model.offsets import Committed, GroupInfo

NOW = "2026-01-02T03:04:05Z"
POLICY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
          "metadata": {"name": "p", "namespace": "kafka", "uid": "u"}}
DELETIONS = next(ResourceSchema.from_crd(c, c["spec"]["versions"][0]) for c in build_crds().values()
                 if c["spec"]["names"]["kind"] == "OffsetDeletion")
ETCD_LIMIT = 1536 * 1024


def proposal(offsets: dict[tuple[str, int], int]) -> proposals.Proposal:
    return proposals.Proposal("g", "classic", offsets, dict.fromkeys(offsets, "EmptyGroup"), None)


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


@pytest.mark.parametrize("offsets", [
    {("t", p): p for p in range(12_345)},  # one topic, more partitions than one deletion may list
    {(f"t{i}", 0): 1 for i in range(2_500)},  # more topics than one deletion may list
    {("x" * 249, p): 2**62 for p in range(4_000)},  # long names: the byte budget binds first
])
def test_a_proposal_too_big_for_one_object_is_split_into_deletions_the_api_accepts(
        offsets: dict[tuple[str, int], int]) -> None:
    parts = proposals.split(proposal(offsets))
    assert len(parts) > 1
    assert {tp: o for part in parts for tp, o in part.offsets.items()} == offsets  # all of them, once
    assert sum(len(p.offsets) for p in parts) == len(offsets)
    children = proposals.children(POLICY, [proposal(offsets)], Mode.APPROVE, 0)
    assert len({c["metadata"]["name"] for c in children}) == len(parts)  # distinct, deterministic names
    assert [c["metadata"]["name"] for c in children] == [
        c["metadata"]["name"] for c in proposals.children(POLICY, [proposal(dict(reversed(offsets.items())))],
                                                          Mode.APPROVE, 0)]
    for child in children:
        spec = child["spec"]
        assert sum(len(t["partitions"]) for t in spec["topics"]) <= MAX_PARTITIONS
        assert len(spec["topics"]) <= MAX_TOPICS
        assert size(spec) <= proposals.SPEC_BUDGET + 1024
        DELETIONS.admit(child, None)  # the CRD's schema and CEL rules accept it
        parse_spec(spec)


def test_a_proposal_that_fits_is_one_deletion_as_before() -> None:
    one = proposal({("t", p): p for p in range(10)})
    assert proposals.split(one) == [one]


def result_entries(n: int, errors: tuple[str | None, ...]) -> tuple[steps.DeletePlan, dict[Any, str | None]]:
    todo = steps.DeletePlan(tuple(("orders-" + "x" * 200, p) for p in range(n)), ())
    return todo, {tp: errors[i % len(errors)] for i, tp in enumerate(todo.to_delete)}


@pytest.mark.parametrize("errors", [(None,), ("GROUP_SUBSCRIBED_TO_TOPIC",), (None, "UNKNOWN_TOPIC_OR_PARTITION", None)])
def test_huge_results_are_summarised_by_error_under_the_budget(errors: tuple[str | None, ...]) -> None:
    todo, answers = result_entries(20_000, errors)
    status = steps.finish_deletion(parse_spec({"kafka": {"bootstrapServers": "k:1"}, "group": "g",
                                               "topics": [{"name": "t"}]}), {}, todo, answers, None, NOW, None).status
    assert size(status["results"]) <= step_outcomes.RESULTS_BUDGET
    summary = status["resultsSummary"]
    expected_failed = sum(1 for e in answers.values() if e)
    assert summary["partitions"] == 20_000
    assert summary["byStatus"].get("Failed", 0) == status["failed"] == expected_failed
    assert summary["byStatus"].get("Deleted", 0) == status["deleted"] == 20_000 - expected_failed
    assert summary["byError"] == ({errors[1] if len(errors) > 1 else errors[0]: expected_failed} if expected_failed else {})
    failed_shown = [r for r in status["results"] if r["status"] == "Failed"]
    assert 0 < len(failed_shown) <= step_outcomes.RESULTS_LIMIT or not expected_failed
    # The whole object (spec, status, the conditions) fits etcd.
    assert size(status) < ETCD_LIMIT


def test_a_restore_of_many_partitions_is_summarised_too() -> None:
    todo = steps.RestorePlan({("t", p): Committed(p) for p in range(30_000)}, ())
    done = steps.finish_restore({"phase": "Succeeded"}, todo, dict.fromkeys(todo.to_commit), GroupInfo("g", "Empty"),
                                30, NOW, None).status
    assert done["restored"] == 30_000 and done["restoreResultsSummary"]["byStatus"] == {"Restored": 30_000}
    assert done["restoreResults"] == [{"topic": "t", "status": "Restored", "message": "30000 partitions restored",
                                       "count": 30_000}]


def test_summarised_results_still_restore_what_was_deleted() -> None:
    """Restore reads a summed topic's partitions from the backup; a sampled-out failure keeps its offset,
    so restore finds it at its backed-up value and commits nothing for it."""
    todo, answers = result_entries(3_000, (None, None, "UNKNOWN_TOPIC_OR_PARTITION"))
    status = steps.finish_deletion(parse_spec({"kafka": {"bootstrapServers": "k:1"}, "group": "g",
                                               "topics": [{"name": "t"}]}), {}, todo, answers, None, NOW, None,
                                   results_limit=100).status
    backup = {tp: Committed(7) for tp in todo.to_delete}
    deleted = {tp for tp, e in answers.items() if e is None}
    found = set(steps.deleted_partitions(status, backup))
    assert deleted <= found
    current = {tp: Committed(7) for tp in todo.to_delete if tp not in deleted}  # failures kept their offsets
    plan = steps.plan_restore(backup, sorted(found), current)
    assert set(plan.to_commit) == deleted


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([None, "GROUP_SUBSCRIBED_TO_TOPIC", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_COORDINATOR"]),
                min_size=1, max_size=3000), st.integers(1, 50))
def test_counts_are_exact_whatever_is_shown(errors: list[str | None], limit: int) -> None:
    todo = steps.DeletePlan(tuple(("t", p) for p in range(len(errors))), ())
    answers = dict(zip(todo.to_delete, errors, strict=True))
    status = steps.finish_deletion(parse_spec({"kafka": {"bootstrapServers": "k:1"}, "group": "g",
                                               "topics": [{"name": "t"}]}), {}, todo, answers, None, NOW, None,
                                   results_limit=limit).status
    assert status["failed"] == sum(1 for e in errors if e) and status["deleted"] == errors.count(None)
    shown = [r for r in status["results"] if "partition" in r]
    assert len(shown) <= max(limit, len(errors))


def test_a_refused_status_write_keeps_the_facts_without_the_details() -> None:
    todo, answers = result_entries(10, (None, "UNKNOWN_TOPIC_OR_PARTITION"))
    patch = steps.finish_deletion(parse_spec({"kafka": {"bootstrapServers": "k:1"}, "group": "g",
                                              "topics": [{"name": "t"}]}), {}, todo, answers, None, NOW, 3).status
    patch["target"] = {"group": "g", "spec": {"group": "g"}}
    small = step_outcomes.write_refused({}, patch, "Request entity too large: limit is 3145728", NOW, 3)
    assert (small["phase"], small["deleted"], small["failed"]) == (patch["phase"], 5, 5)
    assert small["results"] is None and small["resultsSummary"]["byStatus"] == {"Deleted": 5, "Failed": 5}
    assert small["target"] == {"group": "g", "spec": None}
    degraded = next(c for c in small["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "WriteRefused" and "3145728" in degraded["message"]
    # A final phase with WriteRefused: the timer stops (no retry of the same content).
    assert not steps.needs_work({}, {**patch, **small})
