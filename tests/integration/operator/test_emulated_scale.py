"""The emulated API serves Deployments and StatefulSets with their scale subresource as an API server does
(autoscaling/v1 Scale): what OffsetReset's spec.pauseWorkloads reads and patches."""

from __future__ import annotations

import pytest
from operator_harness import Kube, KubeApiError, emulated_cluster

SCALE = "application/merge-patch+json"


@pytest.mark.parametrize("plural", ["deployments", "statefulsets"])
def test_a_workloads_scale_is_read_and_patched_and_changes_only_its_replicas(plural: str) -> None:
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        kube.create(plural, {"apiVersion": "apps/v1", "kind": plural[:-1].capitalize(), "metadata": {"name": "app"},
                             "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "app"}},
                                      "template": {"metadata": {"labels": {"app": "app"}}}}})
        path = f"/apis/apps/v1/namespaces/kafka/{plural}/app/scale"
        scale = kube.request("GET", path)
        assert (scale["apiVersion"], scale["kind"], scale["spec"], scale["status"]["selector"]) == (
            "autoscaling/v1", "Scale", {"replicas": 3}, "app=app")
        answer = kube.request("PATCH", path, {"spec": {"replicas": 0}, "metadata": {"labels": {"x": "y"}}}, SCALE)
        assert (answer["kind"], answer["spec"]["replicas"]) == ("Scale", 0)
        workload = kube.get("apps/v1", plural, "app")
        assert workload["spec"]["replicas"] == 0 and workload["spec"]["template"] == {"metadata": {"labels": {"app": "app"}}}
        assert "labels" not in workload["metadata"]  # only spec.replicas moved
        with pytest.raises(KubeApiError) as refused:
            kube.request("PATCH", path, {"spec": {"replicas": -1}}, SCALE)
        assert refused.value.status == 422
        with pytest.raises(KubeApiError) as missing:
            kube.request("GET", f"/apis/apps/v1/namespaces/kafka/{plural}/nowhere/scale")
        assert missing.value.status == 404
