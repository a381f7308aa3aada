"""The listener's security settings: its protocol, TLS context and SASL users, checked once at start.

Kafka configures one security protocol per listener (`listener.security.protocol.map`); the sandbox has one
listener, so one protocol. TLS is Python's `ssl` on the asyncio server; SASL is in `sasl.py`. SCRAM users
are stored as Kafka stores them (`ScramFormatter.generateCredential`: salt, iterations, StoredKey and
ServerKey, never the password); PLAIN needs the passwords themselves, as Kafka's JAAS `user_<name>` entries
hold them (`PlainServerCallbackHandler`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_ITERATIONS = 4096  # ScramMechanism.minIterations, and kafka-configs' default
# ssl.client.auth (BrokerSecurityConfigs.SSL_CLIENT_AUTH_CONFIG) and what it means for Python's ssl
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class ScramCredential:
    """One user's credential for one SCRAM mechanism (Kafka's ScramCredential)."""

    salt: bytes
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)


def scram_credential(
    password: str, mechanism: str, *, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS
) -> ScramCredential:
    """RFC 5802 section 3 (ScramFormatter.generateCredential): SaltedPassword = Hi(password, salt, i),
    StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")."""
    name = SCRAM_HASHES[mechanism]
    salt = os.urandom(24) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", name)
    return ScramCredential(
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(name, client_key).digest(),
        server_key=hmac.digest(salted, b"Server Key", name),
    )


@dataclass(frozen=True)
class ListenerSecurity:
    """How clients must connect: `protocol` is Kafka's security protocol name. `ssl_context` (a server-side
    context, e.g. from `server_ssl_context`) is required for SSL and SASL_SSL; `users` (name -> password)
    for SASL_PLAINTEXT and SASL_SSL, with `mechanisms` enabled (sasl.enabled.mechanisms; default all three)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    _plain: Mapping[str, str] = field(default_factory=dict, repr=False)
    _scram: Mapping[tuple[str, str], ScramCredential] = field(default_factory=dict, repr=False)

    @classmethod
    def create(
        cls,
        security_protocol: str = "PLAINTEXT",
        *,
        ssl_context: ssl.SSLContext | None = None,
        sasl_users: Mapping[str, str] | None = None,
        sasl_mechanisms: Iterable[str] | None = None,
    ) -> ListenerSecurity:
        """Check the options together and derive the SCRAM credentials. Every error names the option."""
        if security_protocol not in PROTOCOLS:
            raise ValueError(
                f"security_protocol must be one of {', '.join(PROTOCOLS)}, got {security_protocol!r}"
            )
        tls = security_protocol in ("SSL", "SASL_SSL")
        sasl = security_protocol.startswith("SASL_")
        if tls and ssl_context is None:
            raise ValueError(
                f"security_protocol {security_protocol} needs ssl_context (see server_ssl_context)"
            )
        if not tls and ssl_context is not None:
            raise ValueError(
                f"ssl_context is set, but security_protocol is {security_protocol}: use SSL or SASL_SSL"
            )
        if ssl_context is not None and ssl_context.protocol != ssl.PROTOCOL_TLS_SERVER:
            raise ValueError("ssl_context must be a server context (ssl.PROTOCOL_TLS_SERVER)")
        if not sasl and (sasl_users or sasl_mechanisms):
            raise ValueError(
                f"sasl_users/sasl_mechanisms are set, but security_protocol is {security_protocol}: "
                "use SASL_PLAINTEXT or SASL_SSL"
            )
        if not sasl:
            return cls(security_protocol, ssl_context)
        if not sasl_users:
            raise ValueError(
                f"security_protocol {security_protocol} needs sasl_users, e.g. {{'alice': 'secret'}}"
            )
        mechanisms = tuple(dict.fromkeys(MECHANISMS if sasl_mechanisms is None else sasl_mechanisms))
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(
                f"sasl_mechanisms must be some of {', '.join(MECHANISMS)}, got {list(mechanisms)}"
            )
        for user, password in sasl_users.items():
            if not user or "," in user or "=" in user or not isinstance(password, str) or not password:
                raise ValueError(
                    f"sasl_users: user {user!r} needs a name without ',' or '=' and a non-empty password"
                )
        scram = {
            (user, mechanism): scram_credential(password, mechanism)
            for user, password in sasl_users.items()
            for mechanism in mechanisms
            if mechanism in SCRAM_HASHES
        }
        plain = dict(sasl_users) if "PLAIN" in mechanisms else {}
        return cls(
            security_protocol, ssl_context, mechanisms, MappingProxyType(plain), MappingProxyType(scram)
        )

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def plain_password(self, user: str) -> str | None:
        return self._plain.get(user)

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._scram.get((user, mechanism))


def server_ssl_context(
    certfile: str | os.PathLike[str],
    keyfile: str | os.PathLike[str],
    cafile: str | os.PathLike[str] | None = None,
    client_auth: str = "none",
) -> ssl.SSLContext:
    """A server context from PEM files, as Kafka's ssl.keystore/ssl.truststore settings would give:
    TLS 1.2 or later, and `client_auth` as ssl.client.auth (none | requested | required; the client's
    certificate is then checked against `cafile`)."""
    if client_auth not in CLIENT_AUTH:
        raise ValueError(f"client_auth must be one of {', '.join(CLIENT_AUTH)}, got {client_auth!r}")
    if client_auth != "none" and cafile is None:
        raise ValueError(f"client_auth {client_auth!r} needs cafile to check client certificates against")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, keyfile)
    if cafile is not None:
        context.load_verify_locations(cafile)
    context.verify_mode = CLIENT_AUTH[client_auth]
    return context
