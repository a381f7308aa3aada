"""spec.kafka.strimzi resolved from objects shaped as Strimzi writes them: the listener's address, the
cluster CA, the KafkaUser's credentials; and every way it can be wrong, each naming the field."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from strimzi_objects import kafka, kafka_user, scram_user_secret, secret

from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offsets_model.errors import SpecError

NS = "team-a"
CLUSTER = kafka("events", NS, [("plain", "events-kafka-bootstrap.team-a.svc:9092", False, None),
                               ("scram", "events-kafka-bootstrap.team-a.svc:9094", True, "scram-sha-512"),
                               ("mtls", "events-kafka-bootstrap.team-a.svc:9093", True, "tls")])
OBJECTS = {("kafkas", "events"): CLUSTER,
           ("kafkausers", "offsets-admin"): kafka_user("offsets-admin", NS, "events", "scram-sha-512"),
           ("kafkausers", "offsets-mtls"): kafka_user("offsets-mtls", NS, "events", "tls")}
SECRETS = {s["metadata"]["name"]: {k: base64.b64decode(v) for k, v in s["data"].items()} for s in (
    scram_user_secret("offsets-admin", NS, "s3cret"),
    secret("offsets-mtls", NS, {"user.crt": b"CERT", "user.key": b"KEY", "ca.crt": b"CLIENTS-CA"}),
    secret("events-cluster-ca-cert", NS, {"ca.crt": b"CLUSTER-CA", "ca.p12": b"P12", "ca.password": b"pw"}),
)}


def read_resource(plural: str, name: str) -> Mapping[str, Any]:
    try:
        return OBJECTS[(plural, name)]
    except KeyError:
        raise LookupError(name) from None


def read_secret(name: str) -> Mapping[str, bytes]:
    try:
        return SECRETS[name]
    except KeyError:
        raise LookupError(name) from None


def resolve(strimzi: dict[str, Any], **kafka_fields: Any) -> Any:
    return connection_from_spec({"strimzi": strimzi, **kafka_fields}, read_secret, read_resource=read_resource)


def test_a_plain_listener_needs_no_user_and_is_the_default() -> None:
    settings = resolve({"kafka": "events"})
    assert (settings.bootstrap_servers, settings.security_protocol, settings.tls) == (
        "events-kafka-bootstrap.team-a.svc:9092", "PLAINTEXT", None)


def test_scram_over_tls_uses_the_cluster_ca_and_the_users_password() -> None:
    settings = resolve({"kafka": "events", "listener": "scram", "user": "offsets-admin"},
                       securityProtocol="PLAINTEXT")  # the API server's default is ignored
    assert (settings.security_protocol, settings.sasl_mechanism, settings.username) == ("SASL_SSL", "SCRAM-SHA-512", "offsets-admin")
    assert settings.password == "s3cret" and settings.tls is not None and settings.tls.ca == b"CLUSTER-CA"
    assert (settings.sources.password.secret, settings.sources.password.key) == ("offsets-admin", "password")  # type: ignore[union-attr]
    assert settings.sources.username is None  # a literal name: the SparkApplication gets it as a value
    assert "s3cret" not in repr(settings)


def test_mutual_tls_uses_the_users_certificate() -> None:
    settings = resolve({"kafka": "events", "listener": "mtls", "user": "offsets-mtls"})
    assert settings.security_protocol == "SSL" and settings.tls is not None
    assert (settings.tls.ca, settings.tls.cert, settings.tls.key) == (b"CLUSTER-CA", b"CERT", b"KEY")


@pytest.mark.parametrize(("strimzi", "extra", "field", "reason", "words"), [
    ({"kafka": "nope"}, {}, "spec.kafka.strimzi.kafka", "StrimziNotReady", "Kafka 'nope' not found"),
    ({"kafka": "events", "listener": "external"}, {}, "spec.kafka.strimzi.listener", "InvalidSpec",
     "has no listener 'external' (it has 'plain', 'scram', 'mtls')"),
    ({"kafka": "events", "listener": "scram"}, {}, "spec.kafka.strimzi.user", "InvalidSpec", "authenticates with scram-sha-512"),
    ({"kafka": "events", "listener": "scram", "user": "ghost"}, {}, "spec.kafka.strimzi.user", "StrimziNotReady",
     "KafkaUser 'ghost' not found"),
    ({"kafka": "events", "listener": "mtls", "user": "offsets-admin"}, {}, "spec.kafka.strimzi.user", "InvalidSpec",
     "authenticates with 'scram-sha-512', but listener 'mtls' expects 'tls'"),
    ({"kafka": "events"}, {"securityProtocol": "SSL"}, "spec.kafka.securityProtocol", "InvalidSpec", "derived from the Strimzi listener"),
    ({"kafka": "events"}, {"bootstrapServers": "k:9092"}, "spec.kafka.bootstrapServers", "InvalidSpec", "cannot be set with strimzi"),
])
def test_every_problem_names_its_field(strimzi: dict[str, Any], extra: dict[str, Any], field: str, reason: str,
                                       words: str) -> None:
    with pytest.raises(SpecError) as caught:
        resolve(strimzi, **extra)
    assert (caught.value.field, caught.value.reason) == (field, reason) and words in caught.value.problem


def test_a_cluster_that_reports_no_listeners_yet_is_retried_and_so_is_a_missing_ca() -> None:
    OBJECTS[("kafkas", "young")] = {**kafka("young", NS, []), "status": {"conditions": []}}
    OBJECTS[("kafkas", "no-ca")] = kafka("no-ca", NS, [("tls", "no-ca-kafka-bootstrap:9093", True, None)])
    for name, reason in (("young", "StrimziNotReady"), ("no-ca", "SecretNotFound")):
        with pytest.raises(SpecError) as caught:
            resolve({"kafka": name})
        assert caught.value.reason == reason


def test_neither_bootstrap_servers_nor_strimzi_names_the_field() -> None:
    with pytest.raises(SpecError) as caught:
        connection_from_spec({"securityProtocol": "PLAINTEXT"}, read_secret)
    assert caught.value.field == "spec.kafka.bootstrapServers"
