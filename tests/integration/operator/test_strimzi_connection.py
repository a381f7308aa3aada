"""spec.kafka.strimzi end to end: an OffsetDeletion naming a Strimzi Kafka and KafkaUser (objects shaped as
Strimzi writes them, served by the emulated API) reaches the sandbox broker over SASL_SSL with SCRAM-SHA-512,
trusting the cluster CA from <cluster>-cluster-ca-cert; and a deletion whose KafkaUser has no Secret yet
waits (StrimziNotReady) and goes on once the User Operator's Secret appears."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from operator_harness import (
    GROUP_VERSION,
    NAMESPACE,
    EmulatedCluster,
    Kube,
    Operators,
    condition,
    emulated_cluster,
    fast_options,
)
from strimzi_objects import STRIMZI, crds, kafka, kafka_user, scram_user_secret, secret

from kafka_sandbox import SandboxBroker
from kafka_sandbox.certificates import Certificates, make_certificates
from kafka_sandbox.security import server_ssl_context

pytestmark = pytest.mark.slow  # an operator under Kopf, a TLS broker

USER, PASSWORD = "offsets-admin", "Strimzi-generated-7Qx"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def broker(pki: Certificates) -> Iterator[SandboxBroker]:
    context = server_ssl_context(pki.server_cert, pki.server_key, pki.ca_cert, client_auth="none")
    with SandboxBroker(offsets_partitions=4, security_protocol="SASL_SSL", ssl_context=context,
                       sasl_users={USER: PASSWORD}, sasl_mechanisms=["SCRAM-SHA-512"]) as b:
        yield b


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with emulated_cluster(extra_crds=crds()) as c:
        yield c


def client(broker: SandboxBroker, pki: Certificates) -> dict[str, Any]:
    return {"bootstrap_servers": broker.bootstrap_servers, "security_protocol": "SASL_SSL", "ssl_cafile": str(pki.ca_cert),
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": USER, "sasl_plain_password": PASSWORD}


def seed(broker: SandboxBroker, pki: Certificates, group: str) -> None:
    broker.create_topic("orders", 2)
    consumer = KafkaConsumer(group_id=group, enable_auto_commit=False, **client(broker, pki))
    try:
        consumer.assign([TopicPartition("orders", p) for p in (0, 1)])
        consumer.commit({TopicPartition("orders", p): OffsetAndMetadata(3, "", -1) for p in (0, 1)})
    finally:
        consumer.close()


def committed(broker: SandboxBroker, pki: Certificates, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(**client(broker, pki))
    try:
        return {(tp.topic, tp.partition): o.offset for tp, o in admin.list_group_offsets({group: None})[group].items()}
    finally:
        admin.close()


def create_with_status(kube: Kube, plural: str, obj: dict[str, Any]) -> None:
    """As Strimzi's operators do: the object, then its status through the status subresource."""
    kube.create(plural, {k: v for k, v in obj.items() if k != "status"})
    kube.patch(STRIMZI, plural, obj["metadata"]["name"], {"status": obj["status"]}, subresource="status")


def test_an_offset_deletion_reaches_kafka_through_the_strimzi_listener_and_user(
        broker: SandboxBroker, pki: Certificates, cluster: EmulatedCluster, tmp_path: Path) -> None:
    kube = Kube(cluster.url)
    seed(broker, pki, "replay")
    create_with_status(kube, "kafkas", kafka("events", NAMESPACE, [
        ("plain", "127.0.0.1:1", False, None), ("scram", broker.bootstrap_servers, True, "scram-sha-512")]))
    create_with_status(kube, "kafkausers", kafka_user(USER, NAMESPACE, "events", "scram-sha-512"))
    kube.create("secrets", secret("events-cluster-ca-cert", NAMESPACE, {"ca.crt": pki.ca_cert.read_bytes()}))
    operators = Operators(fast_options(cluster.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        operators.start()
        strimzi = {"strimzi": {"kafka": "events", "listener": "scram", "user": USER}}
        for name in ("od", "early"):
            kube.create("offsetdeletions", {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion",
                                            "metadata": {"name": name, "namespace": NAMESPACE},
                                            "spec": {"kafka": strimzi, "group": "replay", "topics": [{"name": "orders"}],
                                                     "approved": name == "od"}})
        # The user's Secret is the User Operator's to write; until it does, both wait and say why.
        for name in ("od", "early"):
            waiting = kube.wait_for_status(name, lambda s: condition(s, "Degraded").get("reason") == "SecretNotFound",
                                           what=f"{name} SecretNotFound")["status"]
            assert f"Secret '{USER}' not found" in condition(waiting, "Degraded")["message"]
            assert condition(waiting, "Reconciling")["status"] == "True"
        assert committed(broker, pki, "replay") == {("orders", 0): 3, ("orders", 1): 3}
        kube.create("secrets", scram_user_secret(USER, NAMESPACE, PASSWORD))
        done = kube.wait_for_phase("od", "Succeeded", timeout=30)
        assert done["deleted"] == 2 and committed(broker, pki, "replay") == {}
        assert done["target"]["bootstrapServers"] == broker.bootstrap_servers
        assert done["target"]["kafka"] == {**strimzi, "securityProtocol": "PLAINTEXT"}  # by reference
        kube.wait_for_status("early", lambda s: condition(s, "Ready").get("reason") == "AwaitingApproval",
                             what="AwaitingApproval once the Secret exists")
        everything = str([kube.deletion(n) for n in ("od", "early")]) + str(kube.events_for("od"))
        assert PASSWORD not in everything and base64.b64encode(PASSWORD.encode()).decode() not in everything
    finally:
        operators.close()
