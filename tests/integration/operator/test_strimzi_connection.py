"""spec.kafka.strimzi end to end: an OffsetDeletion naming a Strimzi Kafka and KafkaUser (objects shaped as
Strimzi writes them, served by the real kube-apiserver from Strimzi-shaped CRDs; the operator reads them and
the user's Secret with the installed ServiceAccount's token, so the shipped RBAC is what lets it) reaches Apache Kafka (the session's real broker) over its
SASL_SSL listener with SCRAM-SHA-512, trusting the cluster CA from <cluster>-cluster-ca-cert; and a deletion
whose KafkaUser has no Secret yet waits (StrimziNotReady) and goes on once the User Operator's Secret
appears. Every offset asserted is an OffsetFetch over that same SASL_SSL listener. With
KOO_KAFKA_VERSIONS=sandbox the sandbox broker plays the TLS listener instead."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from installed_api import ADMIN, InstalledApi, wait_served
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from kafka_under_test import Kafka, clean_after
from kube_cluster import ApiError
from operator_harness import GROUP_VERSION, Kube, OperatorThread, condition
from strimzi_objects import STRIMZI, crds, kafka, kafka_user, scram_user_secret, secret
from waiting import wait_until

from kafka_sandbox import SandboxBroker
from kafka_sandbox.certificates import make_certificates
from kafka_sandbox.security import server_ssl_context

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf, a TLS broker
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class Listener:
    """A SASL_SSL listener as Strimzi's status would name it: its address, the CA that signed its
    certificate, a SCRAM-SHA-512 user the User Operator would have made, and the broker for topics."""

    bootstrap_servers: str
    ca_cert: Path
    user: str
    password: str
    broker: Kafka


@pytest.fixture
def listener(real_kafka: Kafka, tmp_path: Path) -> Iterator[Listener]:
    with clean_after(real_kafka) as under_test:
        if under_test.is_real:
            secured = under_test.secured
            yield Listener(secured.bootstrap_servers, secured.ca_file, secured.scram_user, secured.scram_password,
                           under_test)
            return
        pki = make_certificates(tmp_path / "pki")
        user, password = "offsets-admin", "Strimzi-generated-7Qx"
        context = server_ssl_context(pki.server_cert, pki.server_key, pki.ca_cert, client_auth="none")
        with SandboxBroker(offsets_partitions=4, security_protocol="SASL_SSL", ssl_context=context,
                           sasl_users={user: password}, sasl_mechanisms=["SCRAM-SHA-512"]) as b:
            yield Listener(b.bootstrap_servers, pki.ca_cert, user, password, Kafka.of_sandbox(b))


@pytest.fixture(scope="module")
def strimzi_crds(api: InstalledApi) -> Iterator[None]:
    """Strimzi's Kafka and KafkaUser kinds in the real API server for the module; removed afterwards (until
    the API server answers 404), so the session's other tests meet it without them."""
    for crd in crds():
        try:
            api.plane.api.request("POST", CRDS, crd)
        except ApiError as exc:
            if exc.status != 409:
                raise
    for crd in crds():
        wait_served(api.plane, f"{STRIMZI}", crd["spec"]["names"]["plural"])
    yield
    for crd in crds():
        api.plane.api.request("DELETE", f"{CRDS}/{crd['metadata']['name']}")

    def gone() -> bool:
        try:
            api.plane.api.request("GET", f"/apis/{STRIMZI}")
        except ApiError as exc:
            return exc.status == 404
        return False

    wait_until(gone, 60, "Strimzi's kinds removed")


def client(listener: Listener) -> dict[str, Any]:
    return {"bootstrap_servers": listener.bootstrap_servers, "security_protocol": "SASL_SSL",
            "ssl_cafile": str(listener.ca_cert), "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": listener.user, "sasl_plain_password": listener.password}


def seed(listener: Listener, group: str) -> None:
    listener.broker.create_topic("orders", 2)
    consumer = KafkaConsumer(group_id=group, enable_auto_commit=False, **client(listener))
    try:
        consumer.assign([TopicPartition("orders", p) for p in (0, 1)])
        consumer.commit({TopicPartition("orders", p): OffsetAndMetadata(3, "", -1) for p in (0, 1)})
    finally:
        consumer.close()


def committed(listener: Listener, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(**client(listener))
    try:
        return {(tp.topic, tp.partition): o.offset for tp, o in admin.list_group_offsets({group: None})[group].items()}
    finally:
        admin.close()


def create_with_status(kube: Kube, plural: str, obj: dict[str, Any]) -> None:
    """As Strimzi's operators do: the object, then its status through the status subresource."""
    kube.create(plural, {k: v for k, v in obj.items() if k != "status"})
    kube.patch(STRIMZI, plural, obj["metadata"]["name"], {"status": obj["status"]}, subresource="status")


def test_an_offset_deletion_reaches_kafka_through_the_strimzi_listener_and_user(
        listener: Listener, strimzi_crds: None, kube: Kube, start_operator: Callable[..., OperatorThread]) -> None:
    user, password, namespace = listener.user, listener.password, kube.namespace
    seed(listener, "replay")
    create_with_status(kube, "kafkas", kafka("events", namespace, [
        ("plain", "127.0.0.1:1", False, None), ("scram", listener.bootstrap_servers, True, "scram-sha-512")]))
    create_with_status(kube, "kafkausers", kafka_user(user, namespace, "events", "scram-sha-512"))
    kube.create("secrets", secret("events-cluster-ca-cert", namespace, {"ca.crt": listener.ca_cert.read_bytes()}))
    start_operator()
    strimzi = {"strimzi": {"kafka": "events", "listener": "scram", "user": user}}
    for name in ("od", "early"):
        approval = {"approved": True, "approvedBy": ADMIN} if name == "od" else {"approved": False}
        kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                        "metadata": {"name": name},
                                        "spec": {"kafka": strimzi, "group": "replay", "topics": [{"name": "orders"}],
                                                 **approval}})
    # The user's Secret is the User Operator's to write; until it does, both wait and say why.
    for name in ("od", "early"):
        waiting = kube.wait_for_status(name, lambda s: condition(s, "Degraded").get("reason") == "SecretNotFound",
                                       what=f"{name} SecretNotFound")["status"]
        assert f"Secret '{user}' not found" in condition(waiting, "Degraded")["message"]
        assert condition(waiting, "Reconciling")["status"] == "True"
    assert committed(listener, "replay") == {("orders", 0): 3, ("orders", 1): 3}
    kube.create("secrets", scram_user_secret(user, namespace, password))
    done = kube.wait_for_phase("od", "Succeeded", timeout=30)
    assert done["deleted"] == 2 and committed(listener, "replay") == {}
    assert done["target"]["bootstrapServers"] == listener.bootstrap_servers
    assert done["target"]["kafka"] == {**strimzi, "securityProtocol": "PLAINTEXT"}  # by reference
    kube.wait_for_status("early", lambda s: condition(s, "Ready").get("reason") == "AwaitingApproval",
                         what="AwaitingApproval once the Secret exists")
    everything = str([kube.deletion(n) for n in ("od", "early")]) + str(kube.events_for("od"))
    assert password not in everything and base64.b64encode(password.encode()).decode() not in everything
