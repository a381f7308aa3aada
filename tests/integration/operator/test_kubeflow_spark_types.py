"""The SparkApplications the operator writes, read by kubeflow spark-operator's own published API types.

The Go module of kubeflow spark-operator (whose config/crd/bases holds the SparkApplication CRD) cannot be
had here: the Go module proxy answers 403 for github.com/kubeflow/spark-operator, its /v2 and the older
GoogleCloudPlatform/spark-on-k8s-operator path (docs/testing.md lists what else was tried). What can be had is
`kubeflow-spark-api` on PyPI, which the spark-operator project publishes from the same Go types its CRD is
generated from (package version = spark-operator release, 2.4.0 here): pydantic models of
sparkoperator.k8s.io/v1beta2 SparkApplication, strict about types. It is downloaded at test time into
~/.cache/kafka-offset-operator/spark-api/<version> (never committed, not a dependency of the product) and
each manifest the operator builds, a policy's own and a shared one, must survive a round trip through it
unchanged: a field those types do not have would be dropped (spark-operator's CRD prunes it), a wrong type
refused. Then the real kube-apiserver, serving a SparkApplication CRD rebuilt from those same types
(tests/support/kubeflow_crd.py: the closest thing to spark-operator's own CRD that can be had here), must store
each manifest unpruned and refuse a wrong type with its own 422. Skipped with one line where PyPI cannot be
reached.
"""

from __future__ import annotations

from typing import Any

import kubeflow_crd
import pytest
from kube_cluster import ApiError, ControlPlane

from kafka_offset_operator.adapters.kube import owner_reference
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.engines.spark_application import shared_owner

KAFKA = {"bootstrapServers": "k:9093", "securityProtocol": "SASL_SSL",
         "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user", "passwordKey": "pw"}},
         "tls": {"caSecretRef": {"name": "ca"}}}
ANALYSIS = {"engine": "SparkApplication",
            "sparkApplication": {"serviceAccount": "spark", "executor": {"instances": 3},
                                 "driver": {"cores": 1, "memory": "1g"}}}


def policy(name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid},
            "spec": {"kafka": KAFKA, "analysis": ANALYSIS}}


@pytest.fixture(scope="module")
def spark_application_type() -> Any:
    """kubeflow_spark_api's SparkV1beta2SparkApplication, from the cached wheel (downloaded once)."""
    try:
        return kubeflow_crd.spark_application_type()
    except kubeflow_crd.Unavailable as exc:
        pytest.skip(str(exc))


def manifests() -> dict[str, dict[str, Any]]:
    spec = parse_policy_spec(policy("p", "u-1")["spec"])
    settings = connection_from_spec(KAFKA, lambda name: {"username": b"u", "pw": b"p", "ca.crt": b"CA"})
    solo = policy("p", "u-1")
    members = [policy("team-a-policy", "u-a"), policy("team-b-policy", "u-b")]
    runs = [sparkapp.BatchRun(m, shared_owner(m), 7 * 86_400_000) for m in members]
    return {
        "solo": sparkapp.manifest(solo, owner_reference(solo), spec, settings, "abcdef12", image="img:1",
                                  retention_ms=7 * 86_400_000),
        "shared": sparkapp.batch_manifest(runs, spec, settings, "abcdef12", "k" * 64, image="img:1"),
    }


@pytest.mark.parametrize("kind", ["solo", "shared"])
def test_every_field_the_operator_writes_is_one_of_spark_operators_own_types(kind: str, spark_application_type: Any) -> None:
    app = manifests()[kind]
    parsed = spark_application_type.from_dict(app)  # refuses a wrong type (strict pydantic fields)
    assert parsed.to_dict() == app, "a field kubeflow's SparkApplication types do not have (pruned by its CRD)"
    assert parsed.spec.type == "Python" and parsed.spec.mode == "cluster"


# -- the same manifests stored by a real kube-apiserver under a CRD built from those types (kubeflow_crd.py)

APPS = "/apis/sparkoperator.k8s.io/v1beta2"


@pytest.fixture(scope="module")
def spark_crd(real_cluster: ControlPlane) -> ControlPlane:
    """The SparkApplication CRD rebuilt from kubeflow's types, served by the session's real API server."""
    try:
        crd = kubeflow_crd.crd()
    except kubeflow_crd.Unavailable as exc:
        pytest.skip(str(exc))
    kubeflow_crd.install(real_cluster.api, crd)
    return real_cluster


def stored(plane: ControlPlane, namespace: str, app: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server persisted it (the create's answer: after pruning and validation)."""
    app = {**app, "metadata": {**app["metadata"], "namespace": namespace}}
    return plane.api.request("POST", f"{APPS}/namespaces/{namespace}/sparkapplications", app)


@pytest.mark.parametrize("kind", ["solo", "shared"])
def test_the_real_api_server_stores_them_unpruned_under_kubeflows_schema(
        kind: str, spark_crd: ControlPlane, real_namespace: str) -> None:
    app = manifests()[kind]
    assert stored(spark_crd, real_namespace, app)["spec"] == app["spec"], "a field kubeflow's schema prunes"
    # and the schema does prune: a field kubeflow's types lack is gone from what is stored
    app["metadata"]["name"] += "-extra"
    app["spec"]["driver"]["notAKubeflowField"] = 1
    assert "notAKubeflowField" not in stored(spark_crd, real_namespace, app)["spec"]["driver"]


def test_a_wrong_type_is_refused_by_kubeflows_schema(spark_crd: ControlPlane, real_namespace: str) -> None:
    """The schema is not a stand-in that keeps every field: a string where kubeflow has an integer is a 422."""
    app = manifests()["solo"]
    app["spec"]["executor"]["instances"] = "three"
    with pytest.raises(ApiError) as refused:
        stored(spark_crd, real_namespace, app)
    assert refused.value.status == 422
    assert "spec.executor.instances" in str(refused.value.body), refused.value.body
