"""A resource's `spec.kafka` plus Secrets of its own namespace, resolved into connection settings.

Pure: Secrets come in through `read_secret`, so the handler decides where they are read from (always the
resource's own namespace). `spec.kafka` is checked against the CRDs' schema of it (model/crds.py); kept here
is what a schema cannot say: ports in range, SASL and TLS settings that fit the security protocol, and the
Secrets. The value is parsed into model/kinds/common.py's KafkaConnection, the typed source of that schema.
Every problem names the field to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.openapi import SchemaCheck, without_cel_rules
from kafka_offsets_model.typed_schema import parse

from ..model.connection import ConnectionSettings, Masked, SecretKey, SecretSources, TlsFiles
from ..model.kinds.common import KAFKA_CONNECTION, KafkaConnection, Tls
from ..model.reasons import Reason
from .strimzi_connection import ResourceReader, strimzi_connection

SecretReader = Callable[[str], Mapping[str, bytes]]  # Secret name -> data; raises LookupError if missing

_KAFKA = SchemaCheck(without_cel_rules(KAFKA_CONNECTION))  # its CEL rules' twins: _from_strimzi and below
_SASL = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS = ("SSL", "SASL_SSL")


def connection_from_spec(
    kafka: Mapping[str, Any] | None,
    read_secret: SecretReader,
    where: str = "spec.kafka",
    read_resource: ResourceReader | None = None,
) -> ConnectionSettings:
    """Resolve `spec.kafka` with its Secrets (and, for `strimzi`, the Kafka and KafkaUser `read_resource`
    reads). Every problem names the field to fix (prefixed by `where`)."""
    if kafka is None:
        raise SpecError(where, "is required (or spec.policyRef)")
    checked = _KAFKA.check(kafka, where)
    spec = parse(KafkaConnection, checked)
    if spec.strimzi is not None:
        return _from_strimzi(spec, checked["strimzi"], read_secret, read_resource, where)
    servers = spec.bootstrap_servers
    if servers is None:
        raise SpecError(f"{where}.bootstrapServers", "is required (or strimzi)")
    if not all(0 < int(server.rpartition(":")[2]) < 65536 for server in servers.split(",")):
        raise SpecError(f"{where}.bootstrapServers", f"{servers!r} has a port outside 1-65535")
    protocol = spec.security_protocol
    sasl = spec.sasl
    if sasl and protocol not in _SASL:
        raise SpecError(f"{where}.securityProtocol", f"is {protocol}, but sasl is set: use SASL_PLAINTEXT or SASL_SSL")
    if protocol in _SASL and not sasl:
        raise SpecError(f"{where}.sasl", f"is required with securityProtocol {protocol}")
    mechanism = username = password = None
    sources: dict[str, SecretKey] = {}
    if sasl:
        mechanism = sasl.mechanism
        ref = sasl.secret_ref
        data = _secret(ref.name, read_secret, f"{where}.sasl.secretRef")
        username_field = f"{where}.sasl.secretRef.usernameKey"
        username = _text(_key(data, ref.username_key, username_field, ref.name), username_field, ref.name)
        sources["username"] = SecretKey(username_field, ref.name, ref.username_key)
        password_field = f"{where}.sasl.secretRef.passwordKey"
        password = Masked(_text(_key(data, ref.password_key, password_field, ref.name), password_field, ref.name))
        sources["password"] = SecretKey(password_field, ref.name, ref.password_key)
    tls = None
    tls_spec = spec.tls or Tls()
    if tls_spec != Tls() and protocol not in _TLS:
        raise SpecError(f"{where}.securityProtocol", f"is {protocol}, but tls is set: use SSL or SASL_SSL")
    if protocol in _TLS:
        ca = cert = key = None
        if (ca_ref := tls_spec.ca_secret_ref) is not None:
            data = _secret(ca_ref.name, read_secret, f"{where}.tls.caSecretRef")
            ca_field = f"{where}.tls.caSecretRef.key"
            ca = _key(data, ca_ref.key, ca_field, ca_ref.name)
            sources["ca"] = SecretKey(ca_field, ca_ref.name, ca_ref.key)
        if (cert_ref := tls_spec.cert_secret_ref) is not None:
            data = _secret(cert_ref.name, read_secret, f"{where}.tls.certSecretRef")
            cert_field, key_field = f"{where}.tls.certSecretRef.certKey", f"{where}.tls.certSecretRef.keyKey"
            cert = _key(data, cert_ref.cert_key, cert_field, cert_ref.name)
            key = _key(data, cert_ref.key_key, key_field, cert_ref.name)
            sources["cert"] = SecretKey(cert_field, cert_ref.name, cert_ref.cert_key)
            sources["key"] = SecretKey(key_field, cert_ref.name, cert_ref.key_key)
        tls = TlsFiles(ca, cert, key)
    return ConnectionSettings(servers, protocol, mechanism, username, password, tls, SecretSources(**sources))


def _from_strimzi(spec: KafkaConnection, strimzi: Mapping[str, Any], read_secret: SecretReader,
                  read_resource: ResourceReader | None, where: str) -> ConnectionSettings:
    """The API server refuses strimzi next to bootstrapServers, sasl or tls (CEL); an older CRD would not."""
    for other, value in (("bootstrapServers", spec.bootstrap_servers), ("sasl", spec.sasl), ("tls", spec.tls)):
        if value is not None:
            raise SpecError(f"{where}.{other}", "cannot be set with strimzi: the Strimzi listener and KafkaUser give it")
    if spec.security_protocol != "PLAINTEXT":  # PLAINTEXT is the schema's default
        raise SpecError(f"{where}.securityProtocol", "is derived from the Strimzi listener with strimzi: remove it")
    if read_resource is None:
        raise SpecError(f"{where}.strimzi", "is not supported here: name the brokers with bootstrapServers")
    return strimzi_connection(strimzi, read_resource, read_secret, f"{where}.strimzi")


def _secret(name: str, read_secret: SecretReader, where: str) -> Mapping[str, bytes]:
    try:
        return read_secret(name)
    except LookupError:
        raise SpecError(where, f"Secret {name!r} not found in the resource's namespace", Reason.SECRET_NOT_FOUND) from None


def _key(data: Mapping[str, bytes], key: str, where: str, secret: str) -> bytes:
    if key not in data:
        raise SpecError(where, f"Secret {secret!r} has no key {key!r}", Reason.SECRET_NOT_FOUND)
    return data[key]


def _text(value: bytes, where: str, secret: str) -> str:
    """SASL user names and passwords are text (Kafka sends them as UTF-8); the bytes are never shown."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise SpecError(where, f"the value in Secret {secret!r} is not UTF-8 text") from None
