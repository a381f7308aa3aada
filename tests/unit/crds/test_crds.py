"""The CRDs in crds/ and in the Helm chart's crds/ are what crds.py builds, are structural, and accept every
example in manifests/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kafka_offset_operator.model.crds import PEERING_CRD_FILE, build_crds, kopf_peering_crd, render
from kafka_offset_operator.model.kinds.common import Column, printer_columns

ROOT = Path(__file__).resolve().parents[3]
# Both are written by the same generator; Helm installs the chart's copies as they are.
CRD_DIRS = ("crds", "charts/kafka-offset-operator/crds")
# Kopf's peering CRD is not ours, but every install needs it beside ours (peering is on by default).
PEERING_COPIES = tuple(f"{d}/{PEERING_CRD_FILE}" for d in (*CRD_DIRS, "manifests/base/crds"))
REGENERATE = "run: scripts/dev.sh generate"
EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))


def _schemas() -> dict[str, dict[str, Any]]:
    out = {}
    for crd in build_crds().values():
        out[crd["spec"]["names"]["kind"]] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return out


@pytest.mark.parametrize("directory", CRD_DIRS)
@pytest.mark.parametrize("name", sorted(build_crds()))
def test_committed_crd_matches_generator(directory: str, name: str) -> None:
    path = ROOT / directory / name
    assert path.exists(), f"{directory}/{name} is missing: {REGENERATE}"
    assert path.read_text() == render(build_crds()[name]), f"{directory}/{name} is stale: {REGENERATE}"


@pytest.mark.parametrize("directory", CRD_DIRS)
def test_no_crd_file_the_generator_does_not_write(directory: str) -> None:
    """A CRD renamed or removed in crds.py would otherwise stay installed from its old file."""
    extra = sorted({p.name for p in (ROOT / directory).glob("*.yaml")} - set(build_crds()) - {PEERING_CRD_FILE})
    assert extra == [], f"{directory} holds files the generator does not write: {REGENERATE}"


@pytest.mark.parametrize("path", PEERING_COPIES)
def test_kopf_peering_crd_is_what_the_generator_writes(path: str) -> None:
    crd = kopf_peering_crd()
    assert (ROOT / path).read_text() == render(crd), f"{path} is stale: {REGENERATE}"
    names = crd["spec"]["names"]
    assert (crd["spec"]["group"], crd["spec"]["scope"], names["plural"]) == ("kopf.dev", "Cluster", "clusterkopfpeerings")


def _walk(node: dict[str, Any], path: str) -> list[str]:
    problems = []
    if "type" not in node:
        problems.append(f"{path}: no type")
    opaque = node.get("type") == "object" and not {"properties", "additionalProperties"} & node.keys()
    if opaque and not path.endswith(".metadata"):
        problems.append(f"{path}: object without properties would be pruned")
    if "$ref" in node:
        problems.append(f"{path}: $ref is not allowed in CRD schemas")
    for key, child in (node.get("properties") or {}).items():
        problems += _walk(child, f"{path}.{key}")
        if "description" not in child and key not in ("apiVersion", "kind", "metadata"):
            problems.append(f"{path}.{key}: no description (kubectl explain shows nothing)")
    if isinstance(node.get("items"), dict):
        problems += _walk(node["items"], f"{path}[]")
    return problems


@pytest.mark.parametrize("kind", sorted(_schemas()))
def test_schema_is_structural_and_described(kind: str) -> None:
    problems = _walk(_schemas()[kind], kind)
    assert [p for p in problems if "description" not in p] == []
    # Every field has a description, so `kubectl explain` helps.
    assert [p for p in problems if "description" in p] == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_validates(example: Path) -> None:
    doc = yaml.safe_load(example.read_text())
    jsonschema.validate(doc, _schemas()[doc["kind"]])


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"mode": "Sometimes"}, "mode"),
        ({"rules": {"emptyGroupRetention": "7 days"}}, "emptyGroupRetention"),
        ({"schedule": {"interval": "1h30"}}, "interval"),
        ({"kafka": {"bootstrapServers": "no-port"}}, "bootstrapServers"),
        ({"analysis": {"engine": "Flink"}}, "engine"),
    ],
)
def test_bad_policy_is_rejected_naming_the_field(patch: dict[str, Any], field: str) -> None:
    doc = yaml.safe_load((ROOT / "manifests/examples/policy-dryrun.yaml").read_text())
    doc["spec"].update(patch)
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.validate(doc, _schemas()["ConsumerGroupOffsetPolicy"])
    assert field in "/".join(map(str, err.value.absolute_path))


def test_deletion_needs_a_connection() -> None:
    doc = yaml.safe_load((ROOT / "manifests/examples/offsetdeletion.yaml").read_text())
    del doc["spec"]["policyRef"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _schemas()["OffsetDeletion"])


# -- kubectl get: the printer columns


def _columns(kind: str) -> list[dict[str, Any]]:
    [crd] = [c for c in build_crds().values() if c["spec"]["names"]["kind"] == kind]
    return list(crd["spec"]["versions"][0]["additionalPrinterColumns"])


@pytest.mark.parametrize(("kind", "shown", "wide"), [
    ("OffsetDeletion", ["Group", "Approved", "Phase", "Deleted", "Failed", "Age"],
     ["Delete Group", "Restore", "Policy", "Requested By", "Approved By"]),
    ("OffsetReset", ["Group", "Approved", "Phase", "Changes", "Reset", "Failed", "Age"],
     ["Policy", "Requested By", "Approved By"]),
    ("ConsumerGroupOffsetPolicy", ["Mode", "Last Run", "Candidates", "Ready", "Age"],
     ["Engine", "Interval", "Deletions", "Next Run"]),
])
def test_get_shows_approval_and_wide_adds_the_details(kind: str, shown: list[str], wide: list[str]) -> None:
    """`kubectl get od`/`ors` shows whether a change is approved; `-o wide` (priority 1) adds who and what."""
    columns = _columns(kind)
    assert [c["name"] for c in columns if c.get("priority", 0) == 0] == shown
    assert [c["name"] for c in columns if c.get("priority", 0) == 1] == wide


@pytest.mark.parametrize("kind", ["OffsetDeletion", "OffsetReset", "ConsumerGroupOffsetPolicy"])
def test_every_printer_column_names_a_field_of_the_schema(kind: str) -> None:
    """A column whose path the schema lacks would print <none> for ever (the API server does not check)."""
    schema = _schemas()[kind]
    for column in _columns(kind):
        path = column["jsonPath"].split("[", 1)[0].lstrip(".").split(".")
        if path[0] == "metadata":
            continue
        node = schema
        for part in path:
            assert part in node.get("properties", {}), (column["name"], column["jsonPath"])
            node = node["properties"][part]
        expected = {"integer": "integer", "boolean": "boolean", "date": "string", "string": "string"}[column["type"]]
        if "[" not in column["jsonPath"]:
            assert node.get("type") == expected, (column["name"], node.get("type"))


def test_a_printer_column_takes_its_type_from_the_field_it_names() -> None:
    """Columns are written by path in each kind's file (model/kinds/*.py); the generator reads the type from
    the schema, and refuses a path the kind does not have instead of writing a column that prints <none>."""
    root = {"type": "object", "properties": {"status": {"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"},
        "conditions": {"type": "array", "items": {"type": "object", "properties": {"status": {"type": "string"}}}}}}}}
    assert printer_columns(root, (Column("When", ".status.when"),
                                  Column("Ready", '.status.conditions[?(@.type=="Ready")].status', priority=1))) == [
        {"name": "When", "type": "date", "jsonPath": ".status.when"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status', "priority": 1}]
    with pytest.raises(KeyError, match="no field 'phase'"):
        printer_columns(root, (Column("Phase", ".status.phase"),))
