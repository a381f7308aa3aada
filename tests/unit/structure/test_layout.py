"""The layout docs/architecture.md describes is the layout of the tree: its table of rooms names every
distribution with its folder and packages, the shared core's distribution needs no Spark, Kopf or
Kubernetes, the import-linter contracts that keep the rooms apart exist, and the operator's layers appear in
the document in the contract's order. Read from the files themselves, so the document cannot drift."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CORE = "kafka_offsets_model"


def _project(folder: str) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    return project


def _requirement_names(folder: str) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in _project(folder).get("dependencies", [])}


def _rooms() -> list[list[str]]:
    """The rows of the table of rooms: folder, distribution, packages, what it is."""
    start = ARCHITECTURE.index("| folder | distribution |")
    rows = []
    for line in ARCHITECTURE[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _contract(source: str) -> dict[str, Any]:
    [contract] = [c for c in PYPROJECT["tool"]["importlinter"]["contracts"]
                  if c.get("type") == "forbidden" and c["source_modules"] == [source]]
    return contract


def test_every_distribution_is_a_row_of_the_table_with_its_folder_and_packages() -> None:
    rows = {re.findall(r"`([^`]+)`", row[1])[0]: row for row in _rooms()}
    for folder in (".", "offsets_model", "sandbox", "demo"):
        name = _project(folder)["name"]
        assert name in rows, f"docs/architecture.md: no row for the distribution {name}"
        for package in re.findall(r"`([a-z_]+)`", rows[name][2]):
            found = [p for p in ROOT.glob(f"*/{package}/__init__.py") if ".venv" not in p.parts]
            assert found, f"docs/architecture.md names the package {package}, which is not in the tree"
    documented = {p for row in rows.values() for p in re.findall(r"`([a-z_]+)`", row[2])}
    assert documented == set(PYPROJECT["tool"]["importlinter"]["root_packages"])


def test_the_shared_core_needs_no_spark_kopf_or_kubernetes_and_everything_else_stands_on_it() -> None:
    assert not _requirement_names("offsets_model") & {"pyspark", "pyarrow", "kopf", "kubernetes",
                                                      "kafka-offset-operator"}
    assert "kafka-offsets-model" in _requirement_names(".")
    assert "kafka-offsets-model" in _requirement_names("sandbox")
    assert "kafka-offset-operator" not in _requirement_names("sandbox")
    assert not (ROOT / "spark" / "offset_expiry" / "reference.py").exists()  # a test oracle: tests/support


def test_the_contracts_keep_the_rooms_apart() -> None:
    core = set(_contract(CORE)["forbidden_modules"])
    assert {"pyspark", "kopf", "kubernetes", "kafka_offset_operator", "offset_expiry", "kafka_sandbox"} <= core
    sandbox = set(_contract("kafka_sandbox")["forbidden_modules"])
    others = set(PYPROJECT["tool"]["importlinter"]["root_packages"]) - {CORE, "kafka_sandbox"}
    assert others <= sandbox, "the sandbox may import only the shared core of the product"


def test_the_operator_layers_appear_in_the_document_in_the_contracts_order() -> None:
    [layers] = [c for c in PYPROJECT["tool"]["importlinter"]["contracts"] if c.get("type") == "layers"
                and c["containers"] == ["kafka_offset_operator"]]
    picture = ARCHITECTURE[ARCHITECTURE.index("inside the operator, layers"):]
    positions = []
    for layer in layers["layers"]:
        first = layer.split(":")[0].strip()
        match = re.search(rf"^{re.escape(first)}\b", picture, re.M)
        assert match, f"docs/architecture.md: the layer {first} is not in the picture"
        positions.append(match.start())
    assert positions == sorted(positions), "docs/architecture.md: the layers are not in the contract's order"


def test_every_module_of_the_operator_is_in_a_layer_and_only_the_public_face_is_unprotected() -> None:
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    [layers] = [c for c in contracts if c.get("type") == "layers" and c["containers"] == ["kafka_offset_operator"]]
    [protected] = [c for c in contracts if c.get("type") == "protected"]
    package = ROOT / "operator" / "kafka_offset_operator"
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {p.parent.name for p in package.glob("*/__init__.py")}
    in_layers = {name.strip() for layer in layers["layers"] for name in layer.split(":")}
    assert modules == in_layers, "a module of the operator is in no layer of the contract"
    guarded = {m.removeprefix("kafka_offset_operator.") for m in protected["protected_modules"]}
    assert modules - guarded == {"public"}, "every internal module is protected; the public face is not"


def test_the_backup_label_and_the_time_format_are_written_once() -> None:
    """model/api.py spells the backup label (BACKUP_LABEL, BACKUPS_SELECTOR) and model/times.py the RFC 3339
    format (RFC3339): every other module of the operator goes through them, and the demo and the benchmarks
    through the operator's public face."""
    package = ROOT / "operator" / "kafka_offset_operator"
    paths = [*package.rglob("*.py"), *(ROOT / "demo" / "kafka_offset_demo").rglob("*.py"), *(ROOT / "bench").glob("*.py")]
    for path in sorted(paths):
        text = path.read_text()
        where = path.relative_to(package).as_posix() if path.is_relative_to(package) else path.relative_to(ROOT).as_posix()
        if where != "model/api.py":
            assert "/backup=true" not in text and '/backup"' not in text, f"{where} spells the backup label"
        if where not in ("model/times.py", "commands/run.py"):  # run.py: logging's own record time, with msecs
            assert "%Y-%m-%dT%H:%M:%S" not in text, f"{where} writes the RFC 3339 format: use model/times.py"


def test_conditions_and_generations_are_looked_up_through_their_one_helper() -> None:
    """decisions/conditions.py finds a condition by type (`find`) and reads an object's metadata.generation
    (`generation_of`): no other module of the operator walks a conditions list or reads the generation itself."""
    package = ROOT / "operator" / "kafka_offset_operator"
    by_hand = re.compile(r"""\b(?:c|cond|condition)\.get\("type"\)|\.get\("generation"\)""")
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        if where != "decisions/conditions.py":
            found = by_hand.search(path.read_text())
            assert found is None, f"{where}: {found.group(0)} by hand: use decisions/conditions.py"


# No class name is defined twice across the product, the sandbox and the demo (issue 23 §3): each names what it is
# (OffsetReason, the analysis' reasons per offset, vs Reason, the condition and Event reasons; BackupStore vs
# RebaseBackupStore, the keep-alive's view of it; FreshVerdict vs ProtectionVerdict; BatchMember, a policy of a
# shared SparkApplication, vs Member, a group's member; ...).


def test_no_new_class_name_collides_with_another() -> None:
    seen: dict[str, list[str]] = {}
    for folder in ("offsets_model", "operator", "spark", "sandbox", "demo"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "build" in path.parts or ".egg-info" in str(path):
                continue
            for name in re.findall(r"^class ([A-Za-z_][A-Za-z0-9_]*)\b", path.read_text(), re.M):
                seen.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    twice = {name: where for name, where in seen.items() if len(where) > 1}
    assert not twice, twice


def test_modules_named_alike_in_two_layers_are_explained_in_the_document() -> None:
    package = ROOT / "operator" / "kafka_offset_operator"
    where: dict[str, set[str]] = {}
    for path in package.glob("*/*.py"):
        if path.stem != "__init__":
            where.setdefault(path.stem, set()).add(path.parent.name)
    for stem, layers in sorted(where.items()):
        if len(layers) > 1:
            for layer in layers:
                assert f"`{layer}/{stem}.py`" in ARCHITECTURE, f"docs/architecture.md: say why {layer}/{stem}.py"
