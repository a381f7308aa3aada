"""The Kubernetes side of the operator tests (fixtures in conftest.py): kmock's KubernetesEmulator on 127.0.0.1 with the bundled
builtin resources and our CRDs, a kubeconfig pointing at it, and the operator itself running under Kopf
in a background thread with its own event loop (the same `run_operator` the `run` command uses).

kmock's emulator keeps objects as given and never bumps resourceVersion; our subclass (`Emulator`) behaves
more like an API server there (see its docstring). Kopf may still see an object twice (its watch can
replay): the handlers are idempotent anyway.

Synchronisation is by polling with a deadline (`Kube.wait_for`), never by sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import aiohttp.web
import jsonpatch
import jsonpointer
import kmock
import yaml

from kafka_offset_operator.handlers.runtime import OperatorOptions, Registrar, run_operator

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "crds"
NAMESPACE = "kafka"
GROUP_VERSION = "kafkaoffsets.dev/v1alpha1"

T = TypeVar("T")


class Emulator(kmock.KubernetesEmulator):
    """kmock's emulator with three fixes towards a real API server, so Kopf meets the protocol it is built for:

    - on create it assigns uid, resourceVersion, generation and creationTimestamp when missing (as kubectl
      apply and the operator itself leave them out), and a name from metadata.generateName (Kopf's Events);
    - every write bumps metadata.resourceVersion from one counter, as etcd does (kmock keeps it as given);
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
            version = str(next(self._versions))
            if isinstance(request.data, dict):
                request.data.setdefault("metadata", {})["resourceVersion"] = version
            elif isinstance(request.data, list):
                request.data.append({"op": "add", "path": "/metadata/resourceVersion", "value": version})
        try:
            return await super()._handle(request)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=f"the patch cannot apply: {exc}") from None


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EmulatedCluster:
    """The emulator and its HTTP server on a private event loop in a daemon thread."""

    def __init__(self, crd_dir: Path = CRD_DIR, extra_crds: list[dict[str, Any]] | None = None) -> None:
        self.crds = [yaml.safe_load(p.read_text()) for p in sorted(crd_dir.glob("*.yaml"))] + list(extra_crds or [])
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


class KubeApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status


class Kube:
    """A small synchronous client of the emulated API over HTTP, for tests."""

    def __init__(self, url: str) -> None:
        self.url = url

    # -- raw HTTP

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=30) as rsp:
                text = rsp.read().decode()
        except urllib.error.HTTPError as exc:
            raise KubeApiError(exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(text) if text else None

    @staticmethod
    def path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")

    # -- objects

    def create(self, plural: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create `obj` (apiVersion/kind/metadata as in a manifest); namespace defaults to NAMESPACE."""
        body = json.loads(json.dumps(obj))
        meta = body.setdefault("metadata", {})
        meta.setdefault("namespace", NAMESPACE)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("resourceVersion", "1")
        return self.request("POST", self.path(body["apiVersion"], plural, meta["namespace"]), body)  # type: ignore[no-any-return]

    def get(self, api_version: str, plural: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.request("GET", self.path(api_version, plural, namespace, name))  # type: ignore[no-any-return]

    def find(self, api_version: str, plural: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any] | None:
        try:
            return self.get(api_version, plural, name, namespace)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, plural: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        return self.request("GET", self.path(api_version, plural, namespace))["items"]  # type: ignore[no-any-return]

    def patch(self, api_version: str, plural: str, name: str, patch: Mapping[str, Any], namespace: str = NAMESPACE,
              subresource: str | None = None) -> dict[str, Any]:
        path = self.path(api_version, plural, namespace, name) + (f"/{subresource}" if subresource else "")
        return self.request("PATCH", path, dict(patch), "application/merge-patch+json")  # type: ignore[no-any-return]

    def delete(self, api_version: str, plural: str, name: str, namespace: str = NAMESPACE) -> None:
        self.request("DELETE", self.path(api_version, plural, namespace, name))

    # -- shortcuts for our resources and the builtins tests use

    def create_secret(self, name: str, data: Mapping[str, str], namespace: str = NAMESPACE) -> dict[str, Any]:
        import base64

        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        return self.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                                       "metadata": {"name": name, "namespace": namespace}, "data": encoded})

    def deletion(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        return self.get(GROUP_VERSION, "offsetdeletions", name, namespace)

    def events_for(self, name: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        return [e for e in self.list("v1", "events", namespace) if e.get("involvedObject", {}).get("name") == name]

    @staticmethod
    def wait_for(check: Callable[[], T | None], timeout: float = 20.0, what: str = "condition",
                 interval: float = 0.05) -> T:
        """Poll `check` until it returns something truthy, or fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last: T | None = None
        while True:
            last = check()
            if last:
                return last
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
            time.sleep(interval)  # polling cadence, not synchronisation: the deadline decides

    def wait_for_status(self, name: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0,
                        what: str = "status") -> dict[str, Any]:
        """Poll an OffsetDeletion until `predicate(status)` holds; returns the whole object."""
        seen: list[dict[str, Any]] = []

        def check() -> dict[str, Any] | None:
            obj = self.deletion(name)
            seen[:] = [obj.get("status", {})]
            return obj if predicate(obj.get("status", {})) else None

        try:
            return self.wait_for(check, timeout, what)
        except AssertionError:
            raise AssertionError(f"timed out waiting for {what} of {name}; status: {seen[0] if seen else None}") from None


class OperatorThread:
    """The operator under Kopf in a background thread with its own event loop; stop() is a clean shutdown."""

    def __init__(self, options: OperatorOptions, registrars: list[Registrar] | None = None) -> None:
        self.options = options
        self.registrars = registrars
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(run_operator(self.options, stop_flag=self._stop, ready_flag=self._ready,
                                     registrars=self.registrars))
        except BaseException as exc:  # reported by start()/stop()
            self._error = exc
            self._ready.set()

    def start(self, timeout: float = 30) -> OperatorThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise AssertionError("the operator did not become ready")
        if self._error is not None:
            raise AssertionError(f"the operator failed to start: {self._error!r}") from self._error
        return self

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("the operator did not stop in time")
        if self._error is not None:
            raise AssertionError(f"the operator crashed: {self._error!r}") from self._error

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
