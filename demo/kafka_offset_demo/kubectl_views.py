"""What the emulated API answers so that kubectl works as a user types it, as plain functions over the CRDs
and stored objects (the Emulator serves them):

- lists carry their kind (`OffsetDeletionList`) and apiVersion, as kubectl's decoder requires;
- `kubectl get` asks for a Table (`Accept: ...;as=Table;g=meta.k8s.io;v=v1`): rows with the CRD's
  additionalPrinterColumns (JSONPath over the object, dates shown as ages, as the API server's CRD table
  convertor does), or NAME and AGE for resources without columns;
- discovery lists a subresource (`offsetdeletions/status`) without the short names and categories of its
  resource, so `kubectl get od` and `kubectl get kafka` resolve (kmock copies them onto subresources);
- `kubectl get -w` watches as Tables: one row per event, changes only after the list;
- OpenAPI v3 (`/openapi/v3` and one document per group version), from the CRDs' schemas with
  `x-kubernetes-group-version-kind`, so `kubectl explain` and kubectl's client-side validation work.
  Builtin kinds get permissive schemas: the emulator is no validator of Kubernetes' own kinds.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

TABLE_MEDIA = re.compile(r"as=Table")
WATCH_MEDIA = "application/json;stream=watch"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def wants_table(accept: str | None) -> bool:
    """kubectl get's Accept header asks for a meta.k8s.io Table first."""
    return bool(accept) and bool(TABLE_MEDIA.search(accept or "")) and "g=meta.k8s.io" in (accept or "")


def list_document(api_version: str, kind: str, items: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {"resourceVersion": resource_version},
            "items": items}


# -- tables


def json_path(obj: Any, path: str) -> list[Any]:
    """The values a printer column's JSONPath selects: `.a.b`, `[0]`, `[*]` and `[?(@.k=="v")]` steps, which
    is what CRDs' printer columns use."""
    values = [obj]
    for step in re.findall(r"\.[^.\[]+|\[[^\]]*\]", path.strip().strip("{}")):
        out: list[Any] = []
        for value in values:
            if step.startswith("."):
                if isinstance(value, Mapping) and step[1:] in value:
                    out.append(value[step[1:]])
            elif step == "[*]":
                out.extend(value if isinstance(value, list) else [])
            elif match := re.fullmatch(r'\[\?\(@\.(\w+)\s*==\s*["\']([^"\']*)["\']\)\]', step):
                key, wanted = match.groups()
                out.extend(v for v in (value if isinstance(value, list) else [])
                           if isinstance(v, Mapping) and str(v.get(key)) == wanted)
            elif match := re.fullmatch(r"\[(-?\d+)\]", step):
                index = int(match.group(1))
                if isinstance(value, list) and -len(value) <= index < len(value):
                    out.append(value[index])
        values = out
    return values


def human_age(timestamp: str, now: datetime.datetime) -> str:
    """kubectl's short durations (as apimachinery's duration.HumanDuration: 45s, 12m, 5h3m, 6d, 2y)."""
    try:
        then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y"


DEFAULT_COLUMNS = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


def table(objects: Iterable[Mapping[str, Any]], columns: list[Mapping[str, Any]] | None, resource_version: str,
          now: datetime.datetime) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table: NAME, then the printer columns (Age alone without any), each row with the
    object's metadata (kubectl's default includeObject=Metadata)."""
    columns = list(columns or DEFAULT_COLUMNS)
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name of the object", "priority": 0}]
    definitions += [{"name": c["name"], "type": c.get("type", "string"), "format": c.get("format", ""),
                     "description": c.get("description", ""), "priority": c.get("priority", 0)} for c in columns]
    rows = []
    for obj in objects:
        cells: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for column in columns:
            found = json_path(obj, column["jsonPath"])
            value: Any = found[0] if found else None
            if value is not None and column.get("type") == "date":
                value = human_age(str(value), now)
            elif isinstance(value, (dict, list)):
                value = json.dumps(value, separators=(",", ":"))
            cells.append(value)
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                "metadata": obj.get("metadata", {})}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": definitions, "rows": rows}


def resource_version(raw: Any) -> int | None:
    """A watch's resourceVersion as a number; None for "", "0" or none (send every object, as the API
    server does for those)."""
    try:
        value = int(str(raw))
    except ValueError:
        return None
    return value or None


def already_listed(event: Mapping[str, Any], since: int | None) -> bool:
    """An ADDED event for an object no newer than the list the watch continues: the client has it."""
    if since is None or event.get("type") != "ADDED":
        return False
    found = resource_version(event.get("object", {}).get("metadata", {}).get("resourceVersion"))
    return found is not None and found <= since


def table_event(event: Any, columns: list[Mapping[str, Any]] | None, resource_version: str,
                now: datetime.datetime) -> Any:
    """A watch event whose object is a one-row Table, as the API server streams them to `kubectl get -w`;
    anything that is no event (kmock's opening empty chunk) passes as it is."""
    if not isinstance(event, Mapping) or not isinstance(event.get("object"), Mapping):
        return event
    return {"type": event.get("type"), "object": table([event["object"]], columns, resource_version, now)}


# -- discovery


def mend_discovery(doc: dict[str, Any]) -> dict[str, Any]:
    """An APIResourceList whose subresources carry neither short names nor categories, with the verbs the
    API server gives them."""
    for entry in doc.get("resources", ()):
        if "/" in str(entry.get("name", "")):
            entry["shortNames"] = []
            entry["categories"] = []
            entry["verbs"] = ["get", "patch", "update"]
    return doc


# -- OpenAPI v3


def _schema_name(group: str, version: str, kind: str) -> str:
    """The API server's component name: the group reversed (kafkaoffsets.dev -> dev.kafkaoffsets)."""
    prefix = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
    return f"{prefix}.{version}.{kind}"


def openapi_documents(crds: Iterable[Mapping[str, Any]], builtins: Iterable[tuple[str, str, str, str, bool]]
                      ) -> dict[str, dict[str, Any]]:
    """Path ("apis/g/v", "api/v1") -> OpenAPI v3 document, with the paths of each resource (kubectl looks
    up a resource's kind there, and whether its writes take `fieldValidation`: they do, so kubectl leaves
    validation to the server). `builtins`: (group, version, plural, kind, namespaced) of the other
    resources served, given permissive schemas."""
    docs: dict[str, dict[str, Any]] = {}

    def add(group: str, version: str, plural: str, kind: str, namespaced: bool, schema: dict[str, Any]) -> None:
        path = f"apis/{group}/{version}" if group else f"api/{version}"
        doc = docs.setdefault(path, {
            "openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "unversioned"}, "paths": {},
            "components": {"schemas": {OBJECT_META: {
                "type": "object", "description": "Standard object's metadata.",
                "x-kubernetes-preserve-unknown-fields": True}}}})
        name = _schema_name(group, version, kind)
        gvk = {"group": group, "version": version, "kind": kind}
        schema["x-kubernetes-group-version-kind"] = [gvk]
        doc["components"]["schemas"][name] = schema
        ref = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}, "description": "OK"}
        params = [{"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for p in ("dryRun", "fieldManager", "fieldValidation")]

        def operation(action: str, writes: bool) -> dict[str, Any]:
            return {"operationId": f"{action}{kind}", "responses": {"200": ref}, "parameters": params if writes else [],
                    "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}

        base = f"/{path}/namespaces/{{namespace}}/{plural}" if namespaced else f"/{path}/{plural}"
        doc["paths"][base] = {"get": operation("list", False), "post": operation("post", True)}
        doc["paths"][f"{base}/{{name}}"] = {"get": operation("get", False), "put": operation("put", True),
                                            "patch": operation("patch", True), "delete": operation("delete", False)}

    for group, version, plural, kind, namespaced in builtins:
        add(group, version, plural, kind, namespaced, {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if "schema" not in version:
                continue
            schema = json.loads(json.dumps(version["schema"]["openAPIV3Schema"]))
            properties = schema.setdefault("properties", {})
            properties["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}
            properties["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}
            properties["metadata"] = {"allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}],
                                      "description": "Standard object's metadata."}
            add(spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"],
                spec["scope"] == "Namespaced", schema)
    return docs


def openapi_index(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """/openapi/v3: each group version's document, by a URL with its content's hash (as the API server
    makes them, so clients may cache)."""
    def digest(doc: Mapping[str, Any]) -> str:
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16].upper()

    return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest(doc)}"}
                      for path, doc in sorted(docs.items())}}
