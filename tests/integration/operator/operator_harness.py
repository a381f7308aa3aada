"""The Kubernetes side of the operator tests (fixtures in conftest.py): kmock's KubernetesEmulator on 127.0.0.1 with the bundled
builtin resources and our CRDs (kafka_offset_demo.emulated_cluster, which the demo uses too), a
kubeconfig pointing at it, and the operator itself running under Kopf in a background thread with its own
event loop (the same `run_operator` the `run` command uses).

The cluster and the operators are context managers, so a test module may keep one of each for several
tests (a saga split per phase) as the per-test fixtures in conftest.py do for one. Synchronisation is by
polling with a deadline (waiting.wait_until), never by sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kopf
import yaml
from waiting import wait_until

from kafka_offset_demo.emulated_cluster import EmulatedCluster as _EmulatedCluster
from kafka_offset_operator.context import OperatorContext, OperatorOptions
from kafka_offset_operator.decisions.conditions import find
from kafka_offset_operator.runtime import REGISTRARS, Registrar, run_operator

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "crds"
NAMESPACE = "kafka"
GROUP_VERSION = "kafkaoffsets.dev/v1alpha1"
FINAL = ("Succeeded", "PartiallyFailed", "Failed")  # an OffsetDeletion's phases once it is done


def condition(status: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    """The condition of type `kind` in a resource's status, {} when there is none (the product's lookup)."""
    return dict(find((status or {}).get("conditions"), kind) or {})


class EmulatedCluster(_EmulatedCluster):
    """The demo's emulated cluster (kafka_offset_demo.emulated_cluster) serving the CRDs as committed in
    crds/ (so the tests exercise those files), plus any extra CRDs a test needs (e.g. SparkApplication)."""

    def __init__(self, crd_dir: Path = CRD_DIR, extra_crds: list[dict[str, Any]] | None = None) -> None:
        super().__init__([yaml.safe_load(p.read_text()) for p in sorted(crd_dir.glob("*.yaml"))] + list(extra_crds or []))


@contextmanager
def emulated_cluster(extra_crds: list[dict[str, Any]] | None = None) -> Iterator[EmulatedCluster]:
    """A running emulated API; on a clean exit it must not have failed any request."""
    c = EmulatedCluster(extra_crds=extra_crds).start()
    try:
        yield c
        assert c.server_errors() == [], "the emulated API server failed requests"
    finally:
        c.stop()


class KubeApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status


class Kube:
    """A small synchronous client of the API over HTTP, for tests: the emulated one, or (with a TLS `context`
    authenticating as admin) the real API server of kube_cluster.py; `namespace` is where it works by default."""

    def __init__(self, url: str, namespace: str = NAMESPACE, context: ssl.SSLContext | None = None,
                 impersonate: str | None = None) -> None:
        self.url = url
        self.namespace = namespace
        self.context = context
        self.impersonate = impersonate

    def as_user(self, user: str) -> Kube:
        """The same client acting as `user` (Impersonate-User: the admin may; the real API server's RBAC and
        admission then see `user`, as if that person sent the request)."""
        return Kube(self.url, self.namespace, self.context, user)

    # -- raw HTTP

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.impersonate:
            req.add_header("Impersonate-User", self.impersonate)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.context) as rsp:
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
        """Create `obj` (apiVersion/kind/metadata as in a manifest); namespace defaults to the client's."""
        body = json.loads(json.dumps(obj))
        meta = body.setdefault("metadata", {})
        meta.setdefault("namespace", self.namespace)
        if self.context is None:  # the emulator stores what it is given; a real API server sets both itself
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("resourceVersion", "1")
        return self.request("POST", self.path(body["apiVersion"], plural, meta["namespace"]), body)  # type: ignore[no-any-return]

    def get(self, api_version: str, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.request("GET", self.path(api_version, plural, namespace or self.namespace, name))  # type: ignore[no-any-return]

    def find(self, api_version: str, plural: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.get(api_version, plural, name, namespace)
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.request("GET", self.path(api_version, plural, namespace or self.namespace))["items"]  # type: ignore[no-any-return]

    def patch(self, api_version: str, plural: str, name: str, patch: Mapping[str, Any], namespace: str | None = None,
              subresource: str | None = None) -> dict[str, Any]:
        path = self.path(api_version, plural, namespace or self.namespace, name) + (f"/{subresource}" if subresource else "")
        return self.request("PATCH", path, dict(patch), "application/merge-patch+json")  # type: ignore[no-any-return]

    def delete(self, api_version: str, plural: str, name: str, namespace: str | None = None) -> None:
        self.request("DELETE", self.path(api_version, plural, namespace or self.namespace, name))

    # -- shortcuts for our resources and the builtins tests use

    def create_secret(self, name: str, data: Mapping[str, str], namespace: str | None = None) -> dict[str, Any]:
        import base64

        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        return self.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                                       "metadata": {"name": name, "namespace": namespace or self.namespace},
                                       "data": encoded})

    def deletion(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.get(GROUP_VERSION, "offsetdeletions", name, namespace)

    def events_for(self, name: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.list("v1", "events", namespace) if e.get("involvedObject", {}).get("name") == name]

    def status(self, plural: str, name: str) -> dict[str, Any]:
        """The status of one of our resources (`plural`: offsetdeletions, offsetresets, ...); {} before any."""
        return self.get(GROUP_VERSION, plural, name).get("status") or {}

    def wait_object(self, plural: str, name: str, predicate: Callable[[dict[str, Any]], bool], what: str,
                    timeout: float = 90.0) -> dict[str, Any]:
        """Poll one of our resources until `predicate(status)` holds; the whole object. A timeout names what
        was awaited and shows the last status seen."""
        seen: list[dict[str, Any]] = [{}]

        def check() -> dict[str, Any] | None:
            obj = self.get(GROUP_VERSION, plural, name)
            seen[0] = obj.get("status") or {}
            return obj if predicate(seen[0]) else None

        try:
            return wait_until(check, timeout, what)
        except AssertionError:
            raise AssertionError(f"timed out waiting for {what} of {name}; status: {seen[0]}") from None

    def wait_status(self, plural: str, name: str, predicate: Callable[[dict[str, Any]], bool], what: str,
                    timeout: float = 90.0) -> dict[str, Any]:
        """The status of one of our resources once `predicate(status)` holds."""
        return self.wait_object(plural, name, predicate, what, timeout).get("status") or {}

    def wait_phase(self, plural: str, name: str, *phases: str, timeout: float = 90.0) -> dict[str, Any]:
        """The status of one of our resources once its phase is one of `phases`."""
        return self.wait_status(plural, name, lambda s: s.get("phase") in phases, " or ".join(phases), timeout)

    def wait_for_status(self, name: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 90.0,
                        what: str = "status") -> dict[str, Any]:
        """Poll an OffsetDeletion until `predicate(status)` holds; returns the whole object."""
        return self.wait_object("offsetdeletions", name, predicate, what, timeout)

    def wait_for_phase(self, name: str, *phases: str, timeout: float = 90.0) -> dict[str, Any]:
        """The status of an OffsetDeletion once its phase is one of `phases`."""
        what = " or ".join(phases)
        return self.wait_for_status(name, lambda s: s.get("phase") in phases, timeout, what)["status"]

    def wait_for_reason(self, name: str, reason: str, timeout: float = 90.0) -> dict[str, Any]:
        """The status of an OffsetDeletion once one of its conditions has `reason`."""
        return self.wait_for_status(
            name, lambda s: any(c["reason"] == reason for c in s.get("conditions", [])), timeout, reason)["status"]


class OperatorThread:
    """The operator under Kopf in a background thread with its own event loop; stop() is a clean shutdown."""

    def __init__(self, options: OperatorOptions, registrars: list[Registrar] | None = None) -> None:
        self.options = options
        # The production handlers (or a test's own), plus one that keeps Kopf's settings for stop().
        self.registrars = [*(REGISTRARS if registrars is None else registrars), self._keep_settings]
        self._settings: kopf.OperatorSettings | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def _keep_settings(self, registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
        @kopf.on.startup(registry=registry)
        def keep(settings: kopf.OperatorSettings, **_: Any) -> None:
            self._settings = settings

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

    def stop(self, timeout: float = 30, *, graceful: bool = True) -> None:
        """A shutdown as on SIGTERM; not `graceful` (the end of a test), Kopf does not give a handler still
        running (or sleeping before a retry) its 2 s to finish."""
        if not graceful and self._settings is not None:
            self._settings.queueing.exit_timeout = 0.1
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("the operator did not stop in time")
        if self._error is not None:
            raise AssertionError(f"the operator crashed: {self._error!r}") from self._error

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


class Operators:
    """Starts operators and, on close(), stops those still running; a test may stop one and start another
    (a restart)."""

    def __init__(self, options: OperatorOptions) -> None:
        self.options = options
        self._running: list[OperatorThread] = []

    def start(self, options: OperatorOptions | None = None, registrars: list[Registrar] | None = None) -> OperatorThread:
        op = OperatorThread(options or self.options, registrars).start()
        self._running.append(op)
        return op

    def close(self) -> None:
        for op in self._running:
            if op.alive:
                op.stop(graceful=False)


def fast_options(kubeconfig: Path, **overrides: Any) -> OperatorOptions:
    """Fast retries for tests, and no wait for other policies to join a scan (runs queued together still
    share one); everything else as in production."""
    options: dict[str, Any] = {"scan_share_window_s": 0.0, "namespaces": (NAMESPACE,), "retry_interval": 0.3,
                               "kafka_timeout_ms": 5000, **overrides}
    return OperatorOptions(kubeconfig=kubeconfig, **options)


# -- a policy's runs (the policy tests share these: test_policy_modes, test_policy_modes_kafka, test_policy_children,
#    test_policy_spark_application)

POLICIES = "consumergroupoffsetpolicies"
RUN_TIMEOUT = 480.0  # a policy run with a cold Spark start beside another worker's on a busy 2-core machine


def policy_status(kube: Kube, name: str) -> dict[str, Any]:
    """The policy's status ({} before its first write)."""
    return kube.get(GROUP_VERSION, POLICIES, name).get("status") or {}


def wait_run(kube: Kube, name: str, after: str | None = None, what: str = "a policy run",
             timeout: float = RUN_TIMEOUT) -> dict[str, Any]:
    """The policy's status once a run newer than `after` (a lastRun.completionTime) succeeded; a run that
    failed (Ready False for any reason but AnalysisRunning) fails the test at once, naming its condition."""
    def done() -> dict[str, Any] | None:
        status = policy_status(kube, name)
        last = (status.get("lastRun") or {}).get("completionTime")
        ready = condition(status, "Ready")
        if last and last != after and ready.get("status") == "True":
            return status
        if ready.get("status") == "False" and ready.get("reason") not in (None, "AnalysisRunning"):
            raise AssertionError(f"the run failed: {ready}")
        return None
    return wait_until(done, timeout, what)


def deletions_by_group(kube: Kube, namespace: str | None = None) -> dict[str, dict[str, Any]]:
    """The OffsetDeletions of the namespace by group (one per group in these tests), hand-made ones included."""
    return {d["spec"]["group"]: d for d in kube.list(GROUP_VERSION, "offsetdeletions", namespace)}


def set_mode(kube: Kube, name: str, mode: str) -> None:
    kube.patch(GROUP_VERSION, POLICIES, name, {"spec": {"mode": mode}})
