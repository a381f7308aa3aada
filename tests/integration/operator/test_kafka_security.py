"""The operator's Kafka security settings end to end: an OffsetDeletion whose spec.kafka takes SASL_SSL
credentials and a CA (and a client certificate) from Secrets, against the sandbox broker speaking TLS and
SCRAM; each way of getting them wrong is a condition naming the Secret and key; no secret value ever
reaches a status, an Event or a log line.

Offsets are committed and checked with kafka-python's own consumer and admin client (configured directly,
not through the operator), so the operator's adapter is not its own witness.

Kubernetes is the real kube-apiserver (the install applied, a fresh namespace per test): the operator reads
the Secrets with the installed ServiceAccount's token, so the shipped RBAC is what lets it. The broker stays
the sandbox's: it speaks TLS and SCRAM with certificates made per module and says which sessions
authenticated as whom (`sessions()`, `failed_authentications()`), which the assertions need.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from installed_api import ADMIN
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from operator_harness import GROUP_VERSION, Kube, OperatorThread
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.model.connection import (
    ConnectionSettings,
    Masked,
    SecretKey,
    SecretSources,
    TlsFiles,
)
from kafka_offset_operator.model.offsets import KafkaFailure
from kafka_sandbox import SandboxBroker
from kafka_sandbox.certificates import Certificates, make_certificates
from kafka_sandbox.security import server_ssl_context

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf per test, with end-to-end waits: the full suite runs them


Start = Callable[..., OperatorThread]
FINAL = ("Succeeded", "PartiallyFailed", "Failed")
USER = "svc-offsets"
PASSWORD = "Zr7-scram-secret-never-shown-4Qp"
WRONG_PASSWORD = "Zr7-wrong-secret-never-shown-8Lm"
MECHANISM = "SCRAM-SHA-512"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("other-pki"), name="not the brokers'")


@pytest.fixture
def secure_broker(pki: Certificates) -> Iterator[SandboxBroker]:
    """SASL_SSL with SCRAM-SHA-512 only, and client certificates required (mutual TLS)."""
    context = server_ssl_context(pki.server_cert, pki.server_key, pki.ca_cert, client_auth="required")
    with SandboxBroker(offsets_partitions=4, security_protocol="SASL_SSL", ssl_context=context,
                       sasl_users={USER: PASSWORD}, sasl_mechanisms=[MECHANISM]) as broker:
        yield broker


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every log record of the test at DEBUG, kafka-python's included (the operator keeps it at INFO; a test
    turns it back down after the operator starts, to prove the masking rather than the quiet)."""
    caplog.set_level(logging.DEBUG)
    return caplog


WITNESS = "test-witness"  # the client id (and IO thread name) of the test's own kafka-python clients


def client_config(broker: SandboxBroker, pki: Certificates) -> dict[str, Any]:
    """kafka-python's own settings for the secure broker: the test's independent witness. Its password is
    plain (kafka-python logs it at DEBUG), so its records are left out of the no-secret checks."""
    return {"bootstrap_servers": broker.bootstrap_servers, "security_protocol": "SASL_SSL", "client_id": WITNESS,
            "ssl_cafile": str(pki.ca_cert), "ssl_certfile": str(pki.client_cert), "ssl_keyfile": str(pki.client_key),
            "sasl_mechanism": MECHANISM, "sasl_plain_username": USER, "sasl_plain_password": PASSWORD}


def seed(broker: SandboxBroker, pki: Certificates, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Topics with records, and `group`'s commits by a standalone kafka-python consumer over SASL_SSL."""
    for topic in sorted({t for t, _ in offsets}):
        partitions = 1 + max(p for t, p in offsets if t == topic)
        broker.create_topic(topic, partitions)
        for p in range(partitions):
            broker.append_records(topic, p, [(None, b"r%d" % i, 1_700_000_000_000) for i in range(10)])
    consumer = KafkaConsumer(group_id=group, enable_auto_commit=False, **client_config(broker, pki))
    try:
        consumer.assign([TopicPartition(t, p) for t, p in offsets])
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close()


def committed(broker: SandboxBroker, pki: Certificates, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(**client_config(broker, pki))
    try:
        return {(tp.topic, tp.partition): o.offset for tp, o in admin.list_group_offsets({group: None})[group].items()}
    finally:
        admin.close()


def kafka_spec(broker: SandboxBroker, *, user_secret: str = "kafka-user", ca_secret: str = "kafka-ca") -> dict[str, Any]:
    return {"bootstrapServers": broker.bootstrap_servers, "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": MECHANISM, "secretRef": {"name": user_secret}},
            "tls": {"caSecretRef": {"name": ca_secret}, "certSecretRef": {"name": "kafka-client"}}}


def create_secrets(kube: Kube, pki: Certificates, *, password: str = PASSWORD, ca: Certificates | None = None) -> None:
    kube.create_secret("kafka-user", {"username": USER, "password": password})
    kube.create_secret("kafka-ca", {"ca.crt": (ca or pki).ca_pem().decode()})
    kube.create_secret("kafka-client", {"tls.crt": pki.client_cert.read_text(), "tls.key": pki.client_key.read_text()})


def deletion(name: str, group: str, kafka: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": {"group": group, "topics": [{"name": "orders"}], "approved": True, "approvedBy": ADMIN,
                     "kafka": kafka}}


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == type_)


def start(start_operator: Start) -> OperatorThread:
    op = start_operator()
    logging.getLogger("kafka").setLevel(logging.DEBUG)  # back down after the operator raised it to INFO
    return op


def _witness(record: logging.LogRecord) -> bool:
    """A record of the test's own clients: made on the test's thread or on the witness's IO thread."""
    return record.threadName == "MainThread" or WITNESS in (record.threadName or "")


def assert_no_secret(kube: Kube, name: str, logs: pytest.LogCaptureFixture, pki: Certificates,
                     *secrets: str, connected: bool = True) -> None:
    """No password and no line of the client's private key in the status, the Events or any log record
    (message and arguments) other than the test's own clients'."""
    key_lines = [line for line in pki.client_key.read_text().splitlines() if line and not line.startswith("-----")]
    records = [r for r in logs.records if not _witness(r)]
    lines = [f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in records]
    everything = "\n".join([repr(kube.deletion(name).get("status")), repr(kube.events_for(name)), *lines])
    assert any(r.name.startswith("kopf") for r in records), "no operator log records were captured"
    if connected:  # kafka-python logged its configuration (password masked)
        assert any("sasl_plain_password" in line for line in lines)
    for secret in (*secrets, *key_lines):
        assert secret not in everything


# -- it works


def test_sasl_ssl_with_secrets_deletes_offsets(
        secure_broker: SandboxBroker, pki: Certificates, kube: Kube, start_operator: Start,
        logs: pytest.LogCaptureFixture) -> None:
    seed(secure_broker, pki, "reporting", {("orders", 0): 3, ("orders", 1): 4, ("payments", 0): 2})
    create_secrets(kube, pki)
    start(start_operator)
    kube.create("offsetdeletions", deletion("secure", "reporting", kafka_spec(secure_broker)))

    status = kube.wait_for_status("secure", lambda s: s.get("phase") in FINAL, what="a final phase")["status"]
    assert status["phase"] == "Succeeded", status
    assert committed(secure_broker, pki, "reporting") == {("payments", 0): 2}
    # Every connection the operator made was TLS with its client certificate and SCRAM as the Secret's user.
    operator_sessions = [s for s in secure_broker.sessions() if s.principal == f"User:{USER}"]
    assert operator_sessions and all(
        s.tls_version and s.mechanism == MECHANISM and s.client_certificate == "CN=offsets-client"
        for s in operator_sessions)
    assert secure_broker.failed_authentications() == []
    wait_until(lambda: {e["reason"] for e in kube.events_for("secure")} >= {"BackedUp", "Succeeded"}, what="events")
    assert_no_secret(kube, "secure", logs, pki, PASSWORD)


# -- each way of getting it wrong: a condition naming the Secret and key, nothing deleted, nothing leaked


def test_a_wrong_password_names_its_secret_and_key_and_retries_at_the_normal_interval(
        secure_broker: SandboxBroker, pki: Certificates, kube: Kube, start_operator: Start,
        operator_options: OperatorOptions, logs: pytest.LogCaptureFixture) -> None:
    seed(secure_broker, pki, "billing", {("orders", 0): 5})
    create_secrets(kube, pki, password=WRONG_PASSWORD)
    start(start_operator)
    created = time.monotonic()
    kube.create("offsetdeletions", deletion("refused", "billing", kafka_spec(secure_broker)))
    status = kube.wait_for_status("refused", lambda s: "SASL_AUTHENTICATION_FAILED" in repr(s), what="the refusal")["status"]
    # One refused login per visit, not kafka-python's retries until its bootstrap timeout (5 s here).
    assert time.monotonic() - created < operator_options.kafka_timeout_ms / 1000
    degraded = cond(status, "Degraded")
    assert (status["phase"], degraded["status"], degraded["reason"]) == ("Pending", "True", "KafkaUnavailable")
    message = degraded["message"]
    assert message.startswith("SASL_AUTHENTICATION_FAILED: ")
    assert f"user {USER!r}" in message
    assert "Secret 'kafka-user' key 'password' (spec.kafka.sasl.secretRef.passwordKey)" in message
    assert "until the Secret or the Kafka user changes" in message
    assert message.endswith(f"retrying every {operator_options.retry_interval:g}s")

    # Then one login per visit, one visit per retry interval: no spin.
    window_start, attempts_before = time.monotonic(), len(secure_broker.failed_authentications())
    wait_until(lambda: time.monotonic() - window_start > 2, what="two seconds of retries")
    attempts = len(secure_broker.failed_authentications()) - attempts_before
    assert 1 <= attempts <= 2 / operator_options.retry_interval + 2, attempts
    assert committed(secure_broker, pki, "billing") == {("orders", 0): 5}
    # The Event is posted once, when the condition first says so, not once per retry.
    wait_until(lambda: kube.events_for("refused"), what="the Warning event")
    assert [e["reason"] for e in kube.events_for("refused")] == ["KafkaUnavailable"]
    assert "Secret 'kafka-user' key 'password'" in kube.events_for("refused")[0]["message"]
    assert_no_secret(kube, "refused", logs, pki, PASSWORD, WRONG_PASSWORD)


def test_a_wrong_ca_names_its_secret_and_key(
        secure_broker: SandboxBroker, pki: Certificates, other_pki: Certificates, kube: Kube,
        start_operator: Start, logs: pytest.LogCaptureFixture) -> None:
    seed(secure_broker, pki, "audit", {("orders", 0): 2})
    create_secrets(kube, pki, ca=other_pki)
    start(start_operator)
    seen = len(secure_broker.sessions())  # the witness's, from seed()
    kube.create("offsetdeletions", deletion("untrusted", "audit", kafka_spec(secure_broker)))
    status = kube.wait_for_status("untrusted", lambda s: "SSL_HANDSHAKE_FAILED" in repr(s), what="the TLS failure")["status"]
    degraded = cond(status, "Degraded")
    assert degraded["status"] == "True" and status["phase"] == "Pending"
    assert degraded["message"].startswith(f"SSL_HANDSHAKE_FAILED: the certificate of {secure_broker.bootstrap_servers} "
                                          "is not trusted by the CA in Secret 'kafka-ca' key 'ca.crt' "
                                          "(spec.kafka.tls.caSecretRef.key)")
    assert len(secure_broker.sessions()) == seen  # the handshake never completed: no login was even tried
    assert committed(secure_broker, pki, "audit") == {("orders", 0): 2}
    wait_until(lambda: kube.events_for("untrusted"), what="the Warning event")
    assert_no_secret(kube, "untrusted", logs, pki, PASSWORD)


def test_a_missing_secret_key_names_the_secret_and_key(
        secure_broker: SandboxBroker, pki: Certificates, kube: Kube, start_operator: Start,
        logs: pytest.LogCaptureFixture) -> None:
    seed(secure_broker, pki, "ledger", {("orders", 0): 7})
    create_secrets(kube, pki)
    kube.create_secret("no-password", {"username": USER, "pasword": PASSWORD})  # a typo in the key
    kube.create_secret("no-ca", {"ca.pem": pki.ca_pem().decode()})
    start(start_operator)
    seen = len(secure_broker.sessions())  # the witness's, from seed()
    kube.create("offsetdeletions", deletion("no-password", "ledger", kafka_spec(secure_broker, user_secret="no-password")))
    kube.create("offsetdeletions", deletion("no-ca", "ledger", kafka_spec(secure_broker, ca_secret="no-ca")))
    for name, field, secret, key in (
        ("no-password", "spec.kafka.sasl.secretRef.passwordKey", "no-password", "password"),
        ("no-ca", "spec.kafka.tls.caSecretRef.key", "no-ca", "ca.crt"),
    ):
        status = kube.wait_for_status(name, lambda s: bool(s.get("conditions")), what="a condition")["status"]
        degraded = cond(status, "Degraded")
        assert (degraded["status"], degraded["reason"]) == ("True", "SecretNotFound")
        assert degraded["message"] == f"{field}: Secret {secret!r} has no key {key!r}"
        wait_until(lambda name=name: kube.events_for(name), what="the SecretNotFound event")
        assert_no_secret(kube, name, logs, pki, PASSWORD, connected=False)
    assert len(secure_broker.sessions()) == seen and secure_broker.failed_authentications() == []  # never asked
    assert committed(secure_broker, pki, "ledger") == {("orders", 0): 7}


# -- the adapter's naming of each connect-time failure (no operator: KafkaAdmin against the sandbox)


def settings(broker: SandboxBroker, protocol: str, *, ca: bytes | None = None, mechanism: str | None = None,
             password: str = PASSWORD) -> ConnectionSettings:
    sources = SecretSources(password=SecretKey("spec.kafka.sasl.secretRef.passwordKey", "kafka-user", "password"),
                            ca=SecretKey("spec.kafka.tls.caSecretRef.key", "kafka-ca", "ca.crt"))
    return ConnectionSettings(broker.bootstrap_servers, protocol, mechanism, USER if mechanism else None,
                              Masked(password) if mechanism else None, TlsFiles(ca) if ca else None, sources)


def io_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("kafka-io-")}


def refusal(connection: ConnectionSettings) -> KafkaFailure:
    """The KafkaFailure of connecting: at the first refusal, not at the bootstrap timeout, and without leaving
    kafka-python's IO thread behind (KafkaAdminClient starts it before it bootstraps)."""
    before, started = io_threads(), time.monotonic()
    with pytest.raises(KafkaFailure) as failed:
        KafkaAdmin(connection, timeout_ms=5000)
    assert time.monotonic() - started < 2, "gave up only at the bootstrap timeout"
    assert not failed.value.retriable
    assert io_threads() <= before, "kafka-python's IO thread leaked"
    return failed.value


def test_connect_failures_are_named_at_once(pki: Certificates, tmp_path: Path) -> None:
    elsewhere = make_certificates(tmp_path / "elsewhere", hosts=("10.9.9.9",))
    context = server_ssl_context(elsewhere.server_cert, elsewhere.server_key)
    with SandboxBroker(offsets_partitions=1, security_protocol="SSL", ssl_context=context) as broker:
        failure = refusal(settings(broker, "SSL", ca=elsewhere.ca_pem()))
        assert (failure.code, failure.message) == (
            "SSL_HANDSHAKE_FAILED", f"the certificate of {broker.bootstrap_servers} does not name that host: "
            "IP address mismatch, certificate is not valid for '127.0.0.1'.")
    with SandboxBroker(offsets_partitions=1) as broker:
        failure = refusal(settings(broker, "SSL", ca=pki.ca_pem()))
        assert failure.code == "SSL_HANDSHAKE_FAILED"
        assert failure.message.endswith("does it take spec.kafka.securityProtocol SSL?")
        failure = refusal(settings(broker, "SASL_PLAINTEXT", mechanism="PLAIN"))
        assert (failure.code, failure.message) == (
            "ILLEGAL_SASL_STATE", f"the listener at {broker.bootstrap_servers} does not take SASL "
            "(spec.kafka.securityProtocol is SASL_PLAINTEXT)")
    with SandboxBroker(offsets_partitions=1, security_protocol="SASL_PLAINTEXT", sasl_users={USER: PASSWORD},
                       sasl_mechanisms=["PLAIN"]) as broker:
        failure = refusal(settings(broker, "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256"))
        # Kafka answers UNSUPPORTED_SASL_MECHANISM and closes; kafka-python may lose the answer with the close.
        assert failure.code in ("UNSUPPORTED_SASL_MECHANISM", "SASL_AUTHENTICATION_FAILED")
        assert "spec.kafka.sasl.mechanism" in failure.message
        failure = refusal(settings(broker, "SASL_PLAINTEXT", mechanism="PLAIN", password=WRONG_PASSWORD))
        assert failure.code == "SASL_AUTHENTICATION_FAILED"
        assert "Secret 'kafka-user' key 'password' (spec.kafka.sasl.secretRef.passwordKey)" in failure.message
        assert WRONG_PASSWORD not in failure.message
        with KafkaAdmin(settings(broker, "SASL_PLAINTEXT", mechanism="PLAIN")) as admin:
            assert admin.committed_offsets("nobody") == {}
