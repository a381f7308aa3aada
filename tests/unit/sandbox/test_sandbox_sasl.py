"""The sandbox's SASL mechanisms against the RFCs' own examples and Kafka's message rules, without sockets."""

from __future__ import annotations

import base64

import pytest

from kafka_sandbox import sasl
from kafka_sandbox.sasl import PlainServer, SaslFailure, ScramServer
from kafka_sandbox.security import ListenerSecurity, scram_credential

# RFC 7677 section 3: user "user", password "pencil"
RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC7677_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def listener(**users: str) -> ListenerSecurity:
    return ListenerSecurity.create("SASL_PLAINTEXT", sasl_users=users or {"user": "pencil"})


def test_scram_sha_256_reproduces_rfc_7677(monkeypatch: pytest.MonkeyPatch) -> None:
    credential = scram_credential("pencil", "SCRAM-SHA-256", salt=RFC7677_SALT, iterations=4096)
    security = ListenerSecurity("SASL_PLAINTEXT", None, ("SCRAM-SHA-256",), {}, {("user", "SCRAM-SHA-256"): credential})
    monkeypatch.setattr(sasl, "server_nonce", lambda: RFC7677_SERVER_NONCE)
    server = ScramServer(security, "SCRAM-SHA-256")
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert (server.complete, server.principal) == (True, "user")


@pytest.mark.parametrize("message", [
    b"y,,n=user,r=abc",  # channel binding: only gs2-header "n" (ScramMessages.ClientFirstMessage)
    b"n,,n=us,er,r=abc",
    b"n,,n=user",
    b"n,,n=us=er,r=abc",  # '=' only as =2C or =3D (ScramFormatter.username)
])
def test_malformed_client_first_messages_fail_with_the_generic_message(message: bytes) -> None:
    with pytest.raises(SaslFailure) as failed:
        ScramServer(listener(), "SCRAM-SHA-256").evaluate(message)
    assert failed.value.client_message is None


def test_user_names_with_separators_are_refused_and_so_is_a_different_authzid() -> None:
    with pytest.raises(ValueError, match="sasl_users"):
        listener(**{"a=b": "pw"})
    refused = ScramServer(listener(), "SCRAM-SHA-256")
    with pytest.raises(SaslFailure) as failed:
        refused.evaluate(b"n,a=admin,n=user,r=abc")
    assert failed.value.client_message == (
        "Authentication failed: Client requested an authorization id that is different from username")


def test_a_replayed_or_altered_final_message_fails() -> None:
    server = ScramServer(listener(), "SCRAM-SHA-256")
    server.evaluate(b"n,,n=user,r=abc")
    with pytest.raises(SaslFailure, match="nonce"):
        server.evaluate(b"c=biws,r=abcWRONG,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert not server.complete


@pytest.mark.parametrize(("token", "client_message"), [
    (b"\0user\0pencil", None),  # accepted
    (b"user\0user\0pencil", None),  # authzid = username is fine
    (b"\0user\0pencil\0extra", None),  # PlainSaslServer.split ignores a fourth part
    (b"\0user\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0pencil", "Authentication failed: Invalid username or password"),
    (b"\0\0pencil", "generic"),  # username not specified: a SaslException
    (b"\0user", "generic"),
    (b"admin\0user\0pencil", "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_plain_follows_plain_sasl_server(token: bytes, client_message: str | None) -> None:
    server = PlainServer(listener())
    if client_message is None:
        assert server.evaluate(token) == b"" and server.principal == "user"
        return
    with pytest.raises(SaslFailure) as failed:
        server.evaluate(token)
    assert failed.value.client_message == (None if client_message == "generic" else client_message)
    assert not server.complete


def test_scram_users_are_stored_as_kafka_stores_them() -> None:
    security = listener(alice="alice-secret")
    credential = security.scram_credential("alice", "SCRAM-SHA-512")
    assert credential is not None and credential.iterations == 4096 and len(credential.stored_key) == 64
    assert "alice-secret" not in repr(security)
