"""The kustomize install: manifests/base plus its components (cluster-wide, namespaced, metrics).

Verified here, for every way to install (install_renders.INSTALLS): `kubectl kustomize` renders it; every
object validates against Kubernetes' own schemas (kubernetes-validate, strict) or Prometheus Operator's
fields; Pod Security "restricted" holds; one replica, strategy Recreate, liveness on Kopf's /healthz; the
Deployment's arguments parse with the real CLI and name exactly the namespaces that got a Role; in a
namespaced install no ClusterRole grants anything on namespaced resources (Secrets least of all); the alerts
use only metrics and labels the operator exports, and the backup store counts its failures for them; the
cluster-wide rules allow every API call the operator made while running deletions and restores (on the real
API server, each call read from its audit log). kubectl applies both installs, as the install commands of
README.md and docs/install.md write them, to the real API server in test_real_install.py. The Helm
chart, rendered by Helm itself and compared with these renders, is in test_helm_chart.py.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from audit_log import AuditLog
from brokers import make_topics
from install_renders import (
    INSTALLS,
    KUBECTL,
    MANIFESTS,
    NO_KUBECTL,
    WATCHED,
    allowed,
    container,
    one,
    render_install,
    restricted_violations,
    validate,
)
from installed_api import ADMIN, OPERATOR_USER, InstalledApi
from kafka_clients import empty_group
from kafka_under_test import Kafka
from operator_harness import GROUP_VERSION, ROOT, Kube

from kafka_offset_operator.adapters import metrics
from kafka_offset_operator.adapters.backup_store import BackupStore
from kafka_offset_operator.adapters.kube import Kube as Kube_
from kafka_offset_operator.adapters.kube import KubeError
from kafka_offset_operator.cli import build_parser
from kafka_offset_operator.model.backups import Action, BackupRecord, Requester

CHART = ROOT / "charts" / "kafka-offset-operator"
# Resources without a namespace: a ClusterRole's rules on them are cluster-wide by nature.
CLUSTER_SCOPED = {"customresourcedefinitions", "namespaces", "clusterkopfpeerings"}


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    workdir = tmp_path_factory.mktemp("kustomize")
    return {install: render_install(install, workdir) for install in INSTALLS}


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_install_renders_the_objects_it_promises(renders: dict[str, list[dict[str, Any]]]) -> None:
    base = ["CustomResourceDefinition"] * 4 + ["Namespace", "ServiceAccount", "Deployment",
            "ClusterRole", "ClusterRoleBinding",  # the cluster-scoped needs
            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]  # approvers verified (1.30+)
    scope = {"cluster-wide": ["ClusterRole", "ClusterRoleBinding"],
             "namespaced": ["Role", "RoleBinding"] * len(WATCHED)}
    for install, objects in renders.items():
        expected = base + scope[install.split("+")[0]] + (["Service", "ServiceMonitor", "PrometheusRule"] if "metrics" in install else [])
        assert sorted(o["kind"] for o in objects) == sorted(expected), install
        for o in objects:
            assert o["apiVersion"] and o["metadata"]["name"], install
    crds = {o["metadata"]["name"] for o in renders["cluster-wide"] if o["kind"] == "CustomResourceDefinition"}
    assert crds == {d["metadata"]["name"] for p in (ROOT / "crds").glob("*.yaml") for d in docs(p)}


def test_every_kustomization_lists_every_file_beside_it() -> None:
    """A manifest dropped into a directory (a merge, a new CRD) without being listed would silently not install."""
    for kustomization in MANIFESTS.rglob("kustomization.yaml"):
        listed = yaml.safe_load(kustomization.read_text())
        names = {Path(p).parts[0] for key in ("resources", "components", "configurations") for p in listed.get(key) or []}
        names |= {Path(p["path"]).parts[0] for p in listed.get("patches") or [] if "path" in p}
        here = {p.name for p in kustomization.parent.iterdir() if p.name != "kustomization.yaml"}
        assert here <= names, f"{kustomization.relative_to(ROOT)} does not list {sorted(here - names)}"


def test_every_rendered_object_validates_against_kubernetes_schemas(renders: dict[str, list[dict[str, Any]]]) -> None:
    for install, objects in renders.items():
        for o in objects:
            try:
                validate(o)
            except Exception as exc:
                raise AssertionError(f"{install}: {o['kind']} {o['metadata']['name']}: {exc}") from None


def test_pod_security_restricted_one_replica_recreate_and_liveness_on_kopfs_endpoint(
        renders: dict[str, list[dict[str, Any]]]) -> None:
    for install, objects in renders.items():
        deployment = one(objects, "Deployment")
        assert restricted_violations(deployment["spec"]["template"]["spec"]) == [], install
        assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
        c = container(objects)
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
        assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"health": 8080, "metrics": 9090}
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert {m["mountPath"] for m in c["volumeMounts"]} == {"/tmp"} and "emptyDir" in volumes["tmp"]
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]


def test_the_deployments_arguments_parse_and_name_the_namespaces_with_a_role(
        renders: dict[str, list[dict[str, Any]]]) -> None:
    parse = build_parser().parse_args
    wide = parse(container(renders["cluster-wide"])["args"])  # the real CLI accepts them
    assert (wide.command, wide.all_namespaces, wide.namespaces, wide.health_port, wide.metrics_port) == ("run", True, None, 8080, 9090)
    narrow = parse(container(renders["namespaced"])["args"])
    assert (narrow.all_namespaces, tuple(narrow.namespaces)) == (False, WATCHED)
    roles = {o["metadata"]["namespace"] for o in renders["namespaced"] if o["kind"] in ("Role", "RoleBinding")}
    assert roles == set(WATCHED)
    env = {e["name"]: e for e in container(renders["cluster-wide"])["env"]}
    assert env["KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"]["value"].startswith("ghcr.io/")  # the SparkApplication engine's default
    # One actor at a time: peering on (the CLI's default), with the pod's name as Kopf's identity.
    # The peering object is the install's own (the kubelet expands the namespace): two installs act side by side.
    assert (wide.standalone, wide.peering, narrow.standalone) == (False, "kafka-offset-operator.$(POD_NAMESPACE)", False)
    assert env["POD_ID"] == {"name": "POD_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    # Approvals verified by the API server: the admission policy ships, so the operator refuses unverified ones,
    # and knows its own user name (its Auto approvals and its proposals' requestedBy must be it).
    for install in ("cluster-wide", "namespaced"):
        verified = {e["name"]: e.get("value") for e in container(renders[install])["env"]}
        assert verified["KAFKA_OFFSET_OPERATOR_APPROVALS_VERIFIED"] == "true", install
    assert env["KAFKA_OFFSET_OPERATOR_USER"]["value"] == "system:serviceaccount:$(POD_NAMESPACE):$(POD_SERVICE_ACCOUNT)"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["POD_SERVICE_ACCOUNT"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.serviceAccountName"
    names = [e["name"] for e in container(renders["cluster-wide"])["env"]]
    assert names.index("KAFKA_OFFSET_OPERATOR_USER") > max(names.index("POD_NAMESPACE"), names.index("POD_SERVICE_ACCOUNT"))


def test_namespaced_install_grants_namespaced_resources_only_by_roles(renders: dict[str, list[dict[str, Any]]]) -> None:
    """Least privilege: with watch namespaces, Secrets (and every other namespaced resource) are granted by a
    Role in each watched namespace and by no ClusterRole."""
    for install in ("namespaced", "namespaced+metrics", "namespaced+pause-workloads"):
        objects = renders[install]
        for role in (o for o in objects if o["kind"] == "ClusterRole"):
            for rule in role["rules"]:
                assert set(rule["resources"]) <= CLUSTER_SCOPED, f"{role['metadata']['name']} grants {rule}"
        assert not [o for o in objects if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] == "kafka-offset-operator"]
        account = one(objects, "ServiceAccount")["metadata"]
        for namespace in WATCHED:
            role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["namespace"] == namespace)
            assert allowed(role["rules"], "", "secrets", "get") and not allowed(role["rules"], "", "secrets", "list")
            binding = next(o for o in objects if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] == namespace)
            assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}]
    # The same rules in both scopes: the Role is generated from the cluster-wide ClusterRole.
    wide = one(renders["cluster-wide"], "ClusterRole", "kafka-offset-operator")["rules"]
    assert all(r["rules"] == wide for r in renders["namespaced"] if r["kind"] == "Role")
    assert not [r for r in wide if set(r["resources"]) & CLUSTER_SCOPED], "cluster-scoped rules go to manifests/base"


SCALES = [("apps", f"{plural}/scale", verb) for plural in ("deployments", "statefulsets") for verb in ("get", "patch")]


def test_pausing_workloads_is_an_opt_in_of_scale_subresources_only(renders: dict[str, list[dict[str, Any]]]) -> None:
    """OffsetReset's spec.pauseWorkloads: no install grants anything on workloads by default; the component
    adds get and patch of the scale subresources (to the ClusterRole, or to each watched namespace's Role),
    and never the workloads themselves (their pod templates)."""
    def roles(install: str) -> list[dict[str, Any]]:
        return [o for o in renders[install] if o["kind"] in ("ClusterRole", "Role")]

    for install in ("cluster-wide", "namespaced", "cluster-wide+metrics", "namespaced+metrics"):
        assert not [r for o in roles(install) for r in o["rules"] if "apps" in r["apiGroups"]], install
    for install in ("cluster-wide+pause-workloads", "namespaced+pause-workloads"):
        granting = [o for o in roles(install) if all(allowed(o["rules"], *call) for call in SCALES)]
        assert [(o["kind"], o["metadata"].get("namespace")) for o in granting] == (
            [("ClusterRole", None)] if install.startswith("cluster") else [("Role", ns) for ns in WATCHED]), install
        for o in roles(install):
            for plural in ("deployments", "statefulsets"):
                assert not [v for v in ("get", "patch", "update") if allowed(o["rules"], "apps", plural, v)], install
            assert not allowed(o["rules"], "apps", "deployments/scale", "update")


def test_metrics_component_scrapes_the_service_and_alerts_on_exported_metrics(
        renders: dict[str, list[dict[str, Any]]]) -> None:
    objects = renders["cluster-wide+metrics"]
    service, monitor = one(objects, "Service"), one(objects, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["spec"]["selector"].items() <= one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in service["spec"]["ports"]] == ["metrics"]
    # Every series an alert reads is one the operator exports, with labels it has.
    exported: dict[str, set[str]] = {}
    for collector in vars(metrics).values():
        if hasattr(collector, "_labelnames") and hasattr(collector, "describe"):
            for family in collector.describe():
                suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(family.type, [""])
                for suffix in suffixes:
                    exported[family.name + suffix] = set(collector._labelnames)
    alerts = {r["alert"]: r["expr"] for g in one(objects, "PrometheusRule")["spec"]["groups"] for r in g["rules"]}
    assert {"KafkaOffsetOperatorAnalysisFailing", "KafkaOffsetOperatorDeletionFailed",
            "KafkaOffsetOperatorBackupStoreWriteFailing"} <= set(alerts)
    for alert, expr in alerts.items():
        series = re.findall(r"(kafka_offset_operator_[a-z_]+)(?:\{([^}]*)\})?", expr)
        assert series, alert
        for name, matchers in series:
            assert name in exported, f"{alert}: {name} is not exported by adapters/metrics.py"
            labels = set(re.findall(r"([a-z_]+)\s*=~?", matchers))
            assert labels <= exported[name], f"{alert}: {name} has no label {labels - exported[name]}"


class _RefusingApi:
    """The backup store's view of an API server that refuses every ConfigMap call (a quota, a lost RBAC rule)."""

    def create_configmap(self, namespace: str, body: Any) -> bool:
        raise KubeError("Kubernetes API error 403: Forbidden")

    def list_configmaps(self, namespace: str | None, labels: Any) -> list[dict[str, Any]]:
        raise KubeError("Kubernetes API error 403: Forbidden")


def test_the_backup_store_counts_its_failures_for_the_alert() -> None:
    """The BackupStore alerts read kafka_offset_operator_backup_store_errors_total{operation}: a refused write
    and a refused sweep each count, and the error still reaches the caller (no change of offsets starts)."""
    def count(operation: str) -> float:
        return metrics.REGISTRY.get_sample_value("kafka_offset_operator_backup_store_errors_total", {"operation": operation}) or 0.0

    store = BackupStore(cast(Kube_, _RefusingApi()))
    record = BackupRecord(name="offset-backup-x", action=Action.DELETE, cluster_id="c", bootstrap_servers="k:9092",
                          group="g", offsets={}, requested_by=Requester("OffsetDeletion", "kafka", "x", "uid", "test"),
                          taken_at="2026-01-01T00:00:00Z", expires_at="2026-02-01T00:00:00Z")
    before = count("write"), count("expire")
    with pytest.raises(KubeError):
        store.write(record)
    with pytest.raises(KubeError):
        store.expire(None, "2026-03-01T00:00:00Z")
    assert (count("write"), count("expire")) == (before[0] + 1, before[1] + 1)


@pytest.mark.real_api  # the operator on the installed ServiceAccount's token; its calls from the audit log
def test_clusterrole_allows_every_call_the_operator_makes(
        kafka: Kafka, api: InstalledApi, kube: Kube, start_operator: Any, operator_options: Any,
        renders: dict[str, list[dict[str, Any]]]) -> None:
    make_topics(kafka, {"orders": 3})
    empty_group(kafka.bootstrap_servers, "rbac", {("orders", p): 1 for p in range(3)})
    kube.create_secret("unused", {"x": "y"})
    audit = AuditLog.of(api.plane, OPERATOR_USER)
    start_operator(dataclasses.replace(operator_options, large_backup_partitions=2))  # a ConfigMap backup too
    kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "rbac"},
                                    "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, "group": "rbac",
                                             "topics": [{"name": "orders"}], "approved": True, "approvedBy": ADMIN,
                                             "restore": True}})
    kube.wait_for_status("rbac", lambda s: s.get("phase") == "Restored", what="Restored")
    kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                    "metadata": {"name": "rbac-secret"},
                                    "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers,
                                                       "securityProtocol": "SASL_PLAINTEXT",
                                                       "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "missing"}}},
                                             "group": "rbac", "topics": [{"name": "orders"}]}})
    kube.wait_for_status("rbac-secret", lambda s: bool(s.get("conditions")), what="a condition")
    audit.wait(lambda c: c.resource == "secrets" and c.name == "missing", what="the Secret's read")

    # What the default install grants: both of its ClusterRoles.
    rules = [rule for o in renders["cluster-wide"] if o["kind"] == "ClusterRole" for rule in o["rules"]]
    calls = {(c.group, c.resource_path, c.verb) for c in audit.calls()}
    assert ("kafkaoffsets.dev", "offsetdeletions/status", "patch") in calls and ("", "configmaps", "create") in calls
    assert ("", "secrets", "get") in calls and ("", "events", "create") in calls
    assert sorted(c for c in calls if not allowed(rules, *c)) == []


# -- generated files, the chart's values, and the Spark driver's RBAC


def test_every_generated_file_is_what_the_generator_writes() -> None:
    """The CRDs (all copies), the namespaced Role and the chart's copies of the rules and alerts, as
    `scripts/dev.sh generate --check` sees them, so the command the failure messages name is the one that
    fixes them. (That the chart's CRDs equal crds/ and what crds.py builds, file by file, is in tests/unit/crds.)"""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_chart_metadata_and_values_parse() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"], chart["type"]) == ("v2", "kafka-offset-operator", "application")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["watchNamespaces"] == [] and values["healthPort"] == 8080


def test_chart_templates_use_only_defined_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    used = set()
    for template in (CHART / "templates").glob("*"):
        used |= set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    for path in sorted(used):
        node: Any = values
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, f".Values.{path} is not in values.yaml"
            node = node[part]


def test_spark_driver_role_covers_what_the_results_sink_calls() -> None:
    """results_sink reads the policy ConfigMap (get), writes result parts (create, or update on a rerun)."""
    objects = docs(ROOT / "manifests" / "spark" / "driver-rbac.yaml")
    role = next(o for o in objects if o["kind"] == "Role")
    assert allowed(role["rules"], "", "configmaps", "get")
    assert allowed(role["rules"], "", "configmaps", "create") and allowed(role["rules"], "", "configmaps", "update")
    sink = (ROOT / "spark" / "offset_expiry" / "results_sink.py").read_text()
    calls = set(re.findall(r"\.(read|create|replace|patch|delete|list)_namespaced_config_map\(", sink))
    assert calls <= {"read", "create", "replace"}, calls
    binding = next(o for o in objects if o["kind"] == "RoleBinding")
    assert binding["subjects"][0]["name"] == next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
