"""The emulated API's kubectl views as plain functions: printer-column JSONPath, ages as kubectl shows them,
Tables, discovery of subresources, OpenAPI v3 documents."""

from __future__ import annotations

import datetime

import pytest

from kafka_offset_demo import kubectl_views as views
from kafka_offset_operator.model.crds import build_crds

NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)
OBJ = {"metadata": {"name": "od", "creationTimestamp": "2026-11-23T11:58:30Z"},
       "status": {"phase": "Succeeded", "conditions": [{"type": "Degraded", "status": "False"},
                                                       {"type": "Ready", "status": "True"}]}}


@pytest.mark.parametrize(("path", "expected"), [
    (".status.phase", ["Succeeded"]),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    (".status.conditions[0].type", ["Degraded"]),
    (".status.conditions[*].type", ["Degraded", "Ready"]),
    (".status.missing", []),
    ("{.metadata.name}", ["od"]),
])
def test_json_path(path: str, expected: list[str]) -> None:
    assert views.json_path(OBJ, path) == expected


@pytest.mark.parametrize(("ago", "shown"), [
    (datetime.timedelta(seconds=5), "5s"), (datetime.timedelta(seconds=150), "2m30s"), (datetime.timedelta(minutes=42), "42m"),
    (datetime.timedelta(hours=5, minutes=3), "5h3m"), (datetime.timedelta(hours=30), "30h"),
    (datetime.timedelta(days=6, hours=2), "6d2h"), (datetime.timedelta(days=40), "40d"), (datetime.timedelta(days=800), "2y"),
])
def test_ages_read_as_kubectl_shows_them(ago: datetime.timedelta, shown: str) -> None:
    assert views.human_age((NOW - ago).isoformat().replace("+00:00", "Z"), NOW) == shown


def test_a_table_has_the_name_then_the_printer_columns() -> None:
    columns = [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
               {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status', "priority": 1},
               {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    table = views.table([OBJ], columns, "7", NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Phase", "Ready", "Age"]
    assert table["columnDefinitions"][2]["priority"] == 1
    assert table["rows"][0]["cells"] == ["od", "Succeeded", "True", "90s"]
    assert table["rows"][0]["object"]["metadata"]["name"] == "od"


def test_subresources_carry_no_short_names_or_categories() -> None:
    doc = {"resources": [{"name": "offsetdeletions", "shortNames": ["od"], "categories": ["kafka"]},
                         {"name": "offsetdeletions/status", "shortNames": ["od"], "categories": ["kafka"]}]}
    mended = views.mend_discovery(doc)["resources"]
    assert (mended[0]["shortNames"], mended[1]["shortNames"], mended[1]["categories"]) == (["od"], [], [])


def test_openapi_documents_name_each_kind_and_take_field_validation() -> None:
    docs = views.openapi_documents(build_crds().values(), [("", "v1", "secrets", "Secret", True)])
    ours = docs["apis/kafkaoffsets.dev/v1alpha1"]
    schema = ours["components"]["schemas"]["dev.kafkaoffsets.v1alpha1.OffsetDeletion"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "kafkaoffsets.dev", "version": "v1alpha1", "kind": "OffsetDeletion"}]
    patch = ours["paths"]["/apis/kafkaoffsets.dev/v1alpha1/namespaces/{namespace}/offsetdeletions/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "io.k8s.api.core.v1.Secret" in docs["api/v1"]["components"]["schemas"]
    index = views.openapi_index(docs)["paths"]
    assert index["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


def test_a_table_watch_continues_after_the_list() -> None:
    listed = {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "7"}}}
    created_later = {"type": "ADDED", "object": {"metadata": {"name": "b", "resourceVersion": "12"}}}
    modified = {"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "9"}}}
    since = views.resource_version("10")
    assert [views.already_listed(e, since) for e in (listed, created_later, modified)] == [True, False, False]
    assert views.resource_version("0") is None and views.resource_version(None) is None
    assert not views.already_listed(listed, None)  # no resourceVersion: every object, as the API server sends


def test_a_watch_event_carries_a_one_row_table() -> None:
    event = views.table_event({"type": "MODIFIED", "object": OBJ}, [{"name": "Phase", "jsonPath": ".status.phase"}],
                              "13", NOW)
    assert event["type"] == "MODIFIED" and event["object"]["kind"] == "Table"
    assert [row["cells"] for row in event["object"]["rows"]] == [["od", "Succeeded"]]
    assert views.table_event(b"", None, "13", NOW) == b""  # kmock's opening chunk passes as it is
