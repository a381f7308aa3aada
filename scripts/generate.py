"""Writes every file of this repository that is derived from another one, so that no copy is kept by hand.

- crds/*.yaml, charts/kafka-offset-operator/crds/*.yaml and manifests/base/crds/*.yaml (with the
  kustomization.yaml listing them): all rendered from kafka_offset_operator.model.crds. Helm installs a
  chart's crds/ as they are, and neither a chart nor a kustomization may read files outside its own
  directory, so each needs copies of its own.
  Kopf's peering CRD (kafka_offset_operator.model.crds.kopf_peering_crd), which the operator's peering
  needs, is written beside them.
- manifests/components/namespaced/role.yaml: the rules of manifests/components/cluster-wide/clusterrole.yaml
  (the one place the operator's rules on namespaced resources are written) as the Role of each watched
  namespace in a namespaced install.
- charts/kafka-offset-operator/files/: copies of that ClusterRole, of manifests/base's cluster-scoped
  ClusterRole, of the pause-workloads component's rule and of the metrics component's PrometheusRule; the chart's templates read them with .Files.Get,
  so the chart and the kustomize install share their rules and alerts.
- manifests/components/admission-policy/admission-policy.yaml and the chart's files/admission-policy.yaml: the
  ValidatingAdmissionPolicy and its binding (kafka_offset_operator.model.admission) that verify approvedBy and
  requestedBy against the user sending the request.
- manifests/components/images/kustomization.yaml (the images both kustomize installs use), the chart's
  image.registry default and the example policy's Spark image: from pyproject.toml's one image setting,
  [tool.kafka-offset-operator.images] registry, and the package version (docs/images.md).
- docs/crd-reference.md: every field of both CRDs, rendered from the same schemas (scripts/crd_reference.py).
- integrations/argocd/resource_customizations/<group>/<Kind>/health.lua (Argo CD's own layout, tested there)
  from integrations/argocd/health/, and integrations/argocd/argocd-cm-patch.yaml: the same health checks as the
  argocd-cm keys an Argo CD installation reads them from.

Run it as `scripts/dev.sh generate` (or `python scripts/generate.py` wherever the project is installed).
`--check` writes nothing and exits 1 naming every stale, missing or left-over file; the tests run it.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import yaml

from crd_reference import render as render_reference
from kafka_offset_operator.model.admission import (
    validating_admission_policy,
    validating_admission_policy_binding,
)
from kafka_offset_operator.model.api import GROUP as API_GROUP
from kafka_offset_operator.model.crds import PEERING_CRD_FILE, build_crds, kopf_peering_crd, render

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "kafka-offset-operator"
MANIFESTS = ROOT / "manifests"
CLUSTERROLE = MANIFESTS / "components" / "cluster-wide" / "clusterrole.yaml"
ROLE = MANIFESTS / "components" / "namespaced" / "role.yaml"
BASE_CRDS = MANIFESTS / "base" / "crds"
# Sources the chart reads a copy of (files/NAME): its templates cannot read files outside the chart.
CHART_COPIES = {
    CLUSTERROLE: "clusterrole.yaml",
    MANIFESTS / "base" / "clusterrole-cluster-scoped.yaml": "clusterrole-cluster-scoped.yaml",
    MANIFESTS / "components" / "metrics" / "prometheusrule.yaml": "prometheusrule.yaml",
    MANIFESTS / "components" / "pause-workloads" / "rules.yaml": "pause-workloads-rules.yaml",
    ROOT / "integrations" / "grafana" / "kafka-offset-operator.json": "kafka-offset-operator.json",
}
ARGOCD = ROOT / "integrations" / "argocd"
ADMISSION = MANIFESTS / "components" / "admission-policy" / "admission-policy.yaml"
COMMAND = "scripts/dev.sh generate"
IMAGES_COMPONENT = MANIFESTS / "components" / "images" / "kustomization.yaml"
VALUES = CHART / "values.yaml"
SPARK_EXAMPLE = MANIFESTS / "examples" / "policy-approve-sasl.yaml"
OPERATOR_NAME, SPARK_NAME = "kafka-offset-operator", "kafka-offset-operator-spark"  # the base's bare names
# Directories holding only generated files: a file the generator no longer writes there is removed.
CRD_DIRS = (ROOT / "crds", CHART / "crds", BASE_CRDS)


def derived() -> dict[Path, str]:
    """Path -> the text the generator writes there."""
    out: dict[Path, str] = {}
    crds = build_crds()
    for name, crd in crds.items():
        out[ROOT / "crds" / name] = out[CHART / "crds" / name] = out[BASE_CRDS / name] = render(crd)
    peering = render(kopf_peering_crd())
    out[ROOT / "crds" / PEERING_CRD_FILE] = out[CHART / "crds" / PEERING_CRD_FILE] = out[BASE_CRDS / PEERING_CRD_FILE] = peering
    out[BASE_CRDS / "kustomization.yaml"] = (
        f"# Written by `{COMMAND}`: the CRDs of operator/kafka_offset_operator/model/crds.py and Kopf's peering CRD.\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"  - {name}\n" for name in sorted([*crds, PEERING_CRD_FILE])))
    out[ROLE] = role_from(CLUSTERROLE.read_text())
    for source, name in CHART_COPIES.items():
        # JSON has no comments: the dashboard's copy carries no header (the test of --check names its source).
        out[CHART / "files" / name] = ("" if name.endswith(".json") else copied(source)) + source.read_text()
    health = argocd_health_checks()
    out.update(health)
    out[ARGOCD / "argocd-cm-patch.yaml"] = argocd_cm_patch(health)
    out[ADMISSION] = out[CHART / "files" / "admission-policy.yaml"] = admission_policy()
    out[ROOT / "docs" / "crd-reference.md"] = render_reference(crds)
    registry, version = image_setting()
    out[IMAGES_COMPONENT] = images_component(registry, version)
    note = placeholder_note(registry)
    out[VALUES] = replaced_line(VALUES, r"^(  registry: ).*$", rf"\g<1>{registry}{note}")
    out[SPARK_EXAMPLE] = replaced_line(SPARK_EXAMPLE, rf"^(      image: )\S+/{SPARK_NAME}:.*$",
                                       rf"\g<1>{registry}/{SPARK_NAME}:{version}{note}")
    return out


def image_setting() -> tuple[str, str]:
    """The registry/prefix and the tag of both images: pyproject.toml's one setting and the version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return project["tool"]["kafka-offset-operator"]["images"]["registry"], project["project"]["version"]


PLACEHOLDER_REGISTRY = "ghcr.io/example"


def placeholder_note(registry: str) -> str:
    """The comment beside every applied line naming the placeholder registry (nobody owns ghcr.io/example)."""
    if registry == PLACEHOLDER_REGISTRY or registry.startswith(PLACEHOLDER_REGISTRY + "/"):
        return "  # a placeholder registry nobody owns: set yours (docs/images.md)"
    return ""


def images_component(registry: str, version: str) -> str:
    """A kustomize Component naming both images. `configurations` makes kustomize's image transformer also
    rewrite the container's environment values, so the Spark image (KAFKA_OFFSET_OPERATOR_SPARK_IMAGE) follows
    `images:` as the container image does, here and in any overlay above (which matches the full names)."""
    placeholder = placeholder_note(registry)
    return (f"# Written by `{COMMAND}` from pyproject.toml ([tool.kafka-offset-operator.images] registry and the\n"
            "# version): edit that setting, then run it; or, in an overlay of your own, `images:` entries naming\n"
            "# the references below with your newName (docs/images.md).\n"
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            "configurations:\n  - env-images.yaml  # the Spark image is an environment value\nimages:\n"
            + "".join(f"  - name: {name}\n    newName: {registry}/{name}{placeholder}\n    newTag: \"{version}\"\n"
                      for name in (OPERATOR_NAME, SPARK_NAME)))


def replaced_line(path: Path, pattern: str, replacement: str) -> str:
    """`path`'s text with the one line matching `pattern` rewritten (a hand-written file with one derived value)."""
    text, count = re.subn(pattern, replacement, path.read_text(), count=1, flags=re.M)
    if count != 1:
        raise SystemExit(f"{path.relative_to(ROOT)}: no line matches {pattern!r}")
    return text


def copied(source: Path) -> str:
    return f"# Copied from {source.relative_to(ROOT)} by `{COMMAND}`: edit that file, then run it.\n"


def role_from(clusterrole: str) -> str:
    """The ClusterRole's text as a Role (comments kept, so each rule still says why)."""
    if clusterrole.count("\nkind: ClusterRole\n") != 1:
        raise SystemExit(f"{CLUSTERROLE.relative_to(ROOT)}: expected one document of kind ClusterRole")
    body = clusterrole.replace("\nkind: ClusterRole\n", "\nkind: Role\n")
    body = body[body.index("apiVersion:"):]  # the source's header speaks of the ClusterRole
    return (f"# Written by `{COMMAND}` from {CLUSTERROLE.relative_to(ROOT)}: edit that file, then run it.\n"
            "# The Role of one watched namespace (the kustomization using the component sets which); docs/operator.md\n"
            "# explains each rule.\n"
            + body)


def admission_policy() -> str:
    """The ValidatingAdmissionPolicy and its binding, as one YAML stream."""
    header = (f"# Written by `{COMMAND}` from operator/kafka_offset_operator/model/admission.py: edit that file, then\n"
              "# run it. Needs Kubernetes 1.30+ (admissionregistration.k8s.io/v1); docs/install.md.\n")
    docs = [validating_admission_policy(), validating_admission_policy_binding()]
    return header + "---\n".join(yaml.safe_dump(d, sort_keys=False, width=110) for d in docs)


# Argo CD runs one self-contained health.lua per kind (its own layout: resource_customizations/<group>/<Kind>,
# no imports), so each is written from integrations/argocd/health/: the condition lookup all share, and the
# body of the kind's lifecycle (both one-shot kinds have the same one).
ARGOCD_HEALTH = {"ConsumerGroupOffsetPolicy": "policy.lua", "OffsetDeletion": "one-shot.lua", "OffsetReset": "one-shot.lua"}


def argocd_health_checks() -> dict[Path, str]:
    """resource_customizations/kafkaoffsets.dev/<Kind>/health.lua for each kind: the source's header comment
    ($KIND filled in), the shared condition lookup, the source's body."""
    sources = ARGOCD / "health"
    conditions = (sources / "conditions.lua").read_text()
    out = {}
    for kind, source in ARGOCD_HEALTH.items():
        header, _, body = (sources / source).read_text().replace("$KIND", kind).partition("\n\n")
        note = (f"-- Written by `{COMMAND}` from {sources.relative_to(ROOT)}/{source} and conditions.lua:\n"
                "-- edit those, then run it.")
        out[ARGOCD / "resource_customizations" / API_GROUP / kind / "health.lua"] = (
            f"{header}\n{note}\n{conditions}\n{body}")
    return out


def argocd_cm_patch(health: dict[Path, str]) -> str:
    """A strategic-merge patch for argocd-cm with one `resource.customizations.health.<group>_<kind>` key per
    health.lua (a literal block, so the Lua reads as written)."""
    lines = [
        f"# Generated from {ARGOCD.relative_to(ROOT)}/health by `{COMMAND}`: edit the .lua files there, then run",
        "# it. Apply with `kubectl -n argocd patch configmap argocd-cm --patch-file <this file>`.",
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: argocd-cm",
        "data:",
    ]
    for script, text in sorted(health.items()):
        group, kind = script.parent.parent.name, script.parent.name
        lines.append(f"  resource.customizations.health.{group}_{kind}: |")
        lines.extend(f"    {line}" if line else "" for line in text.splitlines())
    return "\n".join(lines) + "\n"


def leftovers(files: dict[Path, str]) -> list[Path]:
    """YAML files in the CRD directories that the generator does not write (a renamed CRD, say)."""
    return sorted(p for d in CRD_DIRS for p in d.glob("*.yaml") if p not in files)


def stale(files: dict[Path, str]) -> list[Path]:
    """Generated files that are missing or differ from what the generator writes."""
    return sorted(p for p, text in files.items() if not p.exists() or p.read_text() != text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any generated file is stale")
    args = parser.parse_args(argv)
    files = derived()
    todo, extra = stale(files), leftovers(files)
    if args.check:
        for path in todo:
            print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
        for path in extra:
            print(f"not generated (remove it): {path.relative_to(ROOT)}", file=sys.stderr)
        if todo or extra:
            print(f"run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    for path in todo:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
        print(f"wrote {path.relative_to(ROOT)}")
    for path in extra:
        path.unlink()
        print(f"removed {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
