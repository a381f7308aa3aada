"""kubeflow spark-operator's SparkApplication CRD, rebuilt from the project's own published API types.

The CRD itself lives in spark-operator's Go module (config/crd/bases), which the Go module proxy here refuses
(403 for github.com/kubeflow/spark-operator, its /v2 and the older GoogleCloudPlatform path). What can be had
is `kubeflow-spark-api` on PyPI, which spark-operator publishes from the same Go types its CRD is generated
from (package version = spark-operator release): pydantic models of sparkoperator.k8s.io/v1beta2. This module
turns their JSON schema into the structural OpenAPI schema a CRD needs (references inlined, optional fields
as omittable, Kubernetes' int-or-string and quantity types as the API server spells them, free-form maps
kept), so a real kube-apiserver validates and prunes every SparkApplication the operator writes by
kubeflow's types, not by a stand-in that keeps every field.

Differences from the CRD spark-operator ships, both from the published types: no `default`s (the types carry
none the API server would apply) and no enum lists (the types keep enums as prose). Downloaded at test time
into ~/.cache/kafka-offset-operator/spark-api/<version> (never committed, not a dependency of the product).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from kube_cluster import Api, ApiError
from waiting import wait_until

VERSION = "2.4.0"  # kubeflow spark-operator's release, published as kubeflow-spark-api
CACHE = Path.home() / ".cache" / "kafka-offset-operator" / "spark-api" / VERSION
INT_OR_STRING = ("IoK8sApimachineryPkgUtilIntstrIntOrString", "IoK8sApimachineryPkgApiResourceQuantity")
FREE_FORM: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


class Unavailable(Exception):
    """kubeflow-spark-api could not be had (no PyPI): the caller skips and says why."""


def spark_application_type() -> Any:
    """kubeflow_spark_api's SparkV1beta2SparkApplication, from the cached wheel (downloaded once)."""
    if not any(CACHE.glob("kubeflow_spark_api/__init__.py")):
        CACHE.mkdir(parents=True, exist_ok=True)
        out = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                              f"kubeflow-spark-api=={VERSION}", "-d", str(CACHE)],
                             capture_output=True, text=True, timeout=300)
        wheels = list(CACHE.glob(f"kubeflow_spark_api-{VERSION}-*.whl"))
        if out.returncode != 0 or not wheels:
            raise Unavailable(f"kubeflow-spark-api {VERSION} could not be downloaded from PyPI: "
                              f"{out.stderr.strip()[-200:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(CACHE)
    if str(CACHE) not in sys.path:
        sys.path.insert(0, str(CACHE))
    module = importlib.import_module("kubeflow_spark_api.models.spark_v1beta2_spark_application")
    return module.SparkV1beta2SparkApplication


def structural(schema: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """One JSON-schema node of pydantic's output as a structural CRD schema node."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in INT_OR_STRING:
            out: dict[str, Any] = {"x-kubernetes-int-or-string": True,
                                   "anyOf": [{"type": "integer"}, {"type": "string"}]}
        elif name in seen:  # a recursive type: kept whole below the first level
            out = dict(FREE_FORM)
        else:
            out = structural(defs[name], defs, (*seen, name))
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    if "anyOf" in schema:  # Optional[X]: an omittable X (Kubernetes objects leave out what is unset)
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        if len(options) != 1:
            raise ValueError(f"not structural: {schema}")
        out = structural(options[0], defs, seen)
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    kind = schema.get("type")
    out = {"description": schema["description"]} if "description" in schema else {}
    if kind == "object" or "properties" in schema:
        out["type"] = "object"
        if "properties" in schema:
            out["properties"] = {k: structural(v, defs, seen) for k, v in schema["properties"].items()}
        if schema.get("required"):
            out["required"] = list(schema["required"])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = structural(extra, defs, seen)
        elif extra is True or "properties" not in schema:
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif kind == "array":
        out["type"] = "array"
        out["items"] = structural(schema.get("items", {}), defs, seen)
    elif kind in ("string", "integer", "number", "boolean"):
        out["type"] = kind
        if "format" in schema:
            out["format"] = schema["format"]
    else:  # Any
        out.update(FREE_FORM)
    return out


def crd() -> dict[str, Any]:
    """The SparkApplication CRD (sparkoperator.k8s.io/v1beta2) from kubeflow's types; raises Unavailable."""
    schema = spark_application_type().model_json_schema(by_alias=True, mode="serialization")
    defs = schema.get("$defs", {})
    root = structural(schema, defs)
    root["properties"]["metadata"] = {"type": "object"}  # the API server owns ObjectMeta's schema
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "sparkapplications.sparkoperator.k8s.io",
            # A group under k8s.io is protected: the API server wants an approval URL or "unapproved...".
            "annotations": {"api-approved.kubernetes.io":
                            f"unapproved, rebuilt for tests from kubeflow-spark-api {VERSION}"},
        },
        "spec": {
            "group": "sparkoperator.k8s.io",
            "scope": "Namespaced",
            "names": {"kind": "SparkApplication", "listKind": "SparkApplicationList",
                      "plural": "sparkapplications", "singular": "sparkapplication", "shortNames": ["sparkapp"]},
            "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": root}}],
        },
    }


def install(api: Api, crd: dict[str, Any], timeout: float = 90.0) -> None:
    """Serve `crd` (server-side apply, replacing any other SparkApplication CRD) and wait until its resource
    answers. A CRD whose schema changes re-initialises its storage, and for a moment the API server answers
    429 "storage is (re)initializing" (seen in CI): so an unchanged CRD is not applied again, and after a
    change the wait is for a list that succeeds, not only the Established condition."""
    name = crd["metadata"]["name"]
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    group, version = crd["spec"]["group"], crd["spec"]["versions"][0]["name"]
    try:
        served = api.request("GET", path)
    except ApiError as exc:
        if exc.status != 404:
            raise
        served = None
    if served is None or served["spec"]["versions"][0]["schema"] != crd["spec"]["versions"][0]["schema"]:
        api.apply(path, crd, manager="kubeflow-crd")

    def serving() -> bool:
        conditions = (api.request("GET", path).get("status") or {}).get("conditions") or []
        if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return False
        try:
            api.request("GET", f"/apis/{group}/{version}/{crd['spec']['names']['plural']}?limit=1")
        except ApiError as exc:
            if exc.status == 429:
                return False
            raise
        return True

    wait_until(serving, timeout=timeout, what=f"{name} to be served")
