"""Least privilege, as the operator behaves (issue 9, finding 10; docs/safety.md): it reads a Secret only in the
namespace of the resource that names it, and with watch namespaces it never lists or watches a namespaced
resource cluster-wide, so the namespaced install's Roles (manifests/components/namespaced) are all it needs.

The emulated API records every request it serves (kmock); the operator runs against it with OffsetDeletions
in two namespaces whose Secrets have the same names in every namespace (decoys), so a read in the wrong
namespace would succeed and only the request log can tell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml
from install_renders import MANIFESTS, allowed
from operator_harness import GROUP_VERSION, EmulatedCluster, Kube, Operators, condition, fast_options
from waiting import wait_until

WATCHED = ("kafka", "team-b")
KAFKA_TIMEOUT_MS = 300  # the OffsetResets' dry runs find no Kafka: give up soon
UNWATCHED = "other"
VERBS = {"fetch": "get", "list": "list", "watch": "watch", "create": "create", "delete": "delete"}


def secret_refs(namespace: str) -> dict[str, str]:
    """The Secrets a resource in `namespace` names: SASL credentials and a CA, named after the namespace."""
    return {"sasl": f"user-{namespace}", "ca": f"ca-{namespace}"}


def create_deletion(kube: Kube, namespace: str) -> None:
    refs = secret_refs(namespace)
    kube.create("offsetdeletions", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "least", "namespace": namespace},
        "spec": {"kafka": {"bootstrapServers": "127.0.0.1:9", "securityProtocol": "SASL_SSL",
                           "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": refs["sasl"]}},
                           "tls": {"caSecretRef": {"name": refs["ca"]}}},
                 "group": "g", "topics": [{"name": "t"}]}})  # not approved: Secrets read, Kafka never called
    kube.create("offsetresets", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "least", "namespace": namespace},
        "spec": {"kafka": {"bootstrapServers": "127.0.0.1:9", "securityProtocol": "SASL_SSL",
                           "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": refs["sasl"]}},
                           "tls": {"caSecretRef": {"name": refs["ca"]}}},
                 "group": "g", "allTopics": True, "target": {"earliest": True}}})  # a dry run: Kafka is asked


@pytest.fixture
def populated(cluster: EmulatedCluster, kube: Kube) -> Iterator[Kube]:
    """Every Secret any resource names exists in every namespace; an OffsetDeletion and an OffsetReset in each
    namespace."""
    namespaces = (*WATCHED, UNWATCHED)
    for namespace in namespaces:
        for other in namespaces:
            refs = secret_refs(other)
            kube.create_secret(refs["sasl"], {"username": "u", "password": "p"}, namespace)
            kube.create_secret(refs["ca"], {"ca.crt": "not a certificate"}, namespace)
        create_deletion(kube, namespace)
    yield kube


def operator_requests(cluster: EmulatedCluster) -> list[kmock.Request]:
    """Requests of the operator (Kopf's and the Kubernetes client's), not the test's own HTTP client's."""
    assert cluster.emulator is not None
    return [r for r in cluster.emulator
            if r.headers.get("User-Agent", "").startswith(("kopf", "OpenAPI-Generator")) and r.resource is not None]


def secret_reads(cluster: EmulatedCluster) -> set[tuple[str | None, str | None]]:
    return {(r.namespace, r.name) for r in operator_requests(cluster)
            if r.resource is not None and r.resource.plural == "secrets"}


def swept(cluster: EmulatedCluster) -> set[str | None]:
    return {r.namespace for r in operator_requests(cluster) if r.resource is not None and r.resource.plural == "configmaps"}


def awaiting_approval(kube: Kube, namespace: str) -> bool:
    """The OffsetDeletion awaits approval, and the OffsetReset tried to plan (Kafka is not there)."""
    obj = kube.get(GROUP_VERSION, "offsetdeletions", "least", namespace)
    reset = kube.get(GROUP_VERSION, "offsetresets", "least", namespace)
    return (condition(obj.get("status"), "Ready").get("reason") == "AwaitingApproval"
            and condition(reset.get("status"), "Degraded").get("reason") == "KafkaUnavailable")


def expected_reads(namespaces: tuple[str, ...]) -> set[tuple[str | None, str | None]]:
    return {(ns, name) for ns in namespaces for name in secret_refs(ns).values()}


def test_secrets_are_read_only_in_the_resources_namespace_cluster_wide(
        cluster: EmulatedCluster, populated: Kube, kubeconfig: Path) -> None:
    operators = Operators(dataclasses.replace(fast_options(kubeconfig), kafka_timeout_ms=KAFKA_TIMEOUT_MS, namespaces=(), clusterwide=True))
    try:
        operators.start()
        namespaces = (*WATCHED, UNWATCHED)  # cluster-wide: all three are served
        # Each status follows the reads of its Secrets: once all are there, so are the reads.
        wait_until(lambda: all(awaiting_approval(populated, ns) for ns in namespaces), 30, "AwaitingApproval everywhere")
    finally:
        operators.close()
    assert secret_reads(cluster) == expected_reads(namespaces)  # and never a decoy of another namespace


def test_with_watch_namespaces_secrets_stay_in_them_and_nothing_is_listed_cluster_wide(
        cluster: EmulatedCluster, populated: Kube, kubeconfig: Path) -> None:
    operators = Operators(dataclasses.replace(fast_options(kubeconfig), kafka_timeout_ms=KAFKA_TIMEOUT_MS, namespaces=WATCHED))
    try:
        operators.start()
        wait_until(lambda: all(awaiting_approval(populated, ns) for ns in WATCHED), 30, "AwaitingApproval in the watched namespaces")
        # The backup store's sweep runs at the start: wait for its listing (per namespace, or cluster-wide).
        wait_until(lambda: swept(cluster) >= set(WATCHED) or None in swept(cluster), 10, "the backup store's sweep")
    finally:
        operators.close()
    assert secret_reads(cluster) == expected_reads(WATCHED)
    assert "status" not in populated.get(GROUP_VERSION, "offsetdeletions", "least", UNWATCHED)
    assert "status" not in populated.get(GROUP_VERSION, "offsetresets", "least", UNWATCHED)

    role = yaml.safe_load((MANIFESTS / "components" / "namespaced" / "role.yaml").read_text())["rules"]
    cluster_scoped = next(d for d in yaml.safe_load_all((MANIFESTS / "base" / "clusterrole-cluster-scoped.yaml").read_text())
                          if d["kind"] == "ClusterRole")["rules"]
    refused: list[str] = []
    for r in operator_requests(cluster):
        assert r.resource is not None and r.action is not None
        if not r.resource.plural:  # API discovery, open to every authenticated client
            continue
        verb = "patch" if r.method.value == "PATCH" else "update" if r.method.value == "PUT" else VERBS[r.action.value.lower()]
        resource = r.resource.plural + (f"/{r.subresource}" if r.subresource else "")
        call: tuple[Any, ...] = (r.resource.group, resource, verb)
        if r.namespace is None:  # only cluster-scoped objects, as the base's ClusterRole grants
            if not allowed(cluster_scoped, *call):
                refused.append(f"{verb} {resource} cluster-wide")
        elif r.namespace not in WATCHED or not allowed(role, *call):
            refused.append(f"{verb} {resource} in {r.namespace}")
    assert refused == [], "calls the namespaced install does not grant"
