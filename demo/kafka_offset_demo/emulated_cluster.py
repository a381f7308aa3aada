"""Kubernetes without a cluster: kmock's KubernetesEmulator on 127.0.0.1 with the bundled builtin resources
and our CRDs, served from a background thread. The demo runs the operator against it, and so do the
operator tests (tests/integration/operator/operator_harness.py adds their HTTP client and operator thread).

kmock's emulator keeps objects as given and never bumps resourceVersion; our subclass (`Emulator`) behaves
more like an API server there (see its docstring), and it validates every write of a custom resource
against its CRD (schema, defaults, CEL rules: api_validation.py). Kopf may still see an object twice (its
watch can replay): the handlers are idempotent anyway.

Faults, for tests of what the operator does when the API server misbehaves (`Emulator.fail`, `hold`,
`cut_watches`; thread-safe on `EmulatedCluster`). Requests are matched by kmock's own criteria (anything
`kmock.Criteria.guess` accepts: "patch offsetdeletions", `kmock.subresource("status")`,
`kmock.data({...})`, a predicate on the `kmock.Request`), all of which must hold:

    cluster.fail("patch offsetdeletions", kmock.subresource("status"), status=409)   # next one: 409 Conflict
    cluster.fail("create configmaps", status=500, times=3)                            # next three: 500
    held = cluster.hold("create configmaps", kmock.data(BACKUP))                      # the next one waits
    held.wait()          # it arrived (not applied; `after=True` holds its answer once applied instead)
    held.release()       # it goes on (`apply=False`: refused with 503, never stored)
    cluster.cut_watches("offsetdeletions")                                            # open streams end

A failed request stores nothing and answers in the API server's Status shape (kind Status, code,
reason Conflict | InternalError | ..., message), as a real API server refuses a write.
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
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp.web
import jsonpatch
import jsonpointer
import kmock
import yaml
from kmock._internal import dsl as kmock_dsl
from kmock._internal.apps import RawHandler
from kmock._internal.rendering import (
    ReactionMismatchError,
    Request,
    Response,  # exported by kmock, though not in its __all__
)

from kafka_offset_operator.public import merge_patch, now_iso

from . import kubectl_views as views
from .api_validation import BadRequest, Invalid, ResourceSchema

NAMESPACE = "kafka"

# The API server's reason for each status code a test may inject (k8s.io/apimachinery metav1.StatusReason).
REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 410: "Expired", 422: "Invalid",
           429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class FaultRule:
    """Requests a fault applies to: all `criteria` hold (kmock criteria), at most `times` of them (None: every
    one). The requests it took are kept, newest last."""

    criteria: tuple[kmock.Criteria, ...]
    times: int | None = 1
    taken: list[kmock.Request] = field(default_factory=list)

    def take(self, request: kmock.Request) -> bool:
        if self.times is not None and len(self.taken) >= self.times:
            return False
        if not all(c(request) for c in self.criteria):
            return False
        self.taken.append(request)
        return True

    @property
    def spent(self) -> bool:
        return self.times is not None and len(self.taken) >= self.times


@dataclass
class Failure(FaultRule):
    """Answer matching requests with an error Status instead of serving them (nothing is stored)."""

    status: int = 500
    message: str = "injected fault"

    def error(self, request: kmock.Request) -> kmock.KubernetesError:
        return kmock.KubernetesError(status=self.status, reason=REASONS.get(self.status, "Unknown"),
                                     message=self.message, details=_details(request))


_R = TypeVar("_R", bound=FaultRule)


@dataclass
class ApiHold(FaultRule):
    """Hold matching requests until released: before they are applied, or (`after`) once applied, before
    the answer goes out. `wait()` returns when one has arrived (from any thread)."""

    after: bool = False
    loop: asyncio.AbstractEventLoop | None = None
    arrived: threading.Event = field(default_factory=threading.Event)
    _released: asyncio.Event = field(default_factory=asyncio.Event)
    _apply: bool = True

    def wait(self, timeout: float = 30.0) -> kmock.Request:
        """The first request held, once it has arrived."""
        if not self.arrived.wait(timeout):
            raise AssertionError(f"no request matching {self.criteria} arrived within {timeout:g}s")
        return self.taken[0]

    def release(self, apply: bool = True) -> None:
        """Let the held requests (and any later match) go on; not `apply`: a write held before it was applied
        is refused with 503 and never stored (its client is gone: a killed process)."""
        self._apply = apply
        self.times = len(self.taken)  # nothing more is held
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self._released.set)

    async def passage(self) -> bool:
        """Wait (on the emulator's loop) until released; whether the request may go on."""
        self.arrived.set()
        await self._released.wait()
        return self._apply


def sees(view: Any, request: Request) -> bool:
    """Whether the newest request (just recorded by the root) is among `view`'s requests: kmock's own
    answer (`request in view`), without walking every request served so far where the view is a chain of
    criteria over the root (all the emulator's own reactions are). kmock's RawHandler asks this of every
    reaction for every request, and its `in` iterates the whole request history, applying each filter's
    criteria to every past request: O(requests so far) per request, so the emulator slowed down without bound
    as a run went on (after ~10,000 requests: seconds per request; bench/many_policies.py's 1,000
    OffsetDeletions stopped settling). Views whose answer depends on the history (a slice: `[:1]`) or on
    live state (a stream) get kmock's exact answer."""
    match view:
        case RawHandler() | kmock_dsl.Root():
            return True  # the request was appended to the root as it arrived (RawHandler.__call__)
        case kmock_dsl.Filter():
            return bool(view.criteria(request)) and sees(view._source, request)
        case kmock_dsl.Priority() | kmock_dsl.Reaction():
            return sees(view._source, request)
        case kmock_dsl.OrGroup():
            return any(sees(source, request) for source in view._sources)
        case kmock_dsl.AndGroup():
            return all(sees(source, request) for source in view._sources)
        case kmock_dsl.Exclusion():
            return sees(view._source, request) and not any(sees(e, request) for e in view._exclusions)
        case _:
            return request in view


class ConstantTimeDispatch(RawHandler):
    """kmock's RawHandler._handle (0.8: the reactions by priority, the first that sees the request serves it),
    with `sees` in place of its `request in reaction source`, whose cost grows with every request served
    (see `sees`). Placed after KubernetesEmulator in Emulator's bases, so KubernetesEmulator's `_handle`
    (which keeps the objects) still runs first and calls this one."""

    __slots__ = ()

    async def _handle(self, request: Request) -> aiohttp.web.StreamResponse:
        priorities: list[tuple[float, ...]] = [payload.priorities for payload in self._payloads]
        width = max((len(priority) for priority in priorities), default=0)
        keys = [tuple(-p for p in priority) + (0,) * (width - len(priority)) for priority in priorities]
        for index in sorted(range(len(keys)), key=lambda i: keys[i]):
            payload = self._payloads[index]
            if sees(payload._source, request) and not payload._disabled.is_set():
                try:
                    return await payload(request)
                except ReactionMismatchError:  # either mismatch or depletion
                    payload._disabled.set()
                except NotImplementedError:  # matched, but nothing to respond with
                    pass
        raise NotImplementedError("no reaction matches the request")


class Emulator(kmock.KubernetesEmulator, ConstantTimeDispatch):
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
        self.crds: dict[tuple[str, str, str], Mapping[str, Any]] = {}  # (group, version, plural) -> its CRD
        self.validate = True
        self.rules: list[FaultRule] = []  # faults to inject, in the order they were added
        self._rules_guard = threading.Lock()  # tests add rules from their own thread
        self._watches: dict[int, tuple[kmock.Request, asyncio.Task[Any]]] = {}  # open watch streams

    # -- faults (see the module's docstring)

    def fail(self, *criteria: Any, status: int = 500, times: int | None = 1, message: str = "injected fault") -> Failure:
        """Answer the next `times` requests matching all `criteria` with `status` (nothing is stored)."""
        return self._add(Failure(_criteria(criteria), times, status=status, message=message))

    def hold(self, *criteria: Any, times: int | None = 1, after: bool = False,
             loop: asyncio.AbstractEventLoop | None = None) -> ApiHold:
        """Hold the next `times` requests matching all `criteria` until `release()`: before they are applied,
        or (`after`) once applied, before their answer. `loop`: the emulator's (when called from another
        thread)."""
        return self._add(ApiHold(_criteria(criteria), times, after=after, loop=loop or asyncio.get_running_loop()))

    def _add(self, rule: _R) -> _R:
        with self._rules_guard:
            self.rules.append(rule)
        return rule

    def _rule_for(self, request: kmock.Request) -> FaultRule | None:
        with self._rules_guard:
            self.rules = [r for r in self.rules if not r.spent or (isinstance(r, ApiHold) and not r.arrived.is_set())]
            return next((r for r in self.rules if r.take(request)), None)

    def cut_watches(self, *criteria: Any) -> int:
        """End the open watch streams matching all `criteria` abruptly (the connection drops mid-stream, as
        when an API server restarts or a load balancer times out); returns how many."""
        checks = _criteria(criteria)
        cut = 0
        for request, task in list(self._watches.values()):
            if all(c(request) for c in checks):
                raw = request._raw_request
                if raw is not None and raw.transport is not None:
                    raw.transport.close()
                task.cancel()
                cut += 1
        return cut

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        raw_request = raw_request.clone(client_max_size=MAX_REQUEST_BYTES)  # aiohttp's own default is 1 MiB
        too_large = await request_too_large(raw_request)
        if too_large is not None:
            return too_large
        if raw_request.path.startswith("/openapi/v3"):
            return self._serve_openapi(raw_request.path)
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
        return views.mend_discovery(doc) if isinstance(doc, dict) else doc

    # -- kubectl as a user types it (kubectl_views.py)

    def _kind_of(self, request: kmock.Request) -> tuple[str, str, list[Mapping[str, Any]] | None]:
        """apiVersion, kind and printer columns of the requested resource."""
        resource = request.resource
        assert resource is not None
        group, version, plural = resource.group or "", resource.version or "v1", resource.plural or ""
        kind = next((self._resources[r].kind for r in self._get_resources() if r == resource), None) or plural.capitalize()
        crd = self.crds.get((group, version, plural))
        columns = None
        if crd is not None:
            served: Mapping[str, Any] = next((v for v in crd["spec"]["versions"] if v["name"] == version), {})
            columns = served.get("additionalPrinterColumns")
        return (f"{group}/{version}" if group else version), kind, columns

    async def _serve_list(self, request: kmock.Request) -> Any:
        doc: Any = await super()._serve_list(request)
        api_version, kind, columns = self._kind_of(request)
        version = str(next(self._versions))
        if views.wants_table(request.headers.get("Accept")):
            return views.table(doc["items"], columns, version, datetime.datetime.now(datetime.UTC))
        return views.list_document(api_version, kind, doc["items"], version)

    async def _serve_fetch(self, request: kmock.Request) -> Any:
        obj: Any = await super()._serve_fetch(request)
        if _is_scale(request) and isinstance(obj, dict):
            return _scale_of(obj)
        if request.subresource or not views.wants_table(request.headers.get("Accept")):
            return obj
        _, _, columns = self._kind_of(request)
        return views.table([obj], columns, str(next(self._versions)), datetime.datetime.now(datetime.UTC))

    # kmock's fallback renders whatever payload it is given: a Response carries the stream and its type.
    async def _serve_watch(self, request: kmock.Request) -> Any:  # type: ignore[override]
        """`kubectl get -w` watches asking for Tables: each event's object becomes a one-row Table, and after
        the list kubectl already printed (its resourceVersion given) only later changes are sent, as the API
        server does; the stream says it is one (kubectl decodes by content type). Other watches (Kopf's) are
        kmock's, unchanged."""
        if not views.wants_table(request.headers.get("Accept")):
            return super()._serve_watch(request)
        return Response(headers={"Content-Type": views.WATCH_MEDIA}, payload=self._table_watch(request))

    async def _table_watch(self, request: kmock.Request) -> AsyncIterator[Any]:
        _, _, columns = self._kind_of(request)
        since = views.resource_version(request.params.get("resourceVersion"))
        async for event in super()._serve_watch(request):
            if isinstance(event, dict) and views.already_listed(event, since):
                continue
            yield views.table_event(event, columns, str(next(self._versions)), datetime.datetime.now(datetime.UTC))

    def _serve_openapi(self, path: str) -> aiohttp.web.Response:
        builtins = {(r.group or "", r.version or "v1", r.plural or "", info.kind or "", bool(info.namespaced))
                    for r in self._get_resources() for info in [self._resources[r]]
                    if (r.group or "", r.version or "v1", r.plural or "") not in self.crds and "/" not in (r.plural or "")}
        docs = views.openapi_documents(self.crds.values(), sorted(b for b in builtins if b[2] and b[3]))
        wanted = path.removeprefix("/openapi/v3").strip("/")
        if not wanted:
            return aiohttp.web.json_response(views.openapi_index(docs))
        if wanted not in docs:
            return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "reason": "NotFound", "code": 404}, status=404)
        return aiohttp.web.json_response(docs[wanted])

    async def _handle(self, request: kmock.Request) -> Any:
        rule = self._rule_for(request)
        if isinstance(rule, Failure):
            raise rule.error(request)
        if isinstance(rule, ApiHold) and not rule.after and not await rule.passage():
            raise kmock.KubernetesError(status=503, reason=REASONS[503], message="the client went away",
                                        details=_details(request))
        if request.action == kmock.action.WATCH:
            return await self._watch(request)
        answer = await self._write_or_serve(request)
        if isinstance(rule, ApiHold) and rule.after:
            await rule.passage()
        return answer

    async def _watch(self, request: kmock.Request) -> Any:
        task = asyncio.current_task()
        assert task is not None
        self._watches[id(request)] = (request, task)
        try:
            return await self._serve(request)
        finally:
            del self._watches[id(request)]

    async def _write_or_serve(self, request: kmock.Request) -> Any:
        if request.resource is None or request.action not in (kmock.action.CREATE, kmock.action.UPDATE):
            return await self._serve(request)
        if _is_scale(request) and request.action == kmock.action.CREATE:
            raise kmock.KubernetesError(status=405, reason="MethodNotAllowed", message="the scale subresource is "
                                        "read, patched or replaced", details=_details(request))
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
            answer = await self._serve(request)
            return aiohttp.web.json_response(_scale_of(admitted)) if _is_scale(request) else answer

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
            meta.setdefault("creationTimestamp", now_iso())
            return body
        if request.name is None:
            return None
        key = (resource, request.namespace, request.name)
        if key not in self._objects or self._objects[key].deleted:
            return None
        current: dict[str, Any] = json.loads(json.dumps(self._objects[key].raw))
        if _is_scale(request):  # only spec.replicas of the workload changes, whatever else the Scale says
            patched: Any = _scaled(current, request.data)
        elif isinstance(request.data, list):  # a JSON patch (Kopf's, with a test of resourceVersion)
            patched = jsonpatch.apply_patch(current, request.data)
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


# Workloads whose scale subresource (autoscaling/v1 Scale) is served as the API server serves it: a GET
# answers a Scale; a patch or update of it changes the workload's spec.replicas and nothing else. Nothing runs
# pods: status.replicas follows spec.replicas at once.
SCALABLE = frozenset({("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets")})


def _is_scale(request: kmock.Request) -> bool:
    resource = request.resource
    return (request.subresource == "scale" and resource is not None
            and (resource.group or "", resource.plural or "") in SCALABLE)


def _scale_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    replicas = int((obj.get("spec") or {}).get("replicas", 1))
    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items()))}}


def _scaled(current: dict[str, Any], data: Any) -> dict[str, Any]:
    """The workload after a patch (merge or JSON patch) or an update of its Scale."""
    scale = _scale_of(current)
    if isinstance(data, list):
        scale = jsonpatch.apply_patch(scale, data)
    elif isinstance(data, dict):
        scale = merge_patch(scale, data)
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        name = (current.get("metadata") or {}).get("name", "")
        raise kmock.KubernetesError(status=422, reason="Invalid", message=f'Scale.autoscaling "{name}" is invalid: '
                                    "spec.replicas: Invalid value: must be greater than or equal to 0")
    new: dict[str, Any] = json.loads(json.dumps(current))
    new.setdefault("spec", {})["replicas"] = replicas
    new.setdefault("status", {}).update(replicas=replicas, readyReplicas=replicas, availableReplicas=replicas)
    return new


def _details(request: kmock.Request) -> dict[str, Any]:
    """A Status' details as the API server gives them: the object's name and kind (its plural here)."""
    resource = request.resource
    return {"name": request.name or "", "kind": (resource.plural if resource is not None else None) or ""}


def _criteria(items: Iterable[Any]) -> tuple[kmock.Criteria, ...]:
    out = []
    for item in items:
        criteria = kmock.Criteria.guess(item)
        if criteria is None:
            raise ValueError(f"not a kmock criterion: {item!r}")
        out.append(criteria)
    return tuple(out)


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


class EmulatedCluster:
    """The emulator and its HTTP server on a private event loop in a daemon thread."""

    def __init__(self, crds: Iterable[Mapping[str, Any]] | None = None) -> None:
        """`crds`: the CRDs to serve; ours (kafka_offset_operator.crds) by default. Kopf's peering CRD is
        always served too, as the install manifests and the chart install it (`run` peers by default)."""
        from kafka_offset_operator.public import build_crds, kopf_peering_crd

        if crds is None:
            crds = build_crds().values()
        self.crds = [dict(c) for c in crds]
        peering = kopf_peering_crd()
        if all(c["metadata"]["name"] != peering["metadata"]["name"] for c in self.crds):
            self.crds.append(peering)
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

    # -- faults (the emulator's; see the module's docstring), from the test's thread

    def fail(self, *criteria: Any, status: int = 500, times: int | None = 1, message: str = "injected fault") -> Failure:
        assert self.emulator is not None
        return self.emulator.fail(*criteria, status=status, times=times, message=message)

    def hold(self, *criteria: Any, times: int | None = 1, after: bool = False) -> ApiHold:
        assert self.emulator is not None
        return self.emulator.hold(*criteria, times=times, after=after, loop=self._loop)

    def cut_watches(self, *criteria: Any) -> int:
        emulator = self.emulator
        assert emulator is not None

        async def cut() -> int:
            return emulator.cut_watches(*criteria)

        return asyncio.run_coroutine_threadsafe(cut(), self._loop).result(timeout=10)

    def requests(self, *criteria: Any) -> list[kmock.Request]:
        """The requests served so far that match all `criteria` (kmock records every one)."""
        emulator = self.emulator
        assert emulator is not None
        checks = _criteria(criteria)

        async def matching() -> list[kmock.Request]:
            return [r for r in emulator if all(c(r) for c in checks)]

        return asyncio.run_coroutine_threadsafe(matching(), self._loop).result(timeout=10)

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
            emulator.crds[spec["group"], version["name"], names["plural"]] = crd
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
    crd_obj["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=now_iso())
    emulator.objects["apiextensions.k8s.io/v1/customresourcedefinitions", None, crd["metadata"]["name"]] = crd_obj
