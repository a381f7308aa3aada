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
refused. Skipped with one line where PyPI cannot be reached.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kafka_offset_operator.adapters.kube import owner_reference
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.engines.spark_application import shared_owner

VERSION = "2.4.0"  # kubeflow spark-operator's release, published as kubeflow-spark-api
CACHE = Path.home() / ".cache" / "kafka-offset-operator" / "spark-api" / VERSION
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
    if not any(CACHE.glob("kubeflow_spark_api/__init__.py")):
        CACHE.mkdir(parents=True, exist_ok=True)
        out = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                              f"kubeflow-spark-api=={VERSION}", "-d", str(CACHE)],
                             capture_output=True, text=True, timeout=300)
        wheels = list(CACHE.glob(f"kubeflow_spark_api-{VERSION}-*.whl"))
        if out.returncode != 0 or not wheels:
            pytest.skip(f"kubeflow-spark-api {VERSION} could not be downloaded from PyPI: {out.stderr.strip()[-200:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(CACHE)
    if str(CACHE) not in sys.path:
        sys.path.insert(0, str(CACHE))
    module = importlib.import_module("kubeflow_spark_api.models.spark_v1beta2_spark_application")
    return module.SparkV1beta2SparkApplication


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
