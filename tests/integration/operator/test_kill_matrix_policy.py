"""SIGKILL at every Kubernetes-visible step of a policy run, on real `kafka-offset-operator run` processes
(docs/safety.md, "Kubernetes faults and restarts"): the results ConfigMap written, the proposal created, the
policy's status written (kube_faults.POLICY_STEPS). The write is held, the operator SIGKILLed while it is
held (then dropped) or just after it applied, and a fresh process finishes: the policy Ready, exactly one
proposal (the same name from every run), nothing deleted in Kafka (Approve mode proposes only).
The SparkApplication engine runs against kube_faults.InstantSparkOperator (no Spark). Apache Kafka (the
session's real broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox) holds the groups: "nothing deleted" is an
OffsetFetch and no tombstone in Kafka's own `__consumer_offsets`, read over the wire."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka, clean_after
from kube_faults import POLICY_STEPS, InstantSparkOperator, candidate_rows, offset_tombstones, policy
from operator_harness import GROUP_VERSION, Kube, condition, emulated_cluster
from operator_process import OperatorProcess
from test_policy_spark_application import spark_crds
from waiting import wait_until

pytestmark = pytest.mark.slow

OFFSETS = {("orders", 0): 3, ("orders", 1): 4}


@pytest.fixture(scope="module")
def broker(real_kafka: Kafka) -> Iterator[Kafka]:
    with clean_after(real_kafka) as kafka:
        make_topics(kafka, {"orders": 2})
        yield kafka


@pytest.mark.parametrize("when", ["held", "applied"])
@pytest.mark.parametrize("step", list(POLICY_STEPS))
def test_sigkill_at_each_step_of_a_policy_run(broker: Kafka, tmp_path: Path, step: str, when: str) -> None:
    group = f"pkill-{step}-{when}"
    admin_commit(broker.bootstrap_servers, group, OFFSETS)
    with emulated_cluster(spark_crds()) as cluster:
        kube = Kube(cluster.url)
        kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
        held = cluster.hold(*POLICY_STEPS[step], after=when == "applied")
        with InstantSparkOperator(kube, candidate_rows(group, OFFSETS)):
            with OperatorProcess(kubeconfig, tmp_path) as first:
                kube.create("consumergroupoffsetpolicies", policy("p", broker.bootstrap_servers, group))
                held.wait(30)
                assert first.kill() == -signal.SIGKILL
            held.release(apply=False)
            with OperatorProcess(kubeconfig, tmp_path) as second:
                ready = wait_until(lambda: _ready(kube), 30, "the policy Ready")
                assert ready["reason"] == "AnalysisSucceeded", ready
                children = kube.list(GROUP_VERSION, "offsetdeletions")
                assert [c["spec"]["group"] for c in children] == [group], children  # no duplicate proposal
                assert not children[0]["spec"].get("approved")
                assert "Traceback" not in second.log()
                second.kill()
    assert committed(broker.bootstrap_servers, group) == OFFSETS
    assert not offset_tombstones(broker.bootstrap_servers, group)


def _ready(kube: Kube) -> dict[str, Any] | None:
    status = kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", "p").get("status") or {}
    cond = condition(status, "Ready")
    return cond if cond.get("status") == "True" else None
