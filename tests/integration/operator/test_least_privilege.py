"""Least privilege, as the operator behaves (issue 9, finding 10; docs/safety.md): it reads a Secret only in the
namespace of the resource that names it, and with watch namespaces it never lists or watches a namespaced
resource cluster-wide, so the namespaced install's Roles (manifests/components/namespaced) are all it needs.

On the real API server, installed as a platform team does it (installed_api.py), the operator on the installed
ServiceAccount's token: three fresh namespaces, each holding an OffsetDeletion and an OffsetReset and every
Secret any of them names (decoys: the install's ClusterRole lets the operator read Secrets everywhere, so a read
in the wrong namespace would succeed and only the API server's audit log, tests/support/audit_log.py, can
tell).

The second half takes one permission at a time out of the installed ClusterRole, and a real 403 ends in a
condition that names it (see the section's comment below).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from audit_log import AuditLog
from brokers import make_topics
from install_renders import MANIFESTS, allowed
from installed_api import (
    ADMIN,
    OPERATOR_USER,
    InstalledApi,
    cluster_role,
    delete_namespace,
    installed_api,
    rules_changed,
)
from kafka_clients import committed, empty_group
from kube_cluster import ControlPlane
from operator_harness import GROUP_VERSION, Kube, Operators, condition
from operator_process import OperatorProcess
from waiting import wait_until

from kafka_sandbox import SandboxBroker

KAFKA_TIMEOUT_MS = 300  # the OffsetResets' dry runs find no Kafka: give up soon


def secret_refs(namespace: str) -> dict[str, str]:
    """The Secrets a resource in `namespace` names: SASL credentials and a CA, named after the namespace."""
    return {"sasl": f"user-{namespace}", "ca": f"ca-{namespace}"}


def create_resources(kube: Kube, namespace: str) -> None:
    refs = secret_refs(namespace)
    kafka = {"bootstrapServers": "127.0.0.1:9", "securityProtocol": "SASL_SSL",
             "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": refs["sasl"]}},
             "tls": {"caSecretRef": {"name": refs["ca"]}}}
    kube.create("offsetdeletions", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "least", "namespace": namespace},
        "spec": {"kafka": kafka, "group": "g", "topics": [{"name": "t"}]}})  # not approved: Secrets read, Kafka never called
    kube.create("offsetresets", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "least", "namespace": namespace},
        "spec": {"kafka": kafka, "group": "g", "allTopics": True, "target": {"earliest": True}}})  # a dry run: Kafka is asked


@dataclass(frozen=True)
class Decoys:
    api: InstalledApi
    namespaces: tuple[str, str, str]  # the install's test namespace and two more

    @property
    def kube(self) -> Kube:
        return self.api.kube

    def names(self) -> set[str]:
        return {name for ns in self.namespaces for name in secret_refs(ns).values()}


@pytest.fixture
def decoys(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[Decoys]:
    """Every Secret any resource names exists in every namespace; an OffsetDeletion and an OffsetReset in each."""
    with installed_api(real_cluster, tmp_path) as api:
        extra = tuple(f"t-{uuid.uuid4().hex[:10]}" for _ in range(2))
        for ns in extra:
            real_cluster.create_namespace(ns)
        namespaces = (api.namespace, extra[0], extra[1])
        try:
            for ns in namespaces:
                for other in namespaces:
                    refs = secret_refs(other)
                    api.kube.create_secret(refs["sasl"], {"username": "u", "password": "p"}, ns)
                    api.kube.create_secret(refs["ca"], {"ca.crt": "not a certificate"}, ns)
                create_resources(api.kube, ns)
            yield Decoys(api, namespaces)
        finally:
            for ns in extra:
                delete_namespace(real_cluster, ns)


def awaiting_approval(kube: Kube, namespace: str) -> bool:
    """The OffsetDeletion awaits approval, and the OffsetReset tried to plan (Kafka is not there)."""
    obj = kube.get(GROUP_VERSION, "offsetdeletions", "least", namespace)
    reset = kube.get(GROUP_VERSION, "offsetresets", "least", namespace)
    return (condition(obj.get("status"), "Ready").get("reason") == "AwaitingApproval"
            and condition(reset.get("status"), "Degraded").get("reason") == "KafkaUnavailable")


def secret_calls(audit: AuditLog, decoys: Decoys) -> tuple[set[tuple[str, str]], list[str]]:
    """The decoys read (namespace, name), and any call on Secrets that is not a read of one Secret (a list or a
    watch would read every decoy at once)."""
    calls = audit.calls(lambda c: c.resource == "secrets")
    reads = {(c.namespace, c.name) for c in calls if c.verb == "get" and c.name in decoys.names()}
    others = [f"{c.verb} secrets in {c.namespace or 'all namespaces'}" for c in calls if c.verb != "get"]
    return reads, others


def expected_reads(namespaces: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(ns, name) for ns in namespaces for name in secret_refs(ns).values()}


def test_secrets_are_read_only_in_the_resources_namespace_cluster_wide(decoys: Decoys) -> None:
    audit = AuditLog.of(decoys.api.plane, OPERATOR_USER)
    operators = Operators(decoys.api.options(kafka_timeout_ms=KAFKA_TIMEOUT_MS, namespaces=(), clusterwide=True))
    try:
        operators.start()
        # Each status follows the reads of its Secrets: once all are there, so are the reads.
        wait_until(lambda: all(awaiting_approval(decoys.kube, ns) for ns in decoys.namespaces), 60,
                   "AwaitingApproval everywhere")
    finally:
        operators.close()
    reads, others = secret_calls(audit, decoys)
    assert reads == expected_reads(decoys.namespaces)  # and never a decoy of another namespace
    assert others == []


def test_with_watch_namespaces_secrets_stay_in_them_and_nothing_is_listed_cluster_wide(decoys: Decoys) -> None:
    watched, unwatched = decoys.namespaces[:2], decoys.namespaces[2]
    audit = AuditLog.of(decoys.api.plane, OPERATOR_USER)
    operators = Operators(decoys.api.options(kafka_timeout_ms=KAFKA_TIMEOUT_MS, namespaces=watched))
    try:
        operators.start()
        wait_until(lambda: all(awaiting_approval(decoys.kube, ns) for ns in watched), 60,
                   "AwaitingApproval in the watched namespaces")
        # The backup store's sweep runs at the start: wait for its listing (per namespace, or cluster-wide).
        audit.wait(lambda c: c.resource == "configmaps" and c.verb == "list" and c.namespace in (*watched, ""),
                   what="the backup store's sweep")
    finally:
        operators.close()
    reads, others = secret_calls(audit, decoys)
    assert reads == expected_reads(watched)
    assert others == []
    assert "status" not in decoys.kube.get(GROUP_VERSION, "offsetdeletions", "least", unwatched)
    assert "status" not in decoys.kube.get(GROUP_VERSION, "offsetresets", "least", unwatched)

    role = yaml.safe_load((MANIFESTS / "components" / "namespaced" / "role.yaml").read_text())["rules"]
    cluster_scoped = next(d for d in yaml.safe_load_all((MANIFESTS / "base" / "clusterrole-cluster-scoped.yaml").read_text())
                          if d["kind"] == "ClusterRole")["rules"]
    refused: list[str] = []
    for c in audit.calls():
        if not c.namespace:  # only cluster-scoped objects, as the base's ClusterRole grants
            if not allowed(cluster_scoped, c.group, c.resource_path, c.verb):
                refused.append(f"{c.verb} {c.resource_path} cluster-wide")
        elif c.namespace not in watched or not allowed(role, c.group, c.resource_path, c.verb):
            refused.append(f"{c.verb} {c.resource_path} in {c.namespace}")
    assert refused == [], "calls the namespaced install does not grant"


# -- On the real API server: the shipped rules are what a real RBAC authorizer checks
#
# The install applied as a platform team does it (installed_api.py) and `kafka-offset-operator run` as a
# process with the installed ServiceAccount's token. The flows of test_real_install.py, test_policy_modes*.py
# and test_peering.py pass with the shipped ClusterRole as it is: it is enough. Here one permission at a time
# is taken out of it (each kind of access: reading credentials, writing the backup store, a workload's scale
# subresource, best-effort Events) and the flow that needs it ends in a condition naming what the real 403
# refused, with Kafka untouched and the process alive; the ClusterRole is restored after each and the test
# waits until the authorizer answers as before. Not taken out: the status subresource (no condition can be
# written without it) and the watch rules (Kopf's own answer to a 403, not ours). The sandbox broker serves
# Kafka: nothing here is about Kafka.


@dataclass(frozen=True)
class Removal:
    """One permission out of the installed ClusterRole, the flow that needs it, and what that flow ends in."""

    without: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    probe: tuple[str, str, str, str]  # (verb, resource, group, subresource) whose answer the change turns
    flow: str  # "deletion", "sasl-deletion" or "paused-reset"
    refused: str  # in the condition's message: the API server's own words about the 403


def _drop_verb(resource: str, verb: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def without(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for rule in rules:
            if resource in rule["resources"]:
                rule = {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
            out.append(rule)
        return out
    return without


def _drop_rule(resource: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda rules: [r for r in rules if resource not in r["resources"]]


PAUSE_RULE = {"apiGroups": ["apps"], "resources": ["deployments/scale", "statefulsets/scale"], "verbs": ["get", "patch"]}
REMOVALS = {
    "secrets-get": Removal(_drop_rule("secrets"), ("get", "secrets", "", ""), "sasl-deletion",
                           'cannot get resource "secrets" in API group "" in the namespace'),
    "configmaps-create": Removal(_drop_verb("configmaps", "create"), ("create", "configmaps", "", ""), "deletion",
                                 'cannot create resource "configmaps" in API group "" in the namespace'),
    "scale-patch": Removal(lambda rules: [*rules, {**PAUSE_RULE, "verbs": ["get"]}], ("get", "deployments", "apps", "scale"),
                           "paused-reset", "may not patch deployments/scale (apps) in namespace"),
    "events-create": Removal(lambda rules: [r for r in rules if "events" not in r["resources"]],
                             ("create", "events", "", ""), "deletion", ""),  # best effort: the flow succeeds
}


@pytest.fixture
def real_installed(real_cluster: ControlPlane, real_crds: Path, tmp_path: Path) -> Iterator[InstalledApi]:
    with installed_api(real_cluster, tmp_path) as api:
        yield api


def conditions_text(status: Mapping[str, Any]) -> str:
    return " | ".join(f"{c.get('type')}={c.get('reason')}: {c.get('message')}" for c in status.get("conditions") or ())


@pytest.mark.slow  # an operator process
@pytest.mark.parametrize("removed", list(REMOVALS), ids=list(REMOVALS))
def test_one_permission_less_ends_in_a_condition_naming_it_from_a_real_403(
        removed: str, broker: SandboxBroker, real_installed: InstalledApi, tmp_path: Path) -> None:
    removal = REMOVALS[removed]
    api, kube = real_installed, real_installed.kube
    make_topics(broker, {"orders": 2}, records_per_partition=8)
    offsets = {("orders", 0): 3, ("orders", 1): 4}
    empty_group(broker.bootstrap_servers, "least-app", offsets)
    verb, resource, group, subresource = removal.probe
    rules = removal.without(cluster_role(api.plane)["rules"])
    in_force = (api.namespace, verb, resource, group, subresource)
    with rules_changed(api.plane, rules, in_force), \
            OperatorProcess(api.token_kubeconfig, tmp_path, namespace=api.namespace) as operator:
        plural, name = start_flow(removal.flow, kube, broker)
        status = wait_ended(kube, plural, name, removal)
        if removal.refused:  # said once: the object stays as it is while the operator goes on visiting it
            unchanged_while_visited(kube, plural, name)
            warnings = [e for e in kube.events_for(name) if e["type"] == "Warning"]
            assert len(warnings) == 1 and removal.refused in warnings[0]["message"], warnings
        assert operator.proc.poll() is None, operator.log()[-3000:]
        assert "Traceback" not in operator.log(), operator.log()[-3000:]
    if removal.refused:
        assert committed(broker.bootstrap_servers, "least-app") == offsets, "Kafka changed without the permission"
        if removal.flow == "paused-reset":
            assert kube.get("apps/v1", "deployments", "least-api")["spec"]["replicas"] == 2
    else:
        assert status["phase"] == "Succeeded", conditions_text(status)
        assert committed(broker.bootstrap_servers, "least-app") == {}


def start_flow(flow: str, kube: Kube, broker: SandboxBroker) -> tuple[str, str]:
    """Create what the flow acts on; (plural, name) of the object whose status tells how it ended."""
    kafka: dict[str, Any] = {"bootstrapServers": broker.bootstrap_servers}
    if flow == "sasl-deletion":
        kube.create_secret("least-user", {"username": "u", "password": "p"})
        kafka = {**kafka, "securityProtocol": "SASL_PLAINTEXT",
                 "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "least-user"}}}
    if flow in ("deletion", "sasl-deletion"):
        kube.create("offsetdeletions", {
            "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "least"},
            "spec": {"kafka": kafka, "group": "least-app", "topics": [{"name": "orders"}], "approved": True,
                     "approvedBy": ADMIN}})
        return "offsetdeletions", "least"
    kube.create("deployments", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "least-api"},
                                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "least-api"}},
                                         "template": {"metadata": {"labels": {"app": "least-api"}},
                                                      "spec": {"containers": [{"name": "c", "image": "none"}]}}}})
    kube.create("offsetresets", {
        "apiVersion": GROUP_VERSION, "kind": "OffsetReset", "metadata": {"name": "least"},
        "spec": {"kafka": kafka, "group": "least-app", "allTopics": True, "target": {"latest": True},
                 "approved": True, "approvedBy": ADMIN, "pauseWorkloads": [{"kind": "Deployment", "name": "least-api"}]}})
    return "offsetresets", "least"


def wait_ended(kube: Kube, plural: str, name: str, removal: Removal) -> dict[str, Any]:
    """The status once the flow ended: a condition quoting the refusal, or (nothing refused) a final phase."""
    seen: list[dict[str, Any]] = [{}]

    def ended() -> dict[str, Any] | None:
        seen[0] = kube.get(GROUP_VERSION, plural, name).get("status") or {}
        if removal.refused:
            return seen[0] if removal.refused in conditions_text(seen[0]) else None
        return seen[0] if seen[0].get("phase") in ("Succeeded", "PartiallyFailed", "Failed") else None

    try:
        return wait_until(ended, 60, f"{plural}/{name} to end")
    except AssertionError:
        raise AssertionError(f"{plural}/{name} did not end as expected; status: {seen[0]}") from None


def unchanged_while_visited(kube: Kube, plural: str, name: str, seconds: float = 3.0) -> None:
    """No write to the object for `seconds` (ten of the tests' 0.3 s retry intervals, each a visit that
    meets the same 403): the refusal is said once, not rewritten in a loop. The write that says it may be
    followed by Kopf's own bookkeeping of that visit (seen once under load), so the window opens once the
    object has been still for a second; a loop, writing every visit, never is, and fails here."""
    version = ""

    def still() -> bool:
        nonlocal version
        before = kube.get(GROUP_VERSION, plural, name)["metadata"]["resourceVersion"]
        time.sleep(1.0)  # an observation window, as below
        version = kube.get(GROUP_VERSION, plural, name)["metadata"]["resourceVersion"]
        return before == version

    wait_until(still, timeout=30, what=f"{plural}/{name} to stop being written")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = kube.get(GROUP_VERSION, plural, name)
        assert current["metadata"]["resourceVersion"] == version, ("rewritten", current.get("status"))
        time.sleep(0.2)  # an observation window, not a synchronisation: nothing is waited for
