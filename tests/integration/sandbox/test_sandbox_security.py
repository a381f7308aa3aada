"""TLS and SASL on the sandbox broker, proven with two independent clients (kafka-python and librdkafka via
confluent-kafka) and with exact frames for the protocol rules of Kafka's SaslServerAuthenticator.

Certificates are made per module by `kafka_sandbox.certificates` (the openssl command) in a temporary
directory: two unrelated CAs, so a client can trust the wrong one.
"""

from __future__ import annotations

import logging
import re
import selectors
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.net.sasl.plain import SaslMechanismPlain
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from sandbox_wire_client import WireClient, frame

from kafka_sandbox import SandboxBroker
from kafka_sandbox.certificates import Certificates, make_certificates
from kafka_sandbox.security import server_ssl_context

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
QUIET = {"log_level": 0}  # librdkafka logs every refused connection otherwise
SASL_AUTHENTICATION_FAILED = 58
ILLEGAL_SASL_STATE = 34
UNSUPPORTED_SASL_MECHANISM = 33
CASES = [
    ("SSL", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("other-pki"), name="some other")


def secured(pki: Certificates, protocol: str, *, client_auth: str = "none", **kwargs: Any) -> SandboxBroker:
    if "SSL" in protocol:
        kwargs["ssl_context"] = server_ssl_context(pki.server_cert, pki.server_key, pki.ca_cert, client_auth)
    if protocol.startswith("SASL_"):
        kwargs.setdefault("sasl_users", USERS)
    return SandboxBroker(offsets_partitions=2, security_protocol=protocol, **kwargs)


def kafka_python(broker: SandboxBroker, protocol: str, mechanism: str | None, cafile: Path | None,
                 password: str = "alice-secret", **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": broker.bootstrap_servers, "security_protocol": protocol,
                              "request_timeout_ms": 5000, "bootstrap_timeout_ms": 5000, **extra}
    if cafile is not None:
        config["ssl_cafile"] = str(cafile)
    if mechanism:
        config.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password=password)
    return config


def librdkafka(broker: SandboxBroker, protocol: str, mechanism: str | None, cafile: Path | None,
               password: str = "alice-secret", **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": protocol,
                              **QUIET, **extra}
    if cafile is not None:
        config["ssl.ca.location"] = str(cafile)
    if mechanism:
        config.update({"sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": password})
    return config


def assert_sessions(broker: SandboxBroker, protocol: str, mechanism: str | None) -> None:
    """Every connection used the listener's protocol and, on SASL, authenticated alice; there were at least
    two (the bootstrap one and the one to node 0 that Metadata advertised), so the client reconnected to
    the advertised endpoint with the same protocol."""
    sessions = broker.sessions()
    assert len(sessions) >= 2, sessions
    for session in sessions:
        assert session.protocol == protocol
        assert (session.tls_version is not None) == ("SSL" in protocol)
        assert session.mechanism == mechanism
        assert session.principal == ("User:alice" if mechanism else "User:ANONYMOUS")


# -- the two clients, every protocol and mechanism


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_kafka_python_connects(pki: Certificates, protocol: str, mechanism: str | None) -> None:
    with secured(pki, protocol) as broker:
        cafile = pki.ca_cert if "SSL" in protocol else None
        admin = KafkaAdminClient(**kafka_python(broker, protocol, mechanism, cafile))
        try:
            admin.create_topics([KpNewTopic("orders", 2, 1)])
            assert set(admin.list_topics()) == {"__consumer_offsets", "orders"}
            cluster = admin.describe_cluster()
        finally:
            admin.close()
        # Metadata and DescribeCluster advertise the one listener: this broker's host and port.
        assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [("127.0.0.1", broker.port)]
        assert_sessions(broker, protocol, mechanism)


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_librdkafka_connects(pki: Certificates, protocol: str, mechanism: str | None) -> None:
    with secured(pki, protocol) as broker:
        cafile = pki.ca_cert if "SSL" in protocol else None
        admin = AdminClient(librdkafka(broker, protocol, mechanism, cafile))
        for future in admin.create_topics([NewTopic("orders", 3, 1)]).values():
            future.result(10)
        metadata = admin.list_topics(timeout=10)
        assert {name: len(t.partitions) for name, t in metadata.topics.items()} == {"__consumer_offsets": 2, "orders": 3}
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", broker.port)]
        assert_sessions(broker, protocol, mechanism)


def test_client_certificates_when_the_listener_requires_them(pki: Certificates) -> None:
    with secured(pki, "SSL", client_auth="required") as broker:
        with_cert = {"ssl_certfile": str(pki.client_cert), "ssl_keyfile": str(pki.client_key)}
        admin = KafkaAdminClient(**kafka_python(broker, "SSL", None, pki.ca_cert, **with_cert))
        try:
            assert "__consumer_offsets" in admin.list_topics()
        finally:
            admin.close()
        admin2 = AdminClient(librdkafka(broker, "SSL", None, pki.ca_cert, **{
            "ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}))
        assert "__consumer_offsets" in admin2.list_topics(timeout=10).topics
        sessions = broker.sessions()
        assert {s.principal for s in sessions} == {"User:CN=offsets-client"}
        # Without a certificate the server ends the handshake (TLS 1.3 sends the alert after the client's
        # Finished, so librdkafka may only see the connection go down): no session.
        errors = librdkafka_errors(librdkafka(broker, "SSL", None, pki.ca_cert))
        codes = {KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}
        assert errors and errors[0].code() in codes, errors
        assert len(broker.sessions()) == len(sessions)


# -- refusals


def librdkafka_errors(config: dict[str, Any], timeout: float = 10) -> list[KafkaError]:
    """The errors librdkafka reports (error_cb) while it tries to connect."""
    errors: list[KafkaError] = []
    admin = AdminClient({**config, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        admin.poll(0.1)
    return errors


def wire_client(broker: SandboxBroker, pki: Certificates) -> WireClient:
    """A bare protocol client, over TLS when the listener wants it (trusting the right CA)."""
    client = WireClient(broker.port)
    if "SSL" in broker.security_protocol:
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
    return client


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "mechanism"), [c for c in CASES if c[1]])
def test_a_wrong_password_is_refused_with_sasl_authentication_failed(
        pki: Certificates, protocol: str, mechanism: str) -> None:
    cafile = pki.ca_cert if "SSL" in protocol else None
    with secured(pki, protocol) as broker:
        # The answer itself, to kafka-python's own tokens and messages.
        with wire_client(broker, pki) as client:
            answer = login(client, "alice", "wrong", mechanism)
            assert answer.error_code == SASL_AUTHENTICATION_FAILED
            assert answer.error_message.startswith("Authentication failed")
            assert client.read_frame() is None
        # librdkafka: Kafka's error 58 arrives as its local _AUTHENTICATION with the broker's message.
        [error, *_] = librdkafka_errors(librdkafka(broker, protocol, mechanism, cafile, password="wrong"))
        assert error.code() == KafkaError._AUTHENTICATION, error
        assert "SASL authentication error: Authentication failed" in error.str()
        # kafka-python's KafkaAdminClient: refused on every bootstrap attempt until its timeout (it often
        # loses the answer that comes with the close: "socket disconnected"; see docs/sandbox-broker.md).
        with pytest.raises(Exception, match="Unable to bootstrap"):
            KafkaAdminClient(**kafka_python(broker, protocol, mechanism, cafile, password="wrong",
                                            bootstrap_timeout_ms=1500))
        assert len(broker.failed_authentications()) >= 3
        assert broker.sessions() == []


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_wrong_ca_fails_the_tls_handshake(pki: Certificates, other_pki: Certificates, protocol: str,
                                             caplog: pytest.LogCaptureFixture) -> None:
    mechanism = "SCRAM-SHA-512" if protocol == "SASL_SSL" else None
    with secured(pki, protocol) as broker:
        [error, *_] = librdkafka_errors(librdkafka(broker, protocol, mechanism, other_pki.ca_cert))
        # _SSL, or _TRANSPORT when the broker's close overtakes librdkafka's own report of its alert
        assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT), error
        assert "certificate verify failed" in error.str(), error
        caplog.set_level(logging.WARNING, logger="kafka")
        with pytest.raises(Exception, match="Unable to bootstrap"):
            KafkaAdminClient(**kafka_python(broker, protocol, mechanism, other_pki.ca_cert, bootstrap_timeout_ms=1500))
        assert "CERTIFICATE_VERIFY_FAILED" in caplog.text
        assert broker.sessions() == []


def test_a_plaintext_client_gets_nothing_from_a_tls_listener(pki: Certificates) -> None:
    with secured(pki, "SSL") as broker, WireClient(broker.port) as client:
        client.send(ApiVersionsRequest(), 0)
        assert client.read_frame() is None  # not TLS: the handshake fails and the connection closes


# -- the exchange, frame by frame (SaslServerAuthenticator's rules)


@pytest.fixture
def sasl_broker(pki: Certificates) -> Iterator[SandboxBroker]:
    with secured(pki, "SASL_PLAINTEXT", sasl_mechanisms=["PLAIN", "SCRAM-SHA-256"]) as broker:
        yield broker


def handshake(client: WireClient, mechanism: str, version: int = 1) -> Any:
    return client.request(SaslHandshakeRequest(mechanism=mechanism), version)


def test_apis_advertise_sasl_and_other_requests_wait_for_authentication(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        versions = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        advertised = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert advertised[17] == (0, 1) and advertised[36] == (0, 2)
        client.send(MetadataRequest(topics=None), 1)  # before authentication: closed, no answer
        assert client.read_frame() is None
    with WireClient(sasl_broker.port) as client:
        client.request(ApiVersionsRequest(), 0)
        client.send(ApiVersionsRequest(), 0)  # only one ApiVersions before the handshake
        assert client.read_frame() is None


def test_plain_over_sasl_authenticate_then_every_api(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        answer = handshake(client, "PLAIN")
        assert (answer.error_code, answer.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-256"])
        done = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2)
        assert (done.error_code, done.error_message, bytes(done.auth_bytes)) == (0, None, b"")
        assert client.request(MetadataRequest(topics=None), 1).brokers[0].port == sasl_broker.port
        # KafkaApis answers SASL requests after authentication, and the connection stays.
        assert handshake(client, "PLAIN").error_code == ILLEGAL_SASL_STATE
        again = client.request(SaslAuthenticateRequest(auth_bytes=b"x"), 1)
        assert (again.error_code, again.error_message) == (
            ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")
        assert client.request(MetadataRequest(topics=None), 1).brokers
    assert [s.principal for s in sasl_broker.sessions()] == ["User:alice"]


def test_plain_after_a_v0_handshake_uses_bare_tokens(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        assert handshake(client, "PLAIN", version=0).error_code == 0
        client.send_raw(frame(b"\0bob\0bob-secret"))
        assert client.read_frame() == b""  # PLAIN's empty challenge, size-prefixed, no header
        assert client.request(MetadataRequest(topics=None), 1).brokers
    with WireClient(sasl_broker.port) as client:
        handshake(client, "PLAIN", version=0)
        client.send_raw(frame(b"\0bob\0nope"))
        assert client.read_frame() is None  # v0 has no way to say why: the connection closes


def test_wrong_plain_password_is_answered_after_the_delay_then_closed(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        handshake(client, "PLAIN")
        started = time.monotonic()
        refused = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0bob-secret"), 1)
        assert time.monotonic() - started >= 0.09  # connection.failed.authentication.delay.ms = 100
        assert (refused.error_code, refused.error_message) == (
            SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")
        assert client.read_frame() is None
    with WireClient(sasl_broker.port) as client:
        handshake(client, "PLAIN")
        other = client.request(SaslAuthenticateRequest(auth_bytes=b"bob\0alice\0alice-secret"), 1)
        assert other.error_message == ("Authentication failed: Client requested an authorization id that is "
                                       "different from username")


def login(client: WireClient, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> Any:
    """SaslHandshake v1, then the tokens of kafka-python's own mechanism classes (kafka/net/sasl/) as
    SaslAuthenticate v2 requests; returns the last SaslAuthenticateResponse."""
    assert handshake(client, mechanism).error_code == 0
    if mechanism == "PLAIN":
        plain = SaslMechanismPlain(sasl_plain_username=user, sasl_plain_password=password)
        return client.request(SaslAuthenticateRequest(auth_bytes=bytes(plain.auth_bytes())), 2)
    scram = ScramClient(user, password, mechanism)
    first = client.request(SaslAuthenticateRequest(auth_bytes=scram.first_message()), 2)
    if first.error_code:
        return first
    scram.process_server_first_message(bytes(first.auth_bytes))
    final = client.request(SaslAuthenticateRequest(auth_bytes=scram.final_message()), 2)
    if not final.error_code:
        scram.process_server_final_message(bytes(final.auth_bytes))  # checks the server's signature
    return final


def test_scram_failures_do_not_say_whether_the_user_exists(sasl_broker: SandboxBroker) -> None:
    generic = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    with WireClient(sasl_broker.port) as client:
        assert login(client, "alice", "alice-secret").error_code == 0
        assert client.request(MetadataRequest(topics=None), 1).brokers
    for user, password in (("alice", "bob-secret"), ("mallory", "alice-secret")):
        with WireClient(sasl_broker.port) as client:
            refused = login(client, user, password)
            assert (refused.error_code, refused.error_message) == (SASL_AUTHENTICATION_FAILED, generic)
            assert client.read_frame() is None


def test_a_mechanism_the_listener_does_not_enable_is_refused(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        refused = handshake(client, "SCRAM-SHA-512")
        assert (refused.error_code, refused.mechanisms) == (UNSUPPORTED_SASL_MECHANISM, ["PLAIN", "SCRAM-SHA-256"])
        assert client.read_frame() is None


def test_only_sasl_authenticate_follows_the_handshake_and_frames_stay_small(sasl_broker: SandboxBroker) -> None:
    with WireClient(sasl_broker.port) as client:
        handshake(client, "PLAIN")
        client.send(MetadataRequest(topics=None), 1)
        assert client.read_frame() is None
    with WireClient(sasl_broker.port) as client:
        client.send_raw(frame(b"\0" * 524_289))  # above sasl.server.max.receive.size
        assert client.read_frame() is None


def test_a_listener_without_sasl_answers_the_handshake_with_illegal_sasl_state(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        assert handshake(client, "PLAIN").error_code == ILLEGAL_SASL_STATE
        assert client.request(MetadataRequest(topics=None), 1).brokers


# -- settings


def test_bad_security_settings_name_the_option(pki: Certificates) -> None:
    context = server_ssl_context(pki.server_cert, pki.server_key)
    for kwargs, message in (
        ({"security_protocol": "TLS"}, "security_protocol must be one of"),
        ({"security_protocol": "SSL"}, "needs ssl_context"),
        ({"ssl_context": context}, "use SSL or SASL_SSL"),
        ({"security_protocol": "SASL_PLAINTEXT"}, "needs sasl_users"),
        ({"sasl_users": USERS}, "use SASL_PLAINTEXT or SASL_SSL"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_users": USERS, "sasl_mechanisms": ["GSSAPI"]}, "sasl_mechanisms"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_users": {"a,b": "x"}}, "sasl_users: user 'a,b'"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            SandboxBroker(**kwargs)
    with pytest.raises(ValueError, match="needs cafile"):
        server_ssl_context(pki.server_cert, pki.server_key, client_auth="required")


COMMAND = [sys.executable, "-m", "kafka_sandbox"]


def test_the_command_serves_sasl_ssl(pki: Certificates, tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("# name=password\nalice=alice-secret\n")
    proc = subprocess.Popen(
        [*COMMAND, "--listen", "127.0.0.1:0", "--security-protocol", "SASL_SSL", "--ssl-cert", str(pki.server_cert),
         "--ssl-key", str(pki.server_key), "--sasl-users-file", str(users), "--sasl-mechanism", "SCRAM-SHA-512"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(30), "no line within 30s"
        line = proc.stdout.readline()
        match = re.search(r"listening on 127\.0\.0\.1:(\d+), .* SASL_SSL \(SASL SCRAM-SHA-512\)", line)
        assert match, line
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{match.group(1)}", security_protocol="SASL_SSL",
                                 ssl_cafile=str(pki.ca_cert), sasl_mechanism="SCRAM-SHA-512",
                                 sasl_plain_username="alice", sasl_plain_password="alice-secret")
        try:
            assert "__consumer_offsets" in admin.list_topics()
        finally:
            admin.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_bad_security_flags_get_one_line(pki: Certificates, tmp_path: Path) -> None:
    for args, message in (
        (["--security-protocol", "SSL"], "needs --ssl-cert/--ssl-key"),
        (["--security-protocol", "SASL_PLAINTEXT"], "needs --sasl-user"),
        (["--ssl-cert", str(pki.server_cert)], "--ssl-cert and --ssl-key go together"),
        (["--ssl-cert", str(pki.server_cert), "--ssl-key", str(tmp_path / "none")], "--ssl-cert/--ssl-key/--ssl-ca:"),
        (["--security-protocol", "SASL_PLAINTEXT", "--sasl-user", "alice"], "want NAME=PASSWORD"),
        (["--sasl-users-file", str(tmp_path / "none")], "--sasl-users-file:"),
    ):
        done = subprocess.run([*COMMAND, "--listen", "127.0.0.1:0", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
