"""Hostile specs end to end (the slow half; the fast, many-example half is tests/unit/crds/test_hostile_specs.py):
specs of both kinds generated from the CRDs' schemas, valid ones and near misses, applied through the real
kube-apiserver (its own schema, CEL and 422s; the install applied, the operator on the installed
ServiceAccount's token: installed_api.py) to a running operator. Every spec the API accepts
ends in a condition with a reason, the operator never crashes, and nothing loops: over a window, status
writes and Kafka attempts stay within the retry interval's bound, and no analysis (Spark) runs, since Kafka
is unreachable and an invalid spec never gets that far.

Kafka is a closed local port for every generated connection, so a spec's outcome does not depend on DNS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crd_strategies import near_miss_specs, valid_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from installed_api import InstalledApi, installed_api
from kube_cluster import ControlPlane
from operator_harness import GROUP_VERSION, Kube, KubeApiError, OperatorThread, condition
from waiting import wait_until

from kafka_offset_operator.adapters import metrics
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.model.api import DELETION_KIND, POLICY_KIND

Start = Callable[..., OperatorThread]
PLURALS = {DELETION_KIND: "offsetdeletions", POLICY_KIND: "consumergroupoffsetpolicies"}
SAMPLE = 80  # specs applied per kind (valid and near misses); docs/safety.md records the count
NOWHERE = "127.0.0.1:1"  # connection refused at once
WINDOW_S = 3.0
APPROVALS_POLICY = "kafka-offset-operator-approvals"  # the install's admission policy (manifests/base)


@pytest.fixture
def api(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[InstalledApi]:
    with installed_api(real_cluster, tmp_path) as installed:
        yield installed


@pytest.fixture
def kube(api: InstalledApi) -> Kube:
    """The admin's client in the test's namespace (the conftest's is the emulator's)."""
    return api.kube


@pytest.fixture
def operator_options(api: InstalledApi) -> OperatorOptions:
    """start_operator's operator: the installed ServiceAccount's token, the test's namespace."""
    return api.options()


def counted(counter: Any) -> float:
    return sum(s.value for m in counter.collect() for s in m.samples if s.name.endswith("_total"))


def aimed_nowhere(spec: Any) -> Any:
    """The generated spec, with any Kafka connection sent to a closed port."""
    if isinstance(spec, dict) and isinstance(spec.get("kafka"), dict) and "bootstrapServers" in spec["kafka"]:
        servers = spec["kafka"]["bootstrapServers"]
        if isinstance(servers, str) and ":" in servers and "\n" not in servers:
            spec = {**spec, "kafka": {**spec["kafka"], "bootstrapServers": NOWHERE}}
    return spec


def specs(kind: str) -> st.SearchStrategy[Any]:
    """Valid ones twice as often as near misses: the API refuses most near misses, and what it accepts is what
    reaches the operator."""
    valid = valid_specs(kind)
    return st.one_of(valid, valid, near_miss_specs(kind)).map(aimed_nowhere)


@pytest.mark.slow
# The operator's thread (kafka-python) uses `random` while Hypothesis draws in this one: not the strategies'.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_hostile_specs_end_in_a_condition_without_a_crash_or_a_retry_storm(kube: Kube, start_operator: Start) -> None:
    operator = start_operator()
    accepted: list[tuple[str, str]] = []
    tried = {"applied": 0, "refused": 0, "by admission": 0}

    @settings(max_examples=SAMPLE, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(kind=st.sampled_from([DELETION_KIND, POLICY_KIND]), data=st.data())
    def apply(kind: str, data: st.DataObject) -> None:
        spec = data.draw(specs(kind))
        name = f"hostile-{tried['applied']}"
        tried["applied"] += 1
        try:
            kube.create(PLURALS[kind], {"apiVersion": GROUP_VERSION, "kind": kind,
                                        "metadata": {"name": name, "namespace": kube.namespace}, "spec": spec})
        except KubeApiError as exc:
            # The API server's refusal, naming the field; or (an approval without the approver's own name)
            # the install's admission policy's.
            assert exc.status == 422 or (exc.status == 403 and APPROVALS_POLICY in str(exc)), exc
            tried["refused"] += 1
            tried["by admission"] += exc.status == 403
            return
        accepted.append((kind, name))

    apply()
    analyses_before = counted(metrics.ANALYSIS_RUNS)

    waiting: list[dict[str, Any]] = []

    def settled() -> bool:
        waiting[:] = []
        for kind, name in accepted:
            obj = kube.get(GROUP_VERSION, PLURALS[kind], name)
            status = obj.get("status") or {}
            if not (condition(status, "Ready").get("reason") or condition(status, "Degraded").get("reason")):
                waiting.append(obj)
        return not waiting

    try:
        wait_until(settled, 120, "a condition with a reason on every accepted spec")
    except AssertionError:
        raise AssertionError(f"no condition on {len(waiting)} accepted specs: {waiting[:2]}") from None
    # The window: status writes (resourceVersion) and Kafka attempts, counted while nothing changes.
    versions: dict[tuple[str, str], set[str]] = {key: set() for key in accepted}
    kafka_before = counted(metrics.KAFKA_ERRORS)
    end = time.monotonic() + WINDOW_S
    while time.monotonic() < end:
        for kind, name in accepted:
            versions[(kind, name)].add(kube.get(GROUP_VERSION, PLURALS[kind], name)["metadata"]["resourceVersion"])
    kafka_attempts = counted(metrics.KAFKA_ERRORS) - kafka_before
    reasons: dict[str, int] = {}
    for kind, name in accepted:
        status = kube.get(GROUP_VERSION, PLURALS[kind], name).get("status") or {}
        reason = f"{kind}/{condition(status, 'Degraded').get('reason') or condition(status, 'Ready').get('reason')}"
        reasons[reason] = reasons.get(reason, 0) + 1
    retry = operator.options.retry_interval
    per_object = WINDOW_S / retry + 2
    print(f"hostile specs applied: {tried['applied']}, refused by the API: {tried['refused']} "
          f"({tried['by admission']} of them by the approvals admission policy), accepted: "
          f"{len(accepted)}; in {WINDOW_S}s: {kafka_attempts:g} Kafka attempts, "
          f"{max((len(v) for v in versions.values()), default=0)} status versions at most per object; "
          f"conditions: {sorted(reasons.items())}")
    assert operator.alive
    assert all(len(v) <= per_object for v in versions.values()), versions
    assert kafka_attempts <= per_object * max(1, len(accepted))
    # No Spark for these specs, ever (the counter is the process's: earlier tests' runs are in `analyses_before`).
    assert counted(metrics.ANALYSIS_RUNS) == analyses_before
