"""Results in the cluster: `job.py --results configmap://NAMESPACE/NAME?...` writes the report into
ConfigMaps, where the operator (which started the SparkApplication) reads it; `--policy configmap://...`
reads the policy from one. Only the kubernetes client is used here (in-cluster service account, else the
kubeconfig), never the operator's code.

Layout, chosen so that a reader never sees half a report:

- the report is cut down to what the operator acts on (the summary, the candidates and the protected
  groups' offsets: a cluster's full report can hold millions of offsets), serialised as JSON and gzip'd;
- the bytes are split into parts of at most PART_BYTES (a ConfigMap holds at most 1 MiB) written as
  ConfigMaps NAME-part-0 .. NAME-part-N-1 (binaryData key `part`);
- the ConfigMap NAME, the manifest, is written LAST: {"parts": N, "sha256": ..., "runId": ...}. Its
  existence means the report is complete; the sha256 proves the parts belong together.

Every ConfigMap carries the labels and the ownerReference given in the URL's query, so they are deleted
with their owner (the policy) and the operator can find and delete them by label.

    configmap://kafka/stale-offsets-results-1a2b3c4d?ownerKind=ConsumerGroupOffsetPolicy
        &ownerApiVersion=kafkaoffsets.dev/v1alpha1&ownerName=stale-offsets&ownerUid=...
        &label.kafkaoffsets.dev/policy=stale-offsets&runId=1a2b3c4d
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kafka_offsets_model.errors import InputError

SCHEME = "configmap"
PART_BYTES = 700 * 1024  # base64 makes it ~930 KiB: under the 1 MiB ConfigMap limit
MANIFEST_KEY = "manifest.json"
PART_KEY = "part"
POLICY_KEY = "policy.yaml"
PROTECTED = "Protected"


@dataclass(frozen=True)
class Target:
    namespace: str
    name: str
    owner: Mapping[str, Any] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    run_id: str = ""

    def part_name(self, index: int) -> str:
        return f"{self.name}-part-{index}"


def is_configmap_url(text: str | None) -> bool:
    return bool(text) and str(text).startswith(f"{SCHEME}://")


def parse_target(url: str) -> Target:
    parts = urlsplit(url)
    path = parts.path.strip("/")
    if parts.scheme != SCHEME or not parts.netloc or not path or "/" in path:
        raise InputError(f"{url!r} is not configmap://NAMESPACE/NAME")
    query = dict(parse_qsl(parts.query))
    owner = None
    if query.get("ownerUid"):
        owner = {
            "apiVersion": query.get("ownerApiVersion", "v1"),
            "kind": query.get("ownerKind", ""),
            "name": query.get("ownerName", ""),
            "uid": query["ownerUid"],
            "controller": False,
            "blockOwnerDeletion": False,
        }
    labels = {k[len("label."):]: v for k, v in query.items() if k.startswith("label.")}
    return Target(parts.netloc, path, owner, labels, query.get("runId", ""))


def cut_down(summary: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The report with only the offsets the operator acts on: candidates and protected groups' offsets."""
    kept = [dict(r) for r in rows if r.get("candidate") or r.get("reason") == PROTECTED]
    return {"summary": dict(summary), "offsets": kept}


def encode(report: Mapping[str, Any]) -> bytes:
    return gzip.compress(json.dumps(report, separators=(",", ":")).encode(), mtime=0)


def split(data: bytes, size: int = PART_BYTES) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def manifest(target: Target, parts: list[bytes]) -> dict[str, Any]:
    return {"parts": len(parts), "sha256": hashlib.sha256(b"".join(parts)).hexdigest(), "runId": target.run_id,
            "encoding": "gzip+json"}


def assemble(manifest_doc: Mapping[str, Any], parts: list[bytes]) -> dict[str, Any]:
    """The report back from the manifest and its parts (the operator's side). Raises ValueError when the
    parts do not match the manifest."""
    data = b"".join(parts)
    if len(parts) != int(manifest_doc.get("parts", -1)) or hashlib.sha256(data).hexdigest() != manifest_doc.get("sha256"):
        raise ValueError("the result parts do not match their manifest")
    doc = json.loads(gzip.decompress(data))
    if not isinstance(doc, dict):
        raise ValueError("the results are not a JSON object")
    return doc


# -- I/O with the kubernetes client


def _core_api() -> Any:
    import kubernetes.client
    import kubernetes.config

    try:
        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        try:
            kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
        except (kubernetes.config.ConfigException, OSError) as exc:
            raise InputError(f"--results: no Kubernetes configuration (in-cluster or kubeconfig): {exc}") from None
    return kubernetes.client.CoreV1Api()


def _put(api: Any, target: Target, name: str, key: str, value: bytes) -> None:
    from kubernetes.client.exceptions import ApiException

    meta: dict[str, Any] = {"name": name, "namespace": target.namespace, "labels": dict(target.labels)}
    if target.owner is not None:
        meta["ownerReferences"] = [dict(target.owner)]
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "binaryData": {key: base64.b64encode(value).decode()}}
    try:
        api.create_namespaced_config_map(target.namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise InputError(f"--results: cannot write ConfigMap {target.namespace}/{name}: HTTP {exc.status} {exc.reason}") from None
        api.replace_namespaced_config_map(name, target.namespace, body)


def write(url: str, summary: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Target:
    target = parse_target(url)
    parts = split(encode(cut_down(summary, rows)))
    api = _core_api()
    for i, part in enumerate(parts):
        _put(api, target, target.part_name(i), PART_KEY, part)
    _put(api, target, target.name, MANIFEST_KEY, json.dumps(manifest(target, parts)).encode())
    return target


def read_text(url: str, key: str = POLICY_KEY) -> str:
    """A text file kept in a ConfigMap's data or binaryData (the policy for --policy configmap://NS/NAME);
    `?key=K` in the URL names the key (a shared run's ConfigMap holds one policy per member)."""
    from kubernetes.client.exceptions import ApiException

    target = parse_target(url)
    key = dict(parse_qsl(urlsplit(url).query)).get("key") or key
    api = _core_api()
    try:
        cm = api.read_namespaced_config_map(target.name, target.namespace)
    except ApiException as exc:
        raise InputError(f"cannot read ConfigMap {target.namespace}/{target.name}: HTTP {exc.status} {exc.reason}") from None
    text = (cm.data or {}).get(key)
    if text is None and key in (cm.binary_data or {}):
        text = base64.b64decode(cm.binary_data[key]).decode("utf-8")
    if text is None:
        raise InputError(f"ConfigMap {target.namespace}/{target.name} has no key {key!r}")
    return str(text)
