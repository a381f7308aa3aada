"""A resource's `spec.kafka` plus Secrets of its own namespace, resolved into connection settings.

Pure: Secrets come in through `read_secret`, so the handler decides where they are read from (always the
resource's own namespace). Every problem names the field to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from offset_expiry.errors import SpecError

from ..model.connection import ConnectionSettings, Masked, TlsFiles

SecretReader = Callable[[str], Mapping[str, bytes]]  # Secret name -> data; raises LookupError if missing





def connection_from_spec(
    kafka: Mapping[str, Any] | None, read_secret: SecretReader, where: str = "spec.kafka"
) -> ConnectionSettings:
    """Resolve `spec.kafka` with its Secrets. Every problem names the field to fix (prefixed by `where`)."""
    if not kafka:
        raise SpecError(where, "is required (or spec.policyRef)")
    servers = kafka.get("bootstrapServers")
    if not isinstance(servers, str) or not _valid_servers(servers):
        raise SpecError(f"{where}.bootstrapServers", "must be a comma-separated host:port list")
    protocol = kafka.get("securityProtocol") or "PLAINTEXT"
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise SpecError(f"{where}.securityProtocol", f"unknown protocol {protocol!r}")
    sasl = kafka.get("sasl")
    uses_sasl = protocol.startswith("SASL_")
    if sasl and not uses_sasl:
        raise SpecError(f"{where}.securityProtocol", f"is {protocol}, but sasl is set: use SASL_PLAINTEXT or SASL_SSL")
    if uses_sasl and not sasl:
        raise SpecError(f"{where}.sasl", f"is required with securityProtocol {protocol}")
    mechanism = username = password = None
    if sasl:
        mechanism = sasl.get("mechanism")
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise SpecError(f"{where}.sasl.mechanism", f"unknown mechanism {mechanism!r}")
        ref = sasl.get("secretRef") or {}
        user_key = ref.get("usernameKey") or "username"
        pass_key = ref.get("passwordKey") or "password"
        data = _secret(ref, read_secret, f"{where}.sasl.secretRef")
        username = _key(data, user_key, f"{where}.sasl.secretRef.usernameKey", ref).decode()
        password = Masked(_key(data, pass_key, f"{where}.sasl.secretRef.passwordKey", ref).decode())
    tls = None
    tls_spec = kafka.get("tls") or {}
    if tls_spec and protocol not in ("SSL", "SASL_SSL"):
        raise SpecError(f"{where}.securityProtocol", f"is {protocol}, but tls is set: use SSL or SASL_SSL")
    if protocol in ("SSL", "SASL_SSL"):
        ca = cert = key = None
        if ca_ref := tls_spec.get("caSecretRef"):
            data = _secret(ca_ref, read_secret, f"{where}.tls.caSecretRef")
            ca = _key(data, ca_ref.get("key") or "ca.crt", f"{where}.tls.caSecretRef.key", ca_ref)
        if cert_ref := tls_spec.get("certSecretRef"):
            data = _secret(cert_ref, read_secret, f"{where}.tls.certSecretRef")
            cert = _key(data, cert_ref.get("certKey") or "tls.crt", f"{where}.tls.certSecretRef.certKey", cert_ref)
            key = _key(data, cert_ref.get("keyKey") or "tls.key", f"{where}.tls.certSecretRef.keyKey", cert_ref)
        tls = TlsFiles(ca, cert, key)
    return ConnectionSettings(servers, protocol, mechanism, username, password, tls)


def _valid_servers(servers: str) -> bool:
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return False
    return True


def _secret(ref: Mapping[str, Any], read_secret: SecretReader, where: str) -> Mapping[str, bytes]:
    name = ref.get("name")
    if not name:
        raise SpecError(f"{where}.name", "is required")
    try:
        return read_secret(name)
    except LookupError:
        raise SpecError(where, f"Secret {name!r} not found in the resource's namespace", "SecretNotFound") from None


def _key(data: Mapping[str, bytes], key: str, where: str, ref: Mapping[str, Any]) -> bytes:
    if key not in data:
        raise SpecError(where, f"Secret {ref.get('name')!r} has no key {key!r}", "SecretNotFound")
    return data[key]
