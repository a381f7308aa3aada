"""The Helm chart, rendered and linted by Helm itself (its Go SDK, through helm-python-sdk's bundled
library: no helm binary is needed), checked equal to the kustomize install of manifests/ for each option,
validated against Kubernetes' own schemas (installed with the real helm binary into the real API server, a
Role per watched namespace and the Service on: test_real_install.py). Its values.schema.json refuses bad
values with Helm's message naming the value; every value the templates use is declared, and the reverse."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from install_renders import (
    KUBECTL,
    NO_KUBECTL,
    WATCHED,
    allowed,
    container,
    one,
    render_install,
    restricted_violations,
    validate,
)
from operator_harness import ROOT

from kafka_offset_operator.cli import build_parser

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (Helm's Go SDK for Python) is not installed")

CHART = ROOT / "charts" / "kafka-offset-operator"
RELEASE_NAMESPACE = "kafka-offset-operator"
METRICS_ON = {"service": {"enabled": True}, "serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}
# Each option of the chart, rendered and linted in turn (the default values first).
OPTIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "watchNamespaces": {"watchNamespaces": list(WATCHED)},
    "metrics": {"metrics": METRICS_ON},
    "everything": {"watchNamespaces": ["team-a"], "metrics": {**METRICS_ON, "serviceMonitor": {
                       "enabled": True, "interval": "1m", "labels": {"release": "prometheus"}}},
                   "image": {"repository": "registry.example/koo", "tag": "9.9.9", "pullPolicy": "Always"},
                   "sparkImage": {"repository": "registry.example/koo-spark", "tag": "9.9.9"},
                   "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
                   "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
                   "logFormat": "json", "verbose": True, "retryInterval": 10, "metricsPort": 9999,
                   "imagePullSecrets": [{"name": "pull"}], "podAnnotations": {"a": "b"},
                   "nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}],
                   "affinity": {"nodeAffinity": {}}, "serviceAccount": {"create": True, "name": "koo-sa"},
                   "admissionPolicy": {"enabled": False}},  # a cluster older than 1.30
    "no rbac, no service account": {"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "mine"}},
}


def render(values: dict[str, Any] | None = None, name: str = "koo") -> list[dict[str, Any]]:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values or {}, name=name, namespace=RELEASE_NAMESPACE)
    return [d for path, text in files.items() if path.endswith(".yaml") for d in yaml.safe_load_all(text) if d]


def notes(values: dict[str, Any] | None = None) -> str:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values or {}, name="koo", namespace=RELEASE_NAMESPACE)
    return files["kafka-offset-operator/templates/NOTES.txt"]


def container_args(objects: list[dict[str, Any]]) -> list[str]:
    return [str(a) for a in container(objects)["args"]]


@pytest.mark.parametrize("option", list(OPTIONS))
def test_helm_lints_and_renders_valid_restricted_objects(option: str) -> None:
    values = OPTIONS[option]
    result = helm.lint(str(CHART), values)
    assert result["errors"] == [], result
    assert [m for m in result["messages"] if m["severity"] > 1] == []  # info-level hints only
    objects = render(values)
    for o in objects:
        validate(o)
    assert restricted_violations(one(objects, "Deployment")["spec"]["template"]["spec"]) == []
    args = build_parser().parse_args(container_args(objects))  # the real CLI accepts what the chart passes
    assert args.command == "run" and args.all_namespaces == (not values.get("watchNamespaces"))


# -- equal to the kustomize install

# Labels only Helm sets (the release and chart); everything else must match the kustomize render exactly.
HELM_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "helm.sh/chart")


def normalised(objects: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    def strip(labels: dict[str, str] | None) -> None:
        for key in HELM_LABELS:
            (labels or {}).pop(key, None)

    out = {}
    for o in copy.deepcopy(objects):
        if o["kind"] in ("Namespace", "CustomResourceDefinition"):  # Helm: --create-namespace and crds/
            continue
        strip(o["metadata"].get("labels"))
        if o["kind"] == "Deployment":
            strip(o["spec"]["selector"]["matchLabels"])
            strip(o["spec"]["template"]["metadata"]["labels"])
        if o["kind"] == "Service":
            strip(o["spec"]["selector"])
        if o["kind"] == "ServiceMonitor":
            strip(o["spec"]["selector"]["matchLabels"])
        out[(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])] = o
    return out


@pytest.mark.skipif(KUBECTL is None, reason=NO_KUBECTL)
@pytest.mark.parametrize(("install", "values"), [
    ("cluster-wide", {}),
    ("namespaced", {"watchNamespaces": list(WATCHED)}),
    ("cluster-wide+metrics", {"metrics": METRICS_ON}),
    ("namespaced+metrics", {"watchNamespaces": list(WATCHED), "metrics": METRICS_ON}),
    ("cluster-wide+pause-workloads", {"pauseWorkloads": {"enabled": True}}),
    ("namespaced+pause-workloads", {"watchNamespaces": list(WATCHED), "pauseWorkloads": {"enabled": True}}),
])
def test_chart_renders_what_kustomize_renders(install: str, values: dict[str, Any], tmp_path: Path) -> None:
    """Released as `kafka-offset-operator` (so the chart's names are the manifests'), the chart's objects are
    the kustomize install's, field for field, but for Helm's own labels."""
    chart = normalised(render(values, name="kafka-offset-operator"))
    plain = normalised(render_install(install, tmp_path))
    assert sorted(chart) == sorted(plain)
    for key, obj in plain.items():
        assert chart[key] == obj, f"{key} differs from the kustomize install's"


def test_chart_rules_are_the_manifests_rules() -> None:
    """manifests/components/cluster-wide/clusterrole.yaml and manifests/base/clusterrole-cluster-scoped.yaml are
    the one source of the rules; the chart reads its generated copies."""
    def manifest_rules(path: str) -> list[dict[str, Any]]:
        return next(d for d in yaml.safe_load_all((ROOT / "manifests" / path).read_text()) if d["kind"] == "ClusterRole")["rules"]

    message = "the chart's rules differ from manifests/: run: scripts/dev.sh generate"
    objects = render()
    assert one(objects, "ClusterRole", "koo-kafka-offset-operator")["rules"] == manifest_rules("components/cluster-wide/clusterrole.yaml"), message
    assert one(objects, "ClusterRole", "koo-kafka-offset-operator-cluster-scoped")["rules"] == manifest_rules("base/clusterrole-cluster-scoped.yaml"), message
    for binding in (o for o in objects if o["kind"] == "ClusterRoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": one(objects, "ServiceAccount")["metadata"]["name"],
                                        "namespace": RELEASE_NAMESPACE}]


def test_pause_workloads_is_off_by_default_and_adds_the_scale_rule_when_enabled() -> None:
    scale = ("apps", "deployments/scale", "patch")
    assert not [o for o in render() if o["kind"] in ("ClusterRole", "Role") and allowed(o["rules"], *scale)]
    granted = [o for o in render({"pauseWorkloads": {"enabled": True}}) if o["kind"] == "ClusterRole"
               and allowed(o["rules"], *scale) and allowed(o["rules"], "apps", "statefulsets/scale", "get")]
    assert [o["metadata"]["name"] for o in granted] == ["koo-kafka-offset-operator"]
    assert one(render({"pauseWorkloads": {"enabled": True}, "rbac": {"create": False},
                       "serviceAccount": {"create": False, "name": "mine"}}), "Deployment")


def test_watch_namespaces_get_roles_and_no_cluster_wide_secret_read() -> None:
    objects = render({"watchNamespaces": ["team-a", "team-b"], "verbose": True, "image": {"tag": "9.9.9"}})
    args = build_parser().parse_args(container_args(objects))
    assert args.command == "run" and not args.all_namespaces and args.namespaces == ["team-a", "team-b"]
    assert "--verbose" in container_args(objects)
    assert container(objects)["image"].endswith(":9.9.9")
    for role in (o for o in objects if o["kind"] == "ClusterRole"):
        assert not allowed(role["rules"], "", "secrets", "get"), role["metadata"]["name"]
    roles = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "Role"}
    assert sorted(roles) == ["team-a", "team-b"] and all(allowed(r["rules"], "", "secrets", "get") for r in roles.values())
    bindings = {o["metadata"]["namespace"]: o for o in objects if o["kind"] == "RoleBinding"}
    assert sorted(bindings) == ["team-a", "team-b"]
    assert all(b["subjects"][0]["namespace"] == RELEASE_NAMESPACE for b in bindings.values())
    assert "team-a, team-b" in notes({"watchNamespaces": ["team-a", "team-b"]})


def test_switches_reach_the_objects() -> None:
    objects = render(OPTIONS["everything"])
    c = container(objects)
    assert c["image"] == "registry.example/koo:9.9.9" and c["imagePullPolicy"] == "Always"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
    assert env == {"KAFKA_OFFSET_OPERATOR_SPARK_IMAGE": "registry.example/koo-spark:9.9.9", "HTTPS_PROXY": "http://proxy:3128",
                   "POD_ID": {"fieldRef": {"fieldPath": "metadata.name"}},
                   "POD_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                   "POD_SERVICE_ACCOUNT": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}},
                   "KAFKA_OFFSET_OPERATOR_USER": "system:serviceaccount:$(POD_NAMESPACE):$(POD_SERVICE_ACCOUNT)"}
    assert not [o for o in objects if o["kind"].startswith("ValidatingAdmissionPolicy")]  # admissionPolicy off
    assert c["resources"] == OPTIONS["everything"]["resources"]
    args = build_parser().parse_args(container_args(objects))
    assert (args.log_format, args.verbose, args.retry_interval, args.metrics_port) == ("json", True, 10.0, 9999)
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"] == 9999
    assert one(objects, "Service")["spec"]["ports"][0]["port"] == 9999
    assert one(objects, "ServiceMonitor")["metadata"]["labels"]["release"] == "prometheus"
    assert one(objects, "ServiceMonitor")["spec"]["endpoints"][0]["interval"] == "1m"
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "koo-sa"
    bare = render(OPTIONS["no rbac, no service account"])
    assert sorted(o["kind"] for o in bare) == ["Deployment", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    assert one(bare, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "mine"
    defaults = container(render())
    assert defaults["image"] == "ghcr.io/example/kafka-offset-operator:0.1.0"  # the chart's appVersion


def test_prometheus_rule_keeps_prometheus_templates_untouched() -> None:
    """The alerts' annotations use Prometheus' own {{ $labels.x }}: Helm must pass them through, not render them."""
    rule = one(render({"metrics": METRICS_ON}), "PrometheusRule")
    text = json.dumps(rule["spec"])
    assert "{{ $labels.engine }}" in text and "{{ $labels.phase }}" in text


# -- the values schema


@pytest.mark.parametrize(("values", "message"), [
    ({"metricsPort": "abc"}, "at '/metricsPort': got string, want integer"),
    ({"watchNamespaces": "team-a"}, "at '/watchNamespaces': got string, want array"),
    ({"watchNamespaces": ["Team_A"]}, "at '/watchNamespaces/0'"),
    ({"logFormat": "xml"}, "at '/logFormat': value must be one of 'text', 'json'"),
    ({"image": {"pullPolicy": "Sometimes"}}, "at '/image/pullPolicy'"),
    ({"healthPort": 70000}, "at '/healthPort'"),
    ({"metrics": {"serviceMonitor": {"interval": "soon"}}}, "at '/metrics/serviceMonitor/interval'"),
    ({"securityContext": {"allowPrivilegeEscalation": True}}, "at '/securityContext/allowPrivilegeEscalation'"),
    ({"podSecurityContext": {"runAsNonRoot": False}}, "at '/podSecurityContext/runAsNonRoot'"),
    ({"watchNamepsaces": ["team-a"]}, "additional properties 'watchNamepsaces' not allowed"),
    ({"pauseWorkloads": {"enabled": "yes"}}, "at '/pauseWorkloads/enabled': got string, want boolean"),
])
def test_values_schema_refuses_bad_values_naming_them(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        render(values)
    assert message in str(refused.value)


def test_serviceMonitor_without_the_service_is_refused_clearly() -> None:
    with pytest.raises(helm.HelmError) as refused:
        render({"metrics": {"serviceMonitor": {"enabled": True}}})
    assert "metrics.serviceMonitor.enabled needs metrics.service.enabled" in str(refused.value)


def leaves(node: Any, prefix: str = "") -> set[str]:
    """Dotted paths of a values tree, down to values that are not maps (or empty maps)."""
    if isinstance(node, dict) and node:
        return {p for key, value in node.items() for p in leaves(value, f"{prefix}{key}.")}
    return {prefix.rstrip(".")}


def test_every_value_is_declared_used_and_in_the_schema() -> None:
    """Both ways: each `.Values.x` a template uses is in values.yaml and values.schema.json; each value of
    values.yaml is used by a template (itself, or a map holding it that goes out whole with toYaml); the
    schema declares exactly the keys of values.yaml."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    used = set()
    for template in (CHART / "templates").glob("*"):
        used |= set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    declared = leaves(values)
    for path in used:
        assert any(d == path or d.startswith(path + ".") for d in declared), f".Values.{path} is not in values.yaml"
    for path in declared:
        assert any(path == u or path.startswith(u + ".") for u in used), f"{path} of values.yaml is used by no template"

    def check(node: dict[str, Any], values_node: Any, where: str) -> None:
        props = node.get("properties")
        if props is None or not isinstance(values_node, dict):
            return
        if node.get("additionalProperties") is False:
            assert set(props) == set(values_node), f"{where or 'values'}: schema {sorted(props)} vs values.yaml {sorted(values_node)}"
        for key, sub in props.items():
            if key in values_node:
                check(sub, values_node[key], f"{where}.{key}".lstrip("."))

    check(schema, values, "")
    assert set(schema["required"]) == set(values)


# -- applied


def test_peering_values_reach_the_arguments() -> None:
    parse = build_parser().parse_args
    default = parse(container_args(render()))
    # The release's own peering object (the kubelet expands the namespace): two releases act side by side.
    assert (default.standalone, default.peering, default.peering_lifetime) == (False, "koo-kafka-offset-operator.$(POD_NAMESPACE)", 60)
    tuned = parse(container_args(render({"peering": {"name": "team-a", "lifetime": 20}})))
    assert (tuned.standalone, tuned.peering, tuned.peering_lifetime) == (False, "team-a", 20)
    assert parse(container_args(render({"peering": {"enabled": False}}))).standalone


def test_the_grafana_dashboard_configmap_carries_the_dashboard() -> None:
    assert not [o for o in render() if o["kind"] == "ConfigMap"]  # off by default
    objects = render({"metrics": {**METRICS_ON, "grafanaDashboard": {"enabled": True, "labels": {"grafana_dashboard": "1"}}}})
    configmap = one(objects, "ConfigMap")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(configmap["data"]["kafka-offset-operator.json"])
    assert dashboard == json.loads((ROOT / "integrations" / "grafana" / "kafka-offset-operator.json").read_text())
    assert "{{namespace}}/{{policy}}" in configmap["data"]["kafka-offset-operator.json"]  # Grafana's, untouched
