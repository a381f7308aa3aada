"""The emulated API's fault injection (kafka_offset_demo.emulated_cluster: fail, hold, cut_watches) does
what the fault-matrix tests rely on: a failed write stores nothing and answers in the API server's Status
shape; a held write waits (unapplied, or applied with its answer held); a cut watch ends mid-stream."""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import kmock
import pytest
from operator_harness import NAMESPACE, EmulatedCluster, Kube, KubeApiError

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": NAMESPACE,
                                                           "labels": {"kafkaoffsets.dev/backup": "true"}}}


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {**CM, "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}}}


def test_a_failed_write_answers_a_status_and_stores_nothing(cluster: EmulatedCluster, kube: Kube) -> None:
    fault = cluster.fail("create configmaps", status=500, times=1, message="etcd timed out")
    with pytest.raises(KubeApiError) as caught:
        kube.create("configmaps", configmap("first"))
    assert caught.value.status == 500
    status = json.loads(str(caught.value).split(": ", 1)[1])
    assert (status["kind"], status["code"], status["reason"], status["message"]) == (
        "Status", 500, "InternalError", "etcd timed out")
    assert kube.find("v1", "configmaps", "first") is None
    kube.create("configmaps", configmap("first"))  # the next one is served: times=1
    assert len(fault.taken) == 1


def test_a_conflict_on_the_status_subresource_only(cluster: EmulatedCluster, kube: Kube) -> None:
    kube.create("configmaps", configmap("target"))
    cluster.fail("patch configmaps", kmock.subresource("status"), status=409)
    kube.patch("v1", "configmaps", "target", {"data": {"k": "v"}})  # the object itself: not matched
    assert kube.get("v1", "configmaps", "target")["data"] == {"k": "v"}


def test_a_write_held_before_it_is_applied(cluster: EmulatedCluster, kube: Kube) -> None:
    held = cluster.hold("create configmaps", kmock.data({"metadata": {"labels": {"kafkaoffsets.dev/backup": "true"}}}))
    kube.create("configmaps", configmap("unlabelled"))  # not matched: served at once
    result: list[Any] = []
    writer = threading.Thread(target=lambda: result.append(_try(lambda: kube.create("configmaps", CM))))
    writer.start()
    assert held.wait(10).data["metadata"]["name"] == "a"
    assert kube.find("v1", "configmaps", "a") is None  # held before it was applied
    held.release(apply=False)
    writer.join(10)
    assert isinstance(result[0], KubeApiError) and result[0].status == 503
    assert kube.find("v1", "configmaps", "a") is None


def test_a_write_held_after_it_is_applied(cluster: EmulatedCluster, kube: Kube) -> None:
    held = cluster.hold("create configmaps", after=True)
    writer = threading.Thread(target=lambda: kube.create("configmaps", CM))
    writer.start()
    held.wait(10)
    assert kube.find("v1", "configmaps", "a") is not None  # stored; the answer is what waits
    assert writer.is_alive()
    held.release()
    writer.join(10)
    assert not writer.is_alive()


def test_a_cut_watch_ends_mid_stream(cluster: EmulatedCluster, kube: Kube) -> None:
    url = f"{cluster.url}/api/v1/namespaces/{NAMESPACE}/configmaps?watch=true"
    outcome: list[str] = []

    def watch() -> None:
        try:
            with urllib.request.urlopen(url, timeout=20) as rsp:
                while rsp.readline():
                    pass
            outcome.append("ended")
        except Exception as exc:  # the connection dropped mid-stream
            outcome.append(type(exc).__name__)

    watcher = threading.Thread(target=watch)
    watcher.start()
    _wait_for(lambda: len(cluster.requests("watch configmaps")) == 1)
    _wait_for(lambda: cluster.cut_watches("watch configmaps") == 1)
    watcher.join(10)
    assert outcome and not watcher.is_alive()


def _wait_for(check: Any) -> None:
    from waiting import wait_until

    wait_until(check, 10, "the condition")


def _try(fn: Any) -> Any:
    try:
        return fn()
    except KubeApiError as exc:
        return exc
