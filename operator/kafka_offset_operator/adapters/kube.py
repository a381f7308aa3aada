"""The operator's own Kubernetes client: Secrets, custom objects, ConfigMaps and status writes.

Kopf watches and dispatches; this module does the reads and writes a handler must finish *before* its next
step (the backup must be in the status before anything is deleted), which Kopf's deferred `patch` cannot
promise. Built on the official `kubernetes` client, so kubeconfig (KUBECONFIG honoured) and in-cluster
service-account auth work the same way as for kubectl.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import kopf
import kubernetes.client
import kubernetes.config
from kubernetes.client.exceptions import ApiException

from ..model.api import GROUP, STRIMZI_GROUP, STRIMZI_VERSION, VERSION

MERGE_PATCH = "application/merge-patch+json"


class NotFound(LookupError):
    """The object does not exist (HTTP 404)."""


def load_config(kubeconfig: str | Path | None = None) -> kubernetes.client.Configuration:
    """In-cluster service account when running in a pod, else the kubeconfig (KUBECONFIG or ~/.kube/config);
    an explicit path wins over both."""
    config = kubernetes.client.Configuration()
    if kubeconfig is not None:
        kubernetes.config.load_kube_config(config_file=str(kubeconfig), client_configuration=config)  # type: ignore[no-untyped-call]
        return config
    try:
        kubernetes.config.load_incluster_config(client_configuration=config)  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(client_configuration=config)  # type: ignore[no-untyped-call]
    return config


_IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def current_namespace(kubeconfig: str | Path | None = None) -> str:
    """The namespace kubectl would use: the kubeconfig's current context's, else the pod's own (in a
    cluster), else "default". For commands that write into the cluster without naming a namespace."""
    try:
        _, active = kubernetes.config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=None if kubeconfig is None else str(kubeconfig))
        namespace = (active or {}).get("context", {}).get("namespace")
        if namespace:
            return str(namespace)
    except (kubernetes.config.ConfigException, OSError, TypeError, ValueError):
        pass
    try:
        return _IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


@dataclass
class Kube:
    """Synchronous calls for the handlers (they run in Kopf's thread pool)."""

    config: kubernetes.client.Configuration

    def __post_init__(self) -> None:
        self._client = kubernetes.client.ApiClient(self.config)
        self._core = kubernetes.client.CoreV1Api(self._client)
        self._custom = kubernetes.client.CustomObjectsApi(self._client)
        self._apps = kubernetes.client.AppsV1Api(self._client)

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]

    # -- reads

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes]:
        """The decoded data of a Secret in `namespace` (never another namespace's)."""
        try:
            secret = self._core.read_namespaced_secret(name, namespace)
        except ApiException as exc:
            raise _translate(exc) from None
        data: Mapping[str, Any] = secret.data or {}
        out = {key: base64.b64decode(value) for key, value in data.items()}
        for key, value in (secret.string_data or {}).items():
            out.setdefault(key, value.encode())
        return out

    def get_custom(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj = self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except ApiException as exc:
            raise _translate(exc) from None
        return cast(dict[str, Any], obj)

    def list_custom(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        """Every object of one of our kinds in a namespace, or (None) in all namespaces."""
        try:
            if namespace is None:
                found = self._custom.list_cluster_custom_object(GROUP, VERSION, plural)
            else:
                found = self._custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
        except ApiException as exc:
            raise _translate(exc) from None
        return list(cast(dict[str, Any], found).get("items") or ())

    def strimzi_reader(self, namespace: str) -> Callable[[str, str], dict[str, Any]]:
        """Reads Strimzi resources (kafka.strimzi.io, v1beta2: served by every Strimzi since 0.22) of one
        namespace, for decisions.strimzi_connection."""
        return lambda plural, name: self.get_object(STRIMZI_GROUP, STRIMZI_VERSION, plural, namespace, name)

    def get_configmap_binary(self, namespace: str, name: str, key: str) -> bytes:
        try:
            cm = self._core.read_namespaced_config_map(name, namespace)
        except ApiException as exc:
            raise _translate(exc) from None
        value = (cm.binary_data or {}).get(key)
        if value is None:
            raise NotFound(f"ConfigMap {namespace}/{name} has no key {key}")
        return base64.b64decode(value)

    # -- writes

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of `.status` (RFC 7386: None removes a key, lists are replaced whole)."""
        try:
            obj = self._custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, {"status": dict(status)}, _content_type=MERGE_PATCH
            )
        except ApiException as exc:
            raise _translate(exc) from None
        return cast(dict[str, Any], obj)

    def put_configmap_binary(
        self, namespace: str, name: str, key: str, value: bytes, owner: Mapping[str, Any], labels: Mapping[str, str]
    ) -> None:
        """Create the ConfigMap, or overwrite its key when it exists (a retry after a crash)."""
        encoded = base64.b64encode(value).decode()
        body: Any = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(labels),
                "ownerReferences": [dict(owner)],
            },
            "binaryData": {key: encoded},
        }
        try:
            self._core.create_namespaced_config_map(namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise _translate(exc) from None
            patch = {"binaryData": {key: encoded}}
            try:
                self._core.patch_namespaced_config_map(name, namespace, patch, _content_type=MERGE_PATCH)
            except ApiException as exc2:
                raise _translate(exc2) from None

    def create_configmap(self, namespace: str, body: Mapping[str, Any]) -> bool:
        """Create a ConfigMap as given (no owner unless the body names one); False when the name is taken."""
        try:
            self._core.create_namespaced_config_map(namespace, cast(Any, dict(body)))
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise _translate(exc) from None
        return True

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The ConfigMap as the API serves it (binaryData base64-encoded)."""
        try:
            cm = self._core.read_namespaced_config_map(name, namespace)
        except ApiException as exc:
            raise _translate(exc) from None
        return cast(dict[str, Any], self._client.sanitize_for_serialization(cm))  # type: ignore[no-untyped-call]

    def list_configmaps(self, namespace: str | None, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        """ConfigMaps carrying all `labels`, in one namespace or (None) in all."""
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        try:
            if namespace is None:
                found = self._core.list_config_map_for_all_namespaces(label_selector=selector)
            else:
                found = self._core.list_namespaced_config_map(namespace, label_selector=selector)
        except ApiException as exc:
            raise _translate(exc) from None
        items = [cast(dict[str, Any], self._client.sanitize_for_serialization(cm)) for cm in found.items or ()]  # type: ignore[no-untyped-call]
        return [cm for cm in items if _has_labels(cm.get("metadata") or {}, labels)]

    def patch_configmap(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        try:
            self._core.patch_namespaced_config_map(name, namespace, dict(patch), _content_type=MERGE_PATCH)
        except ApiException as exc:
            raise _translate(exc) from None

    # -- workloads an OffsetReset pauses (spec.pauseWorkloads): through their scale subresource only, so the
    # install's opt-in RBAC grants get and patch of deployments/scale and statefulsets/scale, never the
    # workloads themselves (their pod templates stay out of the operator's reach)

    def get_replicas(self, kind: str, namespace: str, name: str) -> int:
        """spec.replicas of a Deployment or StatefulSet, read from its Scale (GET .../scale)."""
        read = {"Deployment": self._apps.read_namespaced_deployment_scale,
                "StatefulSet": self._apps.read_namespaced_stateful_set_scale}[kind]
        try:
            scale = read(name, namespace)
        except ApiException as exc:
            raise _translate(exc) from None
        return int(scale.spec.replicas or 0) if scale.spec is not None else 0

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        """Set spec.replicas of a Deployment or StatefulSet (a merge patch of its Scale)."""
        patch = {"Deployment": self._apps.patch_namespaced_deployment_scale,
                 "StatefulSet": self._apps.patch_namespaced_stateful_set_scale}[kind]
        try:
            patch(name, namespace, {"spec": {"replicas": replicas}}, _content_type=MERGE_PATCH)
        except ApiException as exc:
            raise _translate(exc) from None

    # -- any custom object (SparkApplications, OffsetDeletions a policy creates), and deleting ConfigMaps

    def create_object(self, group: str, version: str, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """Create; None when an object of that name exists already (HTTP 409), so creating is idempotent."""
        try:
            obj = self._custom.create_namespaced_custom_object(group, version, namespace, plural, dict(body))
        except ApiException as exc:
            if exc.status == 409:
                return None
            raise _translate(exc) from None
        # The client maps only 201 to a body; a server answering 200 gives None: created all the same.
        return cast(dict[str, Any], obj) if obj is not None else dict(body)

    def create_cluster_object(self, group: str, version: str, plural: str, body: Mapping[str, Any]) -> bool:
        """Create a cluster-scoped object; False when one of that name exists already (HTTP 409). NotFound
        when the API does not serve the kind (its CRD is not installed)."""
        try:
            self._custom.create_cluster_custom_object(group, version, plural, dict(body))
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise _translate(exc) from None
        return True

    def get_object(self, group: str, version: str, plural: str, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj = self._custom.get_namespaced_custom_object(group, version, namespace, plural, name)
        except ApiException as exc:
            raise _translate(exc) from None
        return cast(dict[str, Any], obj)

    def list_objects(self, group: str, version: str, plural: str, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        """Objects carrying all `labels` (filtered here too: not every API server double filters)."""
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        try:
            found = cast(dict[str, Any], self._custom.list_namespaced_custom_object(
                group, version, namespace, plural, label_selector=selector))
        except ApiException as exc:
            raise _translate(exc) from None
        return [o for o in found.get("items") or () if _has_labels(o.get("metadata") or {}, labels)]

    def patch_object(self, group: str, version: str, plural: str, namespace: str, name: str,
                     patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of the object (not its status)."""
        try:
            obj = self._custom.patch_namespaced_custom_object(group, version, namespace, plural, name, dict(patch),
                                                              _content_type=MERGE_PATCH)
        except ApiException as exc:
            raise _translate(exc) from None
        return cast(dict[str, Any], obj)

    def delete_object(self, group: str, version: str, plural: str, namespace: str, name: str,
                      resource_version: str | None = None, propagation: str | None = None) -> None:
        """Delete; an object that is already gone is fine. With `resource_version`, only the object as it was
        read (a precondition: the API server answers 409, raised as Conflict, when it changed since).
        `propagation` "Background" takes the dependents too (a Job's pods: batch/v1 orphans them by default)."""
        kwargs: dict[str, Any] = {}
        if resource_version or propagation:
            kwargs["body"] = kubernetes.client.V1DeleteOptions(
                preconditions=kubernetes.client.V1Preconditions(resource_version=resource_version)
                if resource_version else None, propagation_policy=propagation)
        try:
            self._custom.delete_namespaced_custom_object(group, version, namespace, plural, name, **kwargs)
        except ApiException as exc:
            if exc.status != 404:
                raise _translate(exc) from None

    def delete_configmap(self, namespace: str, name: str) -> bool:
        """Delete; False when it did not exist."""
        try:
            self._core.delete_namespaced_config_map(name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise _translate(exc) from None
            return False
        return True


def _has_labels(meta: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    have = meta.get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


class KubeError(RuntimeError):
    """A Kubernetes API failure other than 404, with the API's reason (never the request body)."""


class Forbidden(KubeError):
    """HTTP 403: the operator's ServiceAccount may not do this (its RBAC); retrying does not help until an
    administrator grants it."""


class Conflict(KubeError):
    """HTTP 409: the object changed since it was read (a failed precondition), or exists already."""


class Refused(KubeError):
    """The API server refused what a write carries, for good: 413 (over its request limit, 3 MiB), 422
    (invalid for the CRD: its bounds, its rules), or etcd's "request is too large" (the stored object over
    1.5 MiB, which API servers answer with a 500). The same content gets the same answer: the caller records
    it and does not retry it (see docs/safety.md)."""


# etcd's refusal of an object over its request limit, as the API server passes it on (kubernetes#112152).
_ETCD_TOO_LARGE = "request is too large"


def _translate(exc: ApiException) -> Exception:
    if exc.status == 404:
        return NotFound(str(exc.reason))
    if exc.status == 409:
        return Conflict(f"Kubernetes API error {exc.status}: {exc.reason}")
    if exc.status == 403:
        return Forbidden(f"Kubernetes API error {exc.status}: {exc.reason}: {_api_message(exc)[:400]}")
    message = _api_message(exc)
    if exc.status in (413, 422) or (exc.status == 500 and _ETCD_TOO_LARGE in message):
        return Refused(f"Kubernetes API refused the write ({exc.status} {exc.reason}): {message[:400]}")
    return KubeError(f"Kubernetes API error {exc.status}: {exc.reason}")


def _api_message(exc: ApiException) -> str:
    """The Status message of an API error (the API server's words: field paths and limits, never a body we
    sent beyond what it quotes of an invalid value)."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return str(exc.body or "")[:400]
    return str(body.get("message") or "") if isinstance(body, dict) else ""


def owner_reference(body: Mapping[str, Any]) -> dict[str, Any]:
    """A controller ownerReference to `body` (Kopf builds it), so Kubernetes deletes what we made for it along
    with it; it never blocks the owner's deletion."""
    return dict(kopf.build_owner_reference(cast(Any, body), controller=True, block_owner_deletion=False))
