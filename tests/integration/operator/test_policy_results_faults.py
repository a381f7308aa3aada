"""A policy's results ConfigMap missing or corrupt (docs/safety.md, "Kubernetes faults and restarts"): garbage,
truncated, the wrong schema, or none at all. The policy says so in a clear condition naming the ConfigMap,
proposes nothing, retries with a growing backoff (no retry storm), and the next good run recovers. The
SparkApplication engine runs against kube_faults.InstantSparkOperator (no Spark: the results are the point)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from kafka_clients import admin_commit
from kube_faults import RESULTS, InstantSparkOperator, candidate_rows, policy
from operator_harness import GROUP_VERSION, EmulatedCluster, Kube, condition, emulated_cluster, fast_options
from test_policy_spark_application import spark_crds
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions
from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow

OFFSETS = {("orders", 0): 3, ("orders", 1): 4}
POLICIES = "consumergroupoffsetpolicies"


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with emulated_cluster(spark_crds()) as c:
        yield c


@pytest.fixture
def operator_options(kubeconfig: Path) -> OperatorOptions:
    return fast_options(kubeconfig, spark_image="example/koo:1")


@pytest.mark.parametrize("results", [r for r in RESULTS if r != "good"])
def test_unusable_results_are_a_condition_then_the_next_run_recovers(
        results: str, broker: SandboxBroker, kube: Kube, start_operator: Any) -> None:
    make_topics(broker, {"orders": 2})
    admin_commit(broker.bootstrap_servers, "res", OFFSETS)
    with InstantSparkOperator(kube, candidate_rows("res", OFFSETS)) as spark:
        spark.results = results
        start_operator()
        kube.create(POLICIES, policy("p", broker.bootstrap_servers, "res"))
        degraded = wait_until(lambda: _degraded(kube), 30, "the policy Degraded")
        assert degraded["reason"] == "SparkApplicationFailed", degraded
        assert "without usable results in ConfigMap" in degraded["message"], degraded
        assert "-results" in degraded["message"], degraded  # names it
        assert kube.list(GROUP_VERSION, "offsetdeletions") == []  # nothing proposed from unusable results
        # No retry storm: a retry, with a backoff that doubles from the retry interval (0.3 s) on.
        runs = len(spark.seen)
        wait_until(lambda: len(spark.seen) > runs, 30, "a retry")
        assert len(spark.seen) <= 5, spark.seen
        spark.results = "good"
        ready = wait_until(lambda: _ready(kube), 30, "the policy recovered")
        assert ready["reason"] == "AnalysisSucceeded", ready
        [child] = kube.list(GROUP_VERSION, "offsetdeletions")
        assert child["spec"]["group"] == "res"


def _policy_status(kube: Kube) -> dict[str, Any]:
    return kube.get(GROUP_VERSION, POLICIES, "p").get("status") or {}


def _degraded(kube: Kube) -> dict[str, Any] | None:
    cond = condition(_policy_status(kube), "Degraded")
    return cond if cond.get("status") == "True" else None


def _ready(kube: Kube) -> dict[str, Any] | None:
    cond = condition(_policy_status(kube), "Ready")
    return cond if cond.get("status") == "True" else None
