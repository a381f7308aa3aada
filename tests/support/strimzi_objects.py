"""Strimzi objects shaped as Strimzi 0.4x writes them (the Cluster Operator's Kafka status, the User
Operator's KafkaUser status and Secrets), for tests of spec.kafka.strimzi; and minimal CRDs for the
emulated API (schemaless, like a CRD the tests do not own)."""

from __future__ import annotations

import base64
from typing import Any

STRIMZI = "kafka.strimzi.io/v1beta2"


def kafka(name: str, namespace: str, listeners: list[tuple[str, str, bool, str | None]]) -> dict[str, Any]:
    """A Kafka with (listener name, bootstrapServers, tls, authentication type) per listener, Ready."""
    return {
        "apiVersion": STRIMZI, "kind": "Kafka", "metadata": {"name": name, "namespace": namespace},
        "spec": {"kafka": {"version": "4.1.0", "listeners": [
            {"name": n, "port": int(servers.rpartition(":")[2]), "type": "internal", "tls": tls,
             **({"authentication": {"type": auth}} if auth else {})} for n, servers, tls, auth in listeners]}},
        "status": {
            "clusterId": "FSg6Ulj9RZ-mp2Sfy-FtEA",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T08:00:00Z"}],
            "listeners": [{"name": n, "addresses": [{"host": servers.rpartition(":")[0], "port": int(servers.rpartition(":")[2])}],
                           "bootstrapServers": servers, **({"certificates": ["-----BEGIN CERTIFICATE-----..."]} if tls else {})}
                          for n, servers, tls, _ in listeners],
            "observedGeneration": 1, "kafkaVersion": "4.1.0",
        },
    }


def kafka_user(name: str, namespace: str, cluster: str, auth: str) -> dict[str, Any]:
    return {
        "apiVersion": STRIMZI, "kind": "KafkaUser",
        "metadata": {"name": name, "namespace": namespace, "labels": {"strimzi.io/cluster": cluster}},
        "spec": {"authentication": {"type": auth}},
        "status": {"username": name if auth != "tls" else f"CN={name}", "secret": name,
                   "conditions": [{"type": "Ready", "status": "True"}], "observedGeneration": 1},
    }


def secret(name: str, namespace: str, data: dict[str, bytes]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque", "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def scram_user_secret(name: str, namespace: str, password: str) -> dict[str, Any]:
    jaas = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{name}" password="{password}";'
    return secret(name, namespace, {"password": password.encode(), "sasl.jaas.config": jaas.encode()})


def crds() -> list[dict[str, Any]]:
    return [{
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.kafka.strimzi.io"},
        "spec": {"group": "kafka.strimzi.io", "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "categories": ["strimzi"]},
                 "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    } for kind, plural in (("Kafka", "kafkas"), ("KafkaUser", "kafkausers"))]
