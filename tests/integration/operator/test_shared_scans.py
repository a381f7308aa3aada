"""Shared scans (issue 12) through the real Local engine and Apache Kafka (the session's real broker; the
sandbox with KOO_KAFKA_VERSIONS=sandbox): two policies of one cluster due together cost ONE scan of Kafka's
own __consumer_offsets, and each gets its own status from its own rules (the operator under Kopf on the real
kube-apiserver, on the installed ServiceAccount's token: the `real_api` marker); a shared scan one of whose policies gives up (deleted) still serves the other, with the report that
policy gets alone on the same snapshot. The rule is seconds long (standaloneRetention 2s), so simple groups
committed a moment ago are candidates without moving a clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from brokers import make_topics
from installed_api import InstalledApi
from kafka_clients import admin_commit
from kafka_under_test import Kafka, clean_after
from operator_harness import GROUP_VERSION, RUN_TIMEOUT, Kube, OperatorThread, condition
from prometheus_client import REGISTRY
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.engines.job import AnalysisCancelled
from kafka_offset_operator.engines.local import LocalRequest, shared_engine
from kafka_offset_operator.model.report import Report

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # Spark analyses; the operator on the real API server

DAY_MS = 86_400_000
TEAMS = {"team-a": 3, "team-b": 2}  # groups per team, each with 2 offsets
RULES = {"standaloneRetention": "2s"}


@pytest.fixture(scope="module")
def broker(real_kafka: Kafka) -> Iterator[Kafka]:
    """Simple groups whose offsets were committed more than 2 s ago (standalone: candidates of the rule)."""
    with clean_after(real_kafka) as kafka:
        make_topics(kafka, {"orders": 2})
        for team, count in TEAMS.items():
            for i in range(count):
                admin_commit(kafka.bootstrap_servers, f"{team}-{i}", {("orders", 0): 1, ("orders", 1): 2})
        admin_commit(kafka.bootstrap_servers, "other", {("orders", 0): 1})
        committed_at = time.time()
        wait_until(lambda: time.time() > committed_at + 2.5, 5, "the commits to be older than the rule's 2 s")
        yield kafka


def scans() -> float:
    return REGISTRY.get_sample_value("kafka_offset_operator_analysis_scans_total", {"engine": "Local"}) or 0.0


def analysis(team: str) -> dict[str, Any]:
    return {"groups": {"include": [f"{team}-*"]}, "rules": RULES}


@pytest.fixture
def operator_options(api: InstalledApi, kube: Kube) -> OperatorOptions:
    """The installed ServiceAccount's operator, with a share window both policies' visits fall in."""
    return api.options(namespaces=(kube.namespace,), scan_share_window_s=5.0)


def test_two_policies_due_together_share_one_scan(broker: Kafka, kube: Kube, start_operator: Callable[..., OperatorThread]
                                                  ) -> None:
    start_operator()
    before = scans()
    for team in TEAMS:
        kube.create("consumergroupoffsetpolicies", {
            "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": team, "namespace": kube.namespace},
            "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "mode": "DryRun",
                     "analysis": {"brokerRetention": "7d"}, "groups": {"include": [f"{team}-*"]},
                     "rules": RULES}})

    def finished() -> dict[str, dict[str, Any]] | None:
        out = {}
        for team in TEAMS:
            status = kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", team).get("status") or {}
            ready = condition(status, "Ready")
            if ready.get("status") == "False" and ready.get("reason") not in (None, "AnalysisRunning"):
                raise AssertionError(f"{team}: the run failed: {ready}")
            if "lastRun" not in status or ready.get("status") != "True":
                return None
            out[team] = status
        return out

    statuses = wait_until(finished, RUN_TIMEOUT, "both policies' runs")
    assert scans() - before == 1
    for team, groups in TEAMS.items():
        last = statuses[team]["lastRun"]
        assert last["candidates"] == 2 * groups, (team, last)
        assert last["groupsSeen"] == sum(TEAMS.values()) + 1  # the scan saw every group, the rules only its own


def test_a_deleted_policy_leaves_the_shared_scan_to_the_other(broker: Kafka) -> None:
    engine = shared_engine()
    now_ms = int(time.time() * 1000)  # as the operator: wall time

    def request(team: str, key: str | None) -> LocalRequest:
        return LocalRequest(f"{team}-run", broker.bootstrap_servers, analysis(team), now_ms=now_ms,
                            retention_ms=7 * DAY_MS, share_key=key, share_window_ms=2000)

    deleted, kept = threading.Event(), threading.Event()
    outcome: dict[str, Report | BaseException] = {}

    def run(team: str, cancel: threading.Event) -> None:
        try:
            outcome[team] = engine.run(request(team, "cluster"), cancel)
        except BaseException as exc:
            outcome[team] = exc

    first = engine.scans
    threads = [threading.Thread(target=run, args=("team-a", deleted)), threading.Thread(target=run, args=("team-b", kept))]
    for t in threads:
        t.start()
    wait_until(lambda: engine.scans > first or None, 30, "the shared scan to start")
    deleted.set()  # team-a's policy is deleted mid-scan
    for t in threads:
        t.join(RUN_TIMEOUT)
    assert engine.scans == first + 1
    assert isinstance(outcome["team-a"], AnalysisCancelled)
    shared = outcome["team-b"]
    assert isinstance(shared, Report), shared
    alone = engine.run(request("team-b", None), threading.Event())
    assert shared == alone
    assert {o.group for o in alone.candidates} == {"team-b-0", "team-b-1"}
