"""A policy's results ConfigMap missing or corrupt (docs/safety.md, "Kubernetes faults and restarts"): garbage,
truncated, the wrong schema, or none at all. The policy says so in a clear condition naming the ConfigMap,
proposes nothing, retries with a growing backoff (no retry storm), and the next good run recovers. The
SparkApplication engine runs against kube_faults.InstantSparkOperator (no Spark: the results are the point).

The fault is in the ConfigMaps' data, which the stand-in writes as the driver would: nothing needs the
emulator or the sandbox, so the operator runs on the real kube-apiserver (the `real_api` marker: the install
and spark-operator's SparkApplication CRD applied, the operator on the installed ServiceAccount's token, a
namespace per test) against Apache Kafka (the `kafka` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from installed_api import InstalledApi, installed_api
from kafka_clients import admin_commit
from kafka_under_test import Kafka
from kube_cluster import ControlPlane
from kube_faults import RESULTS, InstantSparkOperator, candidate_rows, policy
from operator_harness import GROUP_VERSION, Kube, condition
from test_shared_spark_applications import install_spark_crd
from waiting import wait_until

from kafka_offset_operator.context import OperatorOptions

pytestmark = [pytest.mark.slow, pytest.mark.real_api]

OFFSETS = {("orders", 0): 3, ("orders", 1): 4}
POLICIES = "consumergroupoffsetpolicies"


@pytest.fixture(scope="module")
def api(real_cluster: ControlPlane, real_crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InstalledApi]:
    """The folder's `api` (the install, once for the module), with spark-operator's CRD served first."""
    install_spark_crd(real_cluster)
    with installed_api(real_cluster, tmp_path_factory.mktemp("kube")) as installed:
        yield installed


@pytest.fixture
def operator_options(api: InstalledApi, kube: Kube) -> OperatorOptions:
    return api.options(namespaces=(kube.namespace,), spark_image="example/koo:1")


@pytest.mark.parametrize("results", [r for r in RESULTS if r != "good"])
def test_unusable_results_are_a_condition_then_the_next_run_recovers(
        results: str, kafka: Kafka, kube: Kube, start_operator: Any) -> None:
    make_topics(kafka, {"orders": 2})
    admin_commit(kafka.bootstrap_servers, "res", OFFSETS)
    with InstantSparkOperator(kube, candidate_rows("res", OFFSETS)) as spark:
        spark.results = results
        start_operator()
        p = policy("p", kafka.bootstrap_servers, "res")
        p["metadata"]["namespace"] = kube.namespace
        kube.create(POLICIES, p)
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
