"""Kubernetes without a cluster: kmock's KubernetesEmulator on 127.0.0.1 with the bundled builtin resources
and our CRDs, served from a background thread. The demo runs the operator against it, and so do the
operator tests (tests/integration/operator/operator_harness.py adds their HTTP client and operator thread).

kmock's emulator keeps objects as given and never bumps resourceVersion; our subclass (`Emulator`) behaves
more like an API server there (see its docstring), and it validates every write of a custom resource
against its CRD (schema, defaults, CEL rules: api_validation.py). Kopf may still see an object twice (its
watch can replay): the handlers are idempotent anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import itertools
import json
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web
import jsonpatch
import jsonpointer
import kmock
import yaml

from kafka_offset_operator.decisions.status_patch import merge_patch

from .api_validation import BadRequest, Invalid, ResourceSchema

NAMESPACE = "kafka"


class Emulator(kmock.KubernetesEmulator):
    """kmock's emulator with four fixes towards a real API server, so Kopf meets the protocol it is built for:

    - on create it assigns uid, resourceVersion, generation and creationTimestamp when missing (as kubectl
      apply and the operator itself leave them out), and a name from metadata.generateName (Kopf's Events);
    - every write bumps metadata.resourceVersion from one counter, as etcd does (kmock keeps it as given),
      and a write that changes the spec bumps metadata.generation, as the API server does for custom
      resources with a status subresource (kmock never changes it);
    - a JSON patch that cannot apply (a failed `test` of resourceVersion, a path that is gone) answers
      422 Unprocessable Entity, as the API server does and as Kopf expects, instead of a 500;
    - a write of a custom resource whose CRD was registered (`register_crd`) is admitted as the API server
      admits it (api_validation.ResourceSchema.admit: status subresource, pruning, defaults, schema and CEL
      rules, 422 Invalid with its Status), the patch applied first; `?dryRun=All` answers without storing.
      `validate = False` stores what is sent, as a cluster whose CRD has no schema would (tests of the
      operator's own refusals use that).

    Writes are serialised (one at a time), so a patch is applied to the object it was checked against.

    And two kmock 0.8 discovery bugs are mended: the core group's version document says groupVersion "/v1"
    (kubectl then maps no core kind), and kmock cannot parse the path of the cluster-wide namespace list (/api/v1/namespaces reads as a
    namespace prefix and fails), which Kopf lists and watches: that one path is served here; the list names
    the namespaces objects live in, and the watch stays open without events.
    """

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._versions = itertools.count(1000)
        self._namespaces: set[str] = set()
        self._writes = asyncio.Lock()
        self.schemas: dict[tuple[str, str, str], ResourceSchema] = {}  # (group, version, plural) -> schema
        self.validate = True

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        raw_request = raw_request.clone(client_max_size=MAX_REQUEST_BYTES)  # aiohttp's own default is 1 MiB
        too_large = await request_too_large(raw_request)
        if too_large is not None:
            return too_large
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
        if request.resource is None or request.action not in (kmock.action.CREATE, kmock.action.UPDATE):
            return await self._serve(request)
        async with self._writes:
            try:
                admitted = self._admit(request)
            except Invalid as exc:
                raise kmock.KubernetesError(status=422, reason="Invalid", message=exc.message, details=exc.details()) from None
            except BadRequest as exc:
                raise kmock.KubernetesError(status=400, reason="BadRequest", message=str(exc), details={"causes": []}) from None
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
                raise _unprocessable(exc) from None
            if admitted is None:
                return await self._serve(request)
            object_too_large(admitted)
            if request.params.get("dryRun") == "All":  # validated, not stored
                return aiohttp.web.json_response(admitted, status=201 if request.action == kmock.action.CREATE else 200)
            # kmock stores request.data (an object, or a patch of the stored one) and knows requests by identity:
            # the admitted object goes in their place, into the (frozen) request itself.
            data: Any = admitted if request.action == kmock.action.CREATE else [{"op": "replace", "path": "", "value": admitted}]
            object.__setattr__(request, "data", data)
            return await self._serve(request)

    async def _serve(self, request: kmock.Request) -> Any:
        try:
            return await super()._handle(request)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise _unprocessable(exc) from None

    def _admit(self, request: kmock.Request) -> dict[str, Any] | None:
        """The whole object this create or update stores (None: kmock answers as it is, e.g. 404), with the
        server's metadata, admitted by the CRD's schema when there is one."""
        resource = request.resource
        assert resource is not None
        schema = self.schemas.get((resource.group or "", resource.version or "", resource.plural or ""))
        strict = request.params.get("fieldValidation") == "Strict"
        if request.action == kmock.action.CREATE:
            if not isinstance(request.data, dict):
                return None
            body: dict[str, Any] = copy.deepcopy(request.data)
            meta = body.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            if schema is not None and self.validate:
                body = schema.admit(body, None, request.subresource, strict)
                meta = body["metadata"]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("resourceVersion", str(next(self._versions)))
            meta.setdefault("generation", 1)
            meta.setdefault("creationTimestamp", _now())
            return body
        if request.name is None:
            return None
        key = (resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            return None
        current: dict[str, Any] = json.loads(json.dumps(self._objects[key].raw))
        if isinstance(request.data, list):  # a JSON patch (Kopf's, with a test of resourceVersion)
            patched: Any = jsonpatch.apply_patch(current, request.data)
        elif isinstance(request.data, dict):  # a merge patch, or a whole object (PUT)
            patched = merge_patch(current, request.data)
        else:
            return None
        new: dict[str, Any] = json.loads(json.dumps(patched))
        if schema is not None and self.validate:
            new = schema.admit(new, current, request.subresource, strict)
        meta = new.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        # The spec moved: the API server counts a generation (a status write, a label, a finalizer never do).
        if not request.subresource and new.get("spec") != current.get("spec"):
            meta["generation"] = int((current.get("metadata") or {}).get("generation") or 1) + 1
        return new

    @contextlib.contextmanager
    def unvalidated(self) -> Iterator[None]:
        """Writes store what is sent meanwhile (a CRD without a schema, or an older one, would let it in)."""
        self.validate = False
        try:
            yield
        finally:
            self.validate = True


# The API server's size limits. A request body over 3 MiB is refused before anything is decoded (413, the
# apiserver's MaxRequestBodyBytes); a stored object over etcd's 1.5 MiB (--max-request-bytes; custom
# resources are stored as JSON) is refused by etcd, which the API server passes on as a 500 (kubernetes#112152).
MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 1536 * 1024


async def request_too_large(raw: aiohttp.web.BaseRequest) -> aiohttp.web.Response | None:
    """413 for a write whose body is over MAX_REQUEST_BYTES, with the API server's Status (`raw` reads at
    most that much: aiohttp's client_max_size)."""
    if raw.method not in ("POST", "PUT", "PATCH"):
        return None
    if raw.content_length is not None and raw.content_length <= MAX_REQUEST_BYTES:
        return None
    try:
        if raw.content_length is None and len(await raw.read()) <= MAX_REQUEST_BYTES:
            return None
    except aiohttp.web.HTTPRequestEntityTooLarge:
        pass
    message = f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
    return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": message, "reason": "RequestEntityTooLarge", "code": 413}, status=413)


def object_too_large(obj: Mapping[str, Any]) -> None:
    """etcd's refusal of an object over MAX_OBJECT_BYTES, as the API server answers it."""
    if len(json.dumps(obj, separators=(",", ":"))) > MAX_OBJECT_BYTES:
        raise kmock.KubernetesError(status=500, reason="InternalError", message="etcdserver: request is too large")


def _unprocessable(exc: Exception) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=422, reason="Invalid", message=f"the patch cannot apply: {exc}")


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

    @contextlib.contextmanager
    def unvalidated(self) -> Iterator[None]:
        """Writes meanwhile store what is sent, unchecked: for tests of the operator's own refusals of specs a
        CRD with a schema would have refused (an older CRD, or one installed without its schema)."""
        assert self.emulator is not None
        with self.emulator.unvalidated():
            yield

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
    """Serve a CRD's resource in API discovery, and keep the CRD itself as an object, like an API server. Our
    Emulator also admits writes by the CRD's schema; a CRD whose rules do not compile, or could cost the API
    server too much, raises ValueError as the API server refuses it."""
    spec = crd["spec"]
    names = spec["names"]
    for version in spec["versions"]:
        if isinstance(emulator, Emulator) and "schema" in version:
            emulator.schemas[spec["group"], version["name"], names["plural"]] = ResourceSchema.from_crd(crd, version)
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
