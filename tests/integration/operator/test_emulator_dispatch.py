"""The emulated API answers a request without walking the requests it served before (issue 12's benchmark:
kmock's dispatch applied every reaction's criteria to every request served so far, so each request cost more
than the last; after ~10,000 requests, a second and more, and a thousand OffsetDeletions never settled)."""

from __future__ import annotations

from typing import Any

import pytest
from operator_harness import Kube, KubeApiError, emulated_cluster

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "kafka"},
              "data": {"a": "1"}}


class Unreadable:
    """A request served earlier that no criterion can read: a dispatch that looks at the history fails."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the dispatch read .{name} of a request served earlier")


def test_requests_are_dispatched_without_reading_the_requests_served_before() -> None:
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        assert cluster.emulator is not None
        cluster.emulator._requests[:0] = [Unreadable() for _ in range(1000)]
        kube.create("configmaps", CONFIG_MAP)  # every action the emulator serves, and a fault rule
        assert kube.get("v1", "configmaps", "cm")["data"] == {"a": "1"}
        assert [c["metadata"]["name"] for c in kube.list("v1", "configmaps")] == ["cm"]
        kube.patch("v1", "configmaps", "cm", {"data": {"a": "2"}})
        cluster.fail("patch configmaps", status=409)
        with pytest.raises(KubeApiError) as refused:
            kube.patch("v1", "configmaps", "cm", {"data": {"a": "3"}})
        assert refused.value.status == 409
        assert kube.get("v1", "configmaps", "cm")["data"] == {"a": "2"}
        kube.delete("v1", "configmaps", "cm")
        assert kube.find("v1", "configmaps", "cm") is None
