"""Every folder of the repository with a kustomization.yaml builds with kustomize (`kubectl kustomize`, the
kustomize the other install tests use): a file of that name is kustomize's, and anything else in it (a Flux
Kustomization, say: integrations/flux/flux-kustomization.yaml) breaks the folder's build and any build that
includes the folder. A Component cannot build alone, so each builds inside an overlay of the base and a scope,
as an install would use it. About a second of kubectl in all; no cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from install_renders import KUBECTL, MANIFESTS, NO_KUBECTL, kustomize
from operator_harness import ROOT

SKIPPED_DIRS = {".git", ".venv", "node_modules", "__pycache__"}
KUSTOMIZE_KINDS = {("kustomize.config.k8s.io/v1beta1", "Kustomization"), ("kustomize.config.k8s.io/v1alpha1", "Component")}


def kustomization_folders() -> list[Path]:
    found = []
    for path, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        if "kustomization.yaml" in files:
            found.append(Path(path))
    return found


FOLDERS = kustomization_folders()


def test_the_folders_are_found() -> None:
    """The walk sees the installs (a broken walk would make the test below pass on nothing)."""
    assert {MANIFESTS / "operator", MANIFESTS / "namespaced", MANIFESTS / "components" / "images"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kustomization_renders(folder: Path, tmp_path: Path) -> None:
    if KUBECTL is None:
        pytest.skip(NO_KUBECTL)
    doc = yaml.safe_load((folder / "kustomization.yaml").read_text())
    kind = (doc.get("apiVersion", "kustomize.config.k8s.io/v1beta1"), doc.get("kind", "Kustomization"))
    assert kind in KUSTOMIZE_KINDS, f"{folder.relative_to(ROOT)}/kustomization.yaml is a {kind}, not kustomize's"
    if kind[1] == "Kustomization":
        assert kustomize(folder)
        return
    # A Component: the base, one scope (the namespaced one needs a namespace of its own), then this one.
    scope = "namespaced" if folder.name == "namespaced" else "cluster-wide"
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    components = [MANIFESTS / "components" / scope] + ([folder] if folder.name != scope else [])
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(MANIFESTS / "base", overlay)],
        "components": [os.path.relpath(c, overlay) for c in components]}))
    assert kustomize(overlay)
