"""Writes every file of this repository that is derived from another one, so that no copy is kept by hand.

- crds/*.yaml and charts/kafka-offset-operator/crds/*.yaml: both rendered from
  kafka_offset_operator.model.crds. Helm installs a chart's crds/ as they are and a chart cannot read files
  outside its own directory, so the chart needs copies of its own.
- manifests/operator/05-kopf-peering-crd.yaml and the chart's crds/clusterkopfpeerings.kopf.dev.yaml: Kopf's
  peering CRD (kafka_offset_operator.model.crds.kopf_peering_crd), which the operator's peering needs.
- charts/kafka-offset-operator/files/clusterrole.yaml: a copy of manifests/operator/20-clusterrole.yaml, the
  one place the operator's RBAC rules are written; the chart's templates/rbac.yaml reads its rules with
  .Files.Get.

Run it as `scripts/dev.sh generate` (or `python scripts/generate.py` wherever the project is installed).
`--check` writes nothing and exits 1 naming every stale, missing or left-over file; the tests run it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafka_offset_operator.model.crds import PEERING_CRD_FILE, build_crds, kopf_peering_crd, render

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "kafka-offset-operator"
CLUSTERROLE = ROOT / "manifests" / "operator" / "20-clusterrole.yaml"
PEERING_CRD = ROOT / "manifests" / "operator" / "05-kopf-peering-crd.yaml"
COMMAND = "scripts/dev.sh generate"
# Directories holding only generated CRDs: a file the generator no longer writes there is removed.
CRD_DIRS = (ROOT / "crds", CHART / "crds")


def derived() -> dict[Path, str]:
    """Path -> the text the generator writes there."""
    out: dict[Path, str] = {}
    for name, crd in build_crds().items():
        out[ROOT / "crds" / name] = out[CHART / "crds" / name] = render(crd)
    out[PEERING_CRD] = out[CHART / "crds" / PEERING_CRD_FILE] = render(kopf_peering_crd())
    header = f"# Copied from {CLUSTERROLE.relative_to(ROOT)} by `{COMMAND}`: edit that file, then run it.\n"
    out[CHART / "files" / "clusterrole.yaml"] = header + CLUSTERROLE.read_text()
    return out


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
