"""A policy's OffsetDeletions outlive it (issue 9): they carry no ownerReference to the policy, so deleting the
policy (a GitOps prune) takes only the proposals that never started; finished ones stay with their results;
a history limit trims the oldest finished ones; Auto approves a waiting proposal of its own, never one of
another policy. Through the real operator (Kopf) on the real kube-apiserver with its real garbage collector
(kube-controller-manager): the install applied once per module, the operator on the installed
ServiceAccount's token (installed_api.py), so every call it makes here is authorized by the real RBAC
authorizer against the rules we ship and every approval passes the real admission policy; a fresh namespace
per test. Kafka is Apache Kafka (the `kafka` fixture: the session's real broker, or the sandbox with
KOO_KAFKA_VERSIONS=sandbox); every offset asserted is an OffsetFetch over TCP.

The analysis is the plain-Python reference analysis (the Spark job's test oracle, same rules) in place of
the Local engine: what is tested here is what happens after an analysis, and each test runs a few of them.
It reads the broker's own `__consumer_offsets` and judges it as of two days from now (LATER_MS), so groups
that left a moment ago are candidates of a 1d emptyGroupRetention without moving any clock. The real engine
runs in test_policy_modes_kafka.py, test_policy_modes.py and test_policy_dryrun.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from analysis_reference import analyze_records
from brokers import make_topics
from installed_api import ADMIN
from kafka_clients import committed as committed_at
from kafka_clients import empty_group as empty_group_at
from kafka_under_test import Kafka
from operator_harness import GROUP_VERSION, Kube, OperatorThread, deletions_by_group, wait_run
from waiting import wait_past, wait_until

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.decisions.proposals import POLICY_UID
from kafka_offset_operator.engines.job import CancelFlag, Job
from kafka_offset_operator.model.api import POLICY_LABEL
from kafka_offset_operator.model.report import Report, from_rows
from kafka_offset_operator.reconcilers import policy_visit
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # see the module docstring: real processes or a Spark run


RETENTION_MS = 7 * 86_400_000
LATER_MS = 2 * 86_400_000  # the reference analysis judges as of two days from now

Start = Callable[..., OperatorThread]
PLURAL = "consumergroupoffsetpolicies"
DELETIONS = "offsetdeletions"
POLICY = "cleanup"
GROUPS = ("g-a", "g-b", "g-c")
OFFSETS = {("orders", 0): 3, ("orders", 1): 4}
TIMEOUT = 60.0


def committed(broker: Kafka, group: str) -> dict[tuple[str, int], int]:
    return committed_at(broker.bootstrap_servers, group)


def empty_group(broker: Kafka, group: str, offsets: dict[tuple[str, int], int]) -> None:
    empty_group_at(broker.bootstrap_servers, group, offsets)


def scan(broker: Kafka, spec: Any) -> Report:
    """The reference analysis (the Spark job's oracle) of the whole __consumer_offsets, as the operator
    reads a report: these tests are about what happens after an analysis, not about Spark."""
    with OffsetsTopicReader(broker.bootstrap_servers) as reader:
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    now_ms = int(time.time() * 1000) + LATER_MS
    report = analyze_records(records, parse_policy(spec), now_ms=now_ms, retention_ms=RETENTION_MS,
                             existing_topics=None)
    return from_rows(report["summary"], report["offsets"])


@pytest.fixture
def stale_groups(kafka: Kafka, monkeypatch: pytest.MonkeyPatch) -> Kafka:
    """Three Empty consumer groups (candidates of a 1d emptyGroupRetention two days from now), and the
    reference analysis in place of the engine."""
    broker = kafka
    make_topics(broker, {"orders": 2})
    for group in GROUPS:
        empty_group(broker, group, OFFSETS)

    def reference(job: Job, cancel: CancelFlag, *engines: Any) -> Report:
        return scan(broker, job.spec.analysis_spec)

    monkeypatch.setattr(policy_visit, "run_analysis", reference)
    return broker


def create_policy(kube: Kube, broker: Kafka, mode: str, **extra: Any) -> dict[str, Any]:
    return kube.create(PLURAL, {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": POLICY, "namespace": kube.namespace},
        "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "rules": {"emptyGroupRetention": "1d"},
                 "mode": mode, **extra}})


def proposals_waiting(kube: Kube) -> dict[str, dict[str, Any]]:
    def waiting() -> dict[str, dict[str, Any]] | None:
        found = deletions_by_group(kube)
        ok = set(found) >= set(GROUPS) and all(
            (found[g].get("status") or {}).get("phase") == "AwaitingApproval" for g in GROUPS)
        return found if ok else None
    return wait_until(waiting, TIMEOUT, "the proposals to await approval")


def approve(kube: Kube, child: dict[str, Any]) -> dict[str, Any]:
    name = child["metadata"]["name"]
    kube.patch(GROUP_VERSION, DELETIONS, name, {"spec": {"approved": True, "approvedBy": ADMIN}})
    return kube.wait_for_status(name, lambda s: s.get("phase") == "Succeeded", TIMEOUT, "the approved deletion")


def delete_policy(kube: Kube) -> None:
    kube.delete(GROUP_VERSION, PLURAL, POLICY)
    wait_until(lambda: kube.find(GROUP_VERSION, PLURAL, POLICY) is None, TIMEOUT, "the policy to be gone")


def hand_made(kube: Kube, name: str, group: str, labels: dict[str, str], annotations: dict[str, str],
              spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
            "metadata": {"name": name, "namespace": kube.namespace, "labels": labels, "annotations": annotations},
            "spec": {"group": group, "topics": [{"name": "orders"}], **spec}}


def test_deleting_a_policy_deletes_its_unstarted_proposals_and_keeps_the_rest(
        stale_groups: Kafka, kube: Kube, start_operator: Start) -> None:
    broker = stale_groups
    start_operator()
    uid = create_policy(kube, broker, "Approve")["metadata"]["uid"]
    wait_run(kube, POLICY, timeout=TIMEOUT)
    proposed = proposals_waiting(kube)
    for child in proposed.values():  # provenance without ownership
        meta = child["metadata"]
        assert "ownerReferences" not in meta, meta
        assert (meta["labels"][POLICY_LABEL], meta["annotations"][POLICY_UID]) == (POLICY, uid)
    # An OffsetDeletion labelled like the policy's but made by someone else (an earlier policy of that name).
    kube.create(DELETIONS, hand_made(kube, "foreign", "g-c", {POLICY_LABEL: POLICY}, {POLICY_UID: "an-earlier-policy"},
                                     {"kafka": {"bootstrapServers": broker.bootstrap_servers}}))
    kube.wait_for_status("foreign", lambda s: s.get("phase") == "AwaitingApproval", what="the foreign proposal")
    finished = approve(kube, proposed["g-a"])
    assert committed(broker, "g-a") == {}
    # A witness the real garbage collector must take: a ConfigMap the policy owns. Once it is gone, the
    # collector has handled the policy's deletion, and what is left is what it left.
    kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "owned-by-the-policy", "ownerReferences": [{"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                                                            "name": POLICY, "uid": uid}]}})

    delete_policy(kube)

    expected = {finished["metadata"]["name"], "foreign"}

    def settled() -> dict[str, dict[str, Any]] | None:  # a deleted child may linger behind its own finalizer
        found = {d["metadata"]["name"]: d for d in kube.list(GROUP_VERSION, DELETIONS)}
        return found if set(found) == expected else None
    wait_until(settled, TIMEOUT, f"only {sorted(expected)} to be left")
    wait_until(lambda: kube.find("v1", "configmaps", "owned-by-the-policy") is None, TIMEOUT, "the garbage collector")
    left = settled()
    assert left is not None, "the garbage collector took more than the policy's witness"
    kept = left[finished["metadata"]["name"]]
    assert kept["status"]["phase"] == "Succeeded" and kept["status"]["results"] == finished["status"]["results"]
    assert "ownerReferences" not in kept["metadata"]  # nothing for the garbage collector to take
    # The proposals went, not a write; with no ownerReference, the operator deleted them itself, as the
    # installed ServiceAccount, and the real RBAC authorizer allowed it.
    assert committed(broker, "g-b") == committed(broker, "g-c") == OFFSETS


def test_a_policy_deleted_while_its_run_is_under_way_leaves_no_proposal_behind(
        stale_groups: Kafka, kube: Kube, start_operator: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worst moment: the analysis ends just after the policy was deleted. The deletion handler waits for
    the run to end, and the run, told to stop, proposes nothing more."""
    broker = stale_groups
    entered, release = threading.Event(), threading.Event()

    def slow_reference(job: Job, cancel: CancelFlag, *engines: Any) -> Report:
        entered.set()
        release.wait(TIMEOUT)
        return scan(broker, job.spec.analysis_spec)

    monkeypatch.setattr(policy_visit, "run_analysis", slow_reference)
    start_operator()
    create_policy(kube, broker, "Approve")
    assert entered.wait(TIMEOUT), "the run did not start"
    kube.delete(GROUP_VERSION, PLURAL, POLICY)
    wait_until(lambda: kube.get(GROUP_VERSION, PLURAL, POLICY)["metadata"].get("deletionTimestamp"),
                  what="the deletion to be requested")
    time.sleep(1.0)  # the handler has had its chance to run: it must be waiting for the run
    assert kube.find(GROUP_VERSION, PLURAL, POLICY) is not None, "the policy went while its run was under way"
    release.set()
    wait_until(lambda: kube.find(GROUP_VERSION, PLURAL, POLICY) is None, TIMEOUT, "the policy to be gone")
    assert kube.list(GROUP_VERSION, DELETIONS) == []
    assert all(committed(broker, g) == OFFSETS for g in GROUPS)


def test_a_finished_deletion_restores_after_its_policy_is_gone(
        stale_groups: Kafka, kube: Kube, start_operator: Start) -> None:
    broker = stale_groups
    start_operator()
    create_policy(kube, broker, "Approve")
    wait_run(kube, POLICY, timeout=TIMEOUT)
    finished = approve(kube, proposals_waiting(kube)["g-a"])
    assert finished["status"]["backup"]["partitions"] == 2 and committed(broker, "g-a") == {}
    delete_policy(kube)

    name = finished["metadata"]["name"]
    kube.patch(GROUP_VERSION, DELETIONS, name, {"spec": {"restore": True}})
    kube.wait_for_status(name, lambda s: s.get("phase") == "Restored", 30, "the restore without the policy")
    assert committed(broker, "g-a") == OFFSETS


def test_the_history_limit_trims_the_oldest_finished_deletions(
        stale_groups: Kafka, kube: Kube, start_operator: Start) -> None:
    broker = stale_groups
    uid = create_policy(kube, broker, "Approve", history={"finishedDeletionsLimit": 2})["metadata"]["uid"]
    # Finished OffsetDeletions of earlier runs (made before the operator starts, so it finds them finished),
    # and an older one of another policy that the limit does not count.
    spec = {"policyRef": {"name": POLICY}, "approved": True, "approvedBy": ADMIN}
    # The API server takes a status only through /status, so each is created, then given its status.
    for day in range(1, 5):
        name = f"{POLICY}-day{day}"
        kube.create(DELETIONS, hand_made(kube, name, f"old-{day}", {POLICY_LABEL: POLICY}, {POLICY_UID: uid}, spec))
        kube.patch(GROUP_VERSION, DELETIONS, name, {"status": {
            "phase": "Succeeded", "completionTime": f"2026-01-0{day}T00:00:00Z", "deleted": 1, "failed": 0}},
            subresource="status")
    kube.create(DELETIONS, hand_made(kube, "other-policy-old", "old-0", {POLICY_LABEL: "other"}, {POLICY_UID: "u-other"},
                                     {"policyRef": {"name": "other"}, "approved": True, "approvedBy": ADMIN}))
    kube.patch(GROUP_VERSION, DELETIONS, "other-policy-old", {"status": {
        "phase": "Succeeded", "completionTime": "2025-01-01T00:00:00Z"}}, subresource="status")
    start_operator()
    wait_run(kube, POLICY, timeout=TIMEOUT)
    proposals_waiting(kube)

    def trimmed() -> set[str] | None:
        # An object on its way out (its finalizer not yet removed) is listed with a deletionTimestamp.
        names = {d["metadata"]["name"] for d in kube.list(GROUP_VERSION, DELETIONS)
                 if not d["metadata"].get("deletionTimestamp")}
        return names if not {f"{POLICY}-day1", f"{POLICY}-day2"} & names else None
    names = wait_until(trimmed, TIMEOUT, "the history to be trimmed")
    kept = {n for n in names if n.startswith(f"{POLICY}-day")} | ({"other-policy-old"} & names)
    assert kept == {f"{POLICY}-day3", f"{POLICY}-day4", "other-policy-old"}
    assert {g for g, d in deletions_by_group(kube).items() if g in GROUPS} == set(GROUPS)  # the new proposals stay


def test_auto_approves_a_waiting_proposal_of_its_own_and_not_one_of_another_policy(
        stale_groups: Kafka, kube: Kube, start_operator: Start) -> None:
    broker = stale_groups
    start_operator()
    create_policy(kube, broker, "Approve")
    last = wait_run(kube, POLICY, timeout=TIMEOUT)["lastRun"]["completionTime"]
    proposed = proposals_waiting(kube)
    # g-b's proposal has the very name the policy would give it, but another policy's uid (an earlier
    # policy of the same name made it): Auto must leave it to whoever decides for that one.
    foreign = proposed["g-b"]["metadata"]["name"]
    kube.patch(GROUP_VERSION, DELETIONS, foreign, {"metadata": {"annotations": {POLICY_UID: "an-earlier-policy"}}})

    wait_past(last)  # runs are told apart by completionTime, in whole seconds
    kube.patch(GROUP_VERSION, PLURAL, POLICY, {"spec": {"mode": "Auto"}})
    status = wait_run(kube, POLICY, last, timeout=TIMEOUT)
    assert status["lastRun"]["deletionsCreated"] == 0  # the same proposals, found again
    for group in ("g-a", "g-c"):
        name = proposed[group]["metadata"]["name"]
        kube.wait_for_status(name, lambda s: s.get("phase") == "Succeeded", TIMEOUT, f"{group} approved by Auto")
        assert committed(broker, group) == {}
    untouched = kube.deletion(foreign)
    assert untouched["spec"]["approved"] is False and untouched["status"]["phase"] == "AwaitingApproval"
    assert committed(broker, "g-b") == OFFSETS
