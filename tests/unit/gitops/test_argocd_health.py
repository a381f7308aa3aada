"""Every case of every health_test.yaml under integrations/argocd, run as Argo CD runs them: the object as
`obj` in a real Lua interpreter, the returned status and message compared with the expected ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from argocd_health import CUSTOMIZATIONS, health


def cases() -> list[Any]:
    found = []
    for test_file in sorted(CUSTOMIZATIONS.glob("*/*/health_test.yaml")):
        for case in yaml.safe_load(test_file.read_text())["tests"]:
            kind_dir = test_file.parent
            found.append(pytest.param(kind_dir, case, id=f"{kind_dir.name}-{Path(case['inputPath']).stem}"))
    return found


@pytest.mark.parametrize(("kind_dir", "case"), cases())
def test_health(kind_dir: Path, case: dict[str, Any]) -> None:
    obj = yaml.safe_load((kind_dir / case["inputPath"]).read_text())
    expected = {"status": case["healthStatus"]["status"], "message": case["healthStatus"].get("message", "")}
    assert health(kind_dir / "health.lua", obj) == expected


def test_every_kind_and_testdata_file_is_covered() -> None:
    kinds = {p.name for p in (CUSTOMIZATIONS / "kafkaoffsets.dev").iterdir()}
    assert kinds == {"OffsetDeletion", "OffsetReset", "ConsumerGroupOffsetPolicy"}
    for kind in kinds:
        listed = {c["inputPath"] for c in yaml.safe_load((CUSTOMIZATIONS / "kafkaoffsets.dev" / kind / "health_test.yaml").read_text())["tests"]}
        on_disk = {f"testdata/{p.name}" for p in (CUSTOMIZATIONS / "kafkaoffsets.dev" / kind / "testdata").glob("*.yaml")}
        assert listed == on_disk, kind


def test_the_argocd_cm_patch_carries_each_health_check_as_written() -> None:
    patch = yaml.safe_load((CUSTOMIZATIONS.parent / "argocd-cm-patch.yaml").read_text())
    scripts = {f"resource.customizations.health.{p.parent.parent.name}_{p.parent.name}": p.read_text()
               for p in CUSTOMIZATIONS.glob("*/*/health.lua")}
    assert (patch["kind"], patch["metadata"]["name"], patch["data"]) == ("ConfigMap", "argocd-cm", scripts)
