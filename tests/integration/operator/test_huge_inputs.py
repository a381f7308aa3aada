"""Huge inputs end to end (issue 9, finding 9): an OffsetDeletion of 6,000 partitions through the real
kube-apiserver and etcd, whose size limits are the ones that matter (3 MiB per request: 413; 1.5 MiB per stored
object, etcd's), ends Succeeded with its results summarised under the budget, and restores every partition
from its backup; the operator runs on the installed ServiceAccount's token (installed_api.py). The emulated
API (the demo's, and the fault suites') enforces the same limits, which the first test checks.
The decisions (the policy's split, the summary by error, a refused write) are unit-tested in
tests/unit/bounded/test_huge_inputs.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from installed_api import ADMIN, InstalledApi, installed_api
from kafka_clients import admin_commit, committed
from kube_cluster import ControlPlane
from operator_harness import GROUP_VERSION, Kube, KubeApiError, Operators
from test_offset_deletion import deletion, patch_spec, plain

from kafka_offset_demo.emulated_cluster import MAX_OBJECT_BYTES, MAX_REQUEST_BYTES
from kafka_offset_operator.decisions.step_outcomes import RESULTS_BUDGET
from kafka_sandbox import SandboxBroker

PARTITIONS = 6_000


def test_the_emulated_api_refuses_a_request_over_3_mib_as_the_api_server_does(kube: Kube) -> None:
    too_big = deletion("huge", "g", [{"name": "t"}], kafka={"bootstrapServers": "k:1"})
    too_big["metadata"]["annotations"] = {"pad": "x" * (MAX_REQUEST_BYTES + 1)}
    with pytest.raises(KubeApiError) as info:
        kube.create("offsetdeletions", too_big)
    assert info.value.status == 413 and f"Request entity too large: limit is {MAX_REQUEST_BYTES}" in str(info.value)
    big_object = deletion("big", "g", [{"name": "t"}], kafka={"bootstrapServers": "k:1"})
    big_object["metadata"]["annotations"] = {"pad": "x" * (MAX_OBJECT_BYTES + 1)}
    with pytest.raises(KubeApiError) as info:
        kube.create("offsetdeletions", big_object)
    assert info.value.status == 500 and "etcdserver: request is too large" in str(info.value)


@pytest.fixture
def api(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[InstalledApi]:
    with installed_api(real_cluster, tmp_path) as installed:
        yield installed


@pytest.mark.slow
def test_a_deletion_of_6000_partitions_is_summarised_and_restored(broker: SandboxBroker, api: InstalledApi) -> None:
    kube = api.kube
    broker.create_topic("wide", PARTITIONS)
    offsets = {("wide", p): 0 for p in range(PARTITIONS)}
    admin_commit(broker.bootstrap_servers, "wide-group", offsets)
    operators = Operators(api.options())
    try:
        operators.start()
        deleted_and_restored(kube, broker, offsets)
    finally:
        operators.close()


def deleted_and_restored(kube: Kube, broker: SandboxBroker, offsets: dict[tuple[str, int], int]) -> None:
    wide = deletion("wide", "wide-group", [{"name": "wide"}], kafka=plain(broker))
    wide["metadata"]["namespace"] = kube.namespace
    wide["spec"]["approvedBy"] = ADMIN  # the install's admission policy: an approval names its approver
    kube.create("offsetdeletions", wide)
    status = kube.wait_for_phase("wide", "Succeeded", "PartiallyFailed", "Failed", timeout=180)
    assert (status["phase"], status["deleted"], status["failed"]) == ("Succeeded", PARTITIONS, 0)
    assert status["resultsSummary"]["byStatus"] == {"Deleted": PARTITIONS}
    assert status["results"] == [{"topic": "wide", "status": "Deleted", "message": f"{PARTITIONS} partitions deleted",
                                  "count": PARTITIONS}]
    assert len(json.dumps(status["results"])) <= RESULTS_BUDGET
    assert "offsets" not in status["backup"] and status["backup"]["partitions"] == PARTITIONS  # in the store
    assert len(json.dumps(kube.deletion("wide"))) < MAX_OBJECT_BYTES
    assert committed(broker.bootstrap_servers, "wide-group") == {}

    patch_spec(kube, "wide", {"restore": True})
    status = kube.wait_for_phase("wide", "Restored", timeout=180)
    assert status["restored"] == PARTITIONS
    assert status["restoreResults"] == [{"topic": "wide", "status": "Restored",
                                         "message": f"{PARTITIONS} partitions restored", "count": PARTITIONS}]
    assert committed(broker.bootstrap_servers, "wide-group") == offsets
    assert not any(c.get("reason") == "WriteRefused" for c in kube.get(GROUP_VERSION, "offsetdeletions", "wide")
                   ["status"]["conditions"])
