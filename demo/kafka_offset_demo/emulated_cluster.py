"""Kubernetes without a cluster: kmock's KubernetesEmulator on 127.0.0.1 with the bundled builtin resources
and our CRDs, served from a background thread. The demo runs the operator against it, and so do the
operator tests (tests/integration/operator/operator_harness.py adds their HTTP client and operator thread).

kmock's emulator keeps objects as given and never bumps resourceVersion; our subclass (`Emulator`) behaves
more like an API server there (see its docstring). Kopf may still see an object twice (its watch can
replay): the handlers are idempotent anyway.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web
import jsonpatch
import jsonpointer
import kmock
import yaml

from kafka_offset_operator.decisions.status_patch import merge_patch

NAMESPACE = "kafka"


class Emulator(kmock.KubernetesEmulator):
    """kmock's emulator with three fixes towards a real API server, so Kopf meets the protocol it is built for:

    - on create it assigns uid, resourceVersion, generation and creationTimestamp when missing (as kubectl
      apply and the operator itself leave them out), and a name from metadata.generateName (Kopf's Events);
    - every write bumps metadata.resourceVersion from one counter, as etcd does (kmock keeps it as given),
      and a write that changes the spec bumps metadata.generation, as the API server does for custom
      resources with a status subresource (kmock never changes it);
    - a JSON patch that cannot apply (a failed `test` of resourceVersion, a path that is gone) answers
      422 Unprocessable Entity, as the API server does and as Kopf expects, instead of a 500.

    And two kmock 0.8 discovery bugs are mended: the core group's version document says groupVersion "/v1"
    (kubectl then maps no core kind), and kmock cannot parse the path of the cluster-wide namespace list (/api/v1/namespaces reads as a
    namespace prefix and fails), which Kopf lists and watches: that one path is served here; the list names
    the namespaces objects live in, and the watch stays open without events.
    """

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._versions = itertools.count(1000)
        self._namespaces: set[str] = set()

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        if raw_request.path.rstrip("/") != "/api/v1/namespaces":
            return await super().__call__(raw_request)
        if raw_request.method == "POST":  # kubectl apply of a Namespace
            body = await raw_request.json()
            body.setdefault("metadata", {}).update(uid=str(uuid.uuid4()), resourceVersion=str(next(self._versions)))
            self._namespaces.add(body["metadata"]["name"])
            return aiohttp.web.json_response(body, status=201)
        if raw_request.query.get("watch") in ("true", "1"):
            response = aiohttp.web.StreamResponse()
            await response.prepare(raw_request)
            await asyncio.Event().wait()  # until the client goes away or the server stops
            return response
        names = {NAMESPACE} | self._namespaces | {ns for (_res, ns, _name) in self.objects if ns}
        items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "uid": n, "resourceVersion": "1"}}
                 for n in sorted(names)]
        return aiohttp.web.json_response(
            {"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "1"}, "items": items})

    async def _serve_version(self, request: kmock.Request) -> Any:
        # kmock 0.8 names the core group version "/v1"; the API server (and kubectl's mapper) says "v1".
        doc = await super()._serve_version(request)
        if isinstance(doc, dict) and str(doc.get("groupVersion", "")).startswith("/"):
            doc["groupVersion"] = doc["groupVersion"].lstrip("/")
        return doc

    async def _handle(self, request: kmock.Request) -> Any:
        if request.resource is not None and request.action == kmock.action.CREATE and isinstance(request.data, dict):
            meta = request.data.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("resourceVersion", str(next(self._versions)))
            meta.setdefault("generation", 1)
            meta.setdefault("creationTimestamp", _now())
        elif request.resource is not None and request.action == kmock.action.UPDATE and request.name:
            changes: dict[str, Any] = {"resourceVersion": str(next(self._versions))}
            generation = self._next_generation(request)
            if generation is not None:
                changes["generation"] = generation
            if isinstance(request.data, dict):
                request.data.setdefault("metadata", {}).update(changes)
            elif isinstance(request.data, list):
                request.data.extend({"op": "add", "path": f"/metadata/{k}", "value": v} for k, v in changes.items())
        try:
            return await super()._handle(request)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=f"the patch cannot apply: {exc}") from None

    def _next_generation(self, request: kmock.Request) -> int | None:
        """The object's next metadata.generation if this write changes its spec, else None (a status write,
        a label or a finalizer never moves it)."""
        if request.subresource or request.resource is None or request.name is None:
            return None
        key = (request.resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            return None
        stored = self._objects[key]
        current = json.loads(json.dumps(stored.raw))
        if isinstance(request.data, list):
            try:
                spec = jsonpatch.apply_patch(current, request.data).get("spec")
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
                return None  # answered with 422 below
        elif isinstance(request.data, dict) and "spec" in request.data:
            spec = merge_patch({"spec": current.get("spec")}, {"spec": request.data["spec"]}).get("spec")
        else:
            return None
        if spec == current.get("spec"):
            return None
        return int((current.get("metadata") or {}).get("generation") or 1) + 1


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EmulatedCluster:
    """The emulator and its HTTP server on a private event loop in a daemon thread."""

    def __init__(self, crds: Iterable[Mapping[str, Any]] | None = None) -> None:
        """`crds`: the CRDs to serve; ours (kafka_offset_operator.crds) by default."""
        if crds is None:
            from kafka_offset_operator.model.crds import build_crds

            crds = build_crds().values()
        self.crds = [dict(c) for c in crds]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kmock", daemon=True)
        self.emulator: Emulator | None = None
        self._server: kmock.Server | None = None

    def start(self) -> EmulatedCluster:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    async def _start(self) -> None:
        self.emulator = Emulator()
        await self.emulator.__aenter__()
        self._server = kmock.Server(self.emulator)
        await self._server.__aenter__()
        self.emulator.resources.load_bundled()
        for crd in self.crds:
            register_crd(self.emulator, crd)

    def stop(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                await self._server.__aexit__(None, None, None)
            if self.emulator is not None:
                await self.emulator.__aexit__(None, None, None)

        try:
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.port}"

    def server_errors(self) -> list[Exception]:
        """Requests the emulator failed to serve (HTTP 500s): a test should end with none."""
        assert self.emulator is not None
        # KubernetesError subclasses are deliberate API answers (404, 409), not failures.
        return [e for e in self.emulator.errors if not isinstance(e, kmock.KubernetesError)]

    def write_kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kmock", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "tester", "namespace": NAMESPACE}}],
            "current-context": "kmock",
        }
        path.write_text(yaml.safe_dump(config))
        return path


def register_crd(emulator: kmock.KubernetesEmulator, crd: Mapping[str, Any]) -> None:
    """Serve a CRD's resource in API discovery, and keep the CRD itself as an object, like an API server."""
    spec = crd["spec"]
    names = spec["names"]
    for version in spec["versions"]:
        emulator.resources[f"{spec['group']}/{version['name']}/{names['plural']}"] = kmock.ResourceInfo(
            kind=names["kind"],
            singular=names.get("singular", names["kind"].lower()),
            namespaced=spec["scope"] == "Namespaced",
            verbs={"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
            shortnames=set(names.get("shortNames", [])),
            categories=set(names.get("categories", [])),
            subresources=set(version.get("subresources", {})),
        )
    crd_obj = json.loads(json.dumps(crd))
    crd_obj["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=_now())
    emulator.objects["apiextensions.k8s.io/v1/customresourcedefinitions", None, crd["metadata"]["name"]] = crd_obj
