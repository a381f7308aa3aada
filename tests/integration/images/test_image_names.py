"""Image names and tags have one source: scripts/images.sh derives them from pyproject.toml's version (each
overridable), and the manifests, the example and the chart refer to exactly those."""

from __future__ import annotations

import os
import subprocess

import yaml
from image_harness import ROOT, SCRIPT, names


def test_the_manifests_and_the_chart_use_the_images_the_script_builds() -> None:
    built = names()
    deployment = yaml.safe_load((ROOT / "manifests/base/deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == built["OPERATOR_IMAGE"]
    spark_env = {e["name"]: e.get("value") for e in container["env"]}["KAFKA_OFFSET_OPERATOR_SPARK_IMAGE"]
    assert spark_env == built["SPARK_IMAGE"]
    example = yaml.safe_load((ROOT / "manifests/examples/policy-approve-sasl.yaml").read_text())
    assert example["spec"]["analysis"]["sparkApplication"]["image"] == built["SPARK_IMAGE"]
    chart = yaml.safe_load((ROOT / "charts/kafka-offset-operator/Chart.yaml").read_text())
    values = yaml.safe_load((ROOT / "charts/kafka-offset-operator/values.yaml").read_text())
    assert f"{values['image']['repository']}:{chart['appVersion']}" == built["OPERATOR_IMAGE"]
    assert chart["appVersion"] == built["VERSION"]
    assert f"{values['sparkImage']['repository']}:{chart['appVersion']}" == built["SPARK_IMAGE"]


def test_names_are_overridable() -> None:
    env = {**os.environ, "KOO_IMAGE_REGISTRY": "registry.example:5000/team", "KOO_IMAGE_TAG": "dev"}
    out = subprocess.run([str(SCRIPT), "names"], check=True, capture_output=True, text=True, env=env, timeout=60).stdout
    assert "OPERATOR_IMAGE=registry.example:5000/team/kafka-offset-operator:dev" in out.splitlines()
    assert "SPARK_IMAGE=registry.example:5000/team/kafka-offset-operator-spark:dev" in out.splitlines()
