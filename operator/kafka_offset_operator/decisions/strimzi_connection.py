"""`spec.kafka.strimzi`: a Strimzi `Kafka` cluster (and optionally a `KafkaUser`) named instead of raw
addresses, resolved into connection settings the way Strimzi's own clients are configured:

- bootstrap servers: the named listener's `bootstrapServers` in the Kafka's `status.listeners`;
- TLS: when the listener has `tls: true` in `spec.kafka.listeners`, trusting the cluster CA from the
  Secret `<cluster>-cluster-ca-cert` (key `ca.crt`), which the Cluster Operator writes;
- authentication, from the listener's `authentication.type`: `scram-sha-512` uses the KafkaUser's user name
  (`status.username`) and the `password` key of its Secret (`status.secret`); `tls` uses its `user.crt` and
  `user.key`; none needs no user.

Pure: the Kafka and KafkaUser come in through `read_resource`, Secrets through `read_secret`, both from the
resource's own namespace (the operator never reads another namespace's Secrets, docs/safety.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_offsets_model.errors import SpecError

from ..model.connection import ConnectionSettings, Masked, SecretKey, SecretSources, TlsFiles
from ..model.reasons import Reason

ResourceReader = Callable[[str, str], Mapping[str, Any]]  # (plural, name) -> object; raises LookupError if missing
SecretReader = Callable[[str], Mapping[str, bytes]]

KAFKAS = "kafkas"
KAFKA_USERS = "kafkausers"
SUPPORTED_AUTHENTICATION = ("scram-sha-512", "tls")


def strimzi_connection(
    ref: Mapping[str, Any], read_resource: ResourceReader, read_secret: SecretReader, where: str
) -> ConnectionSettings:
    """Settings for the listener `ref["listener"]` (the Kafka's first listener when unset) of the Kafka
    `ref["kafka"]`, as the KafkaUser `ref["user"]` when the listener authenticates."""
    cluster_name: str = ref["kafka"]
    cluster = _resource(read_resource, KAFKAS, cluster_name, f"{where}.kafka", "Kafka")
    listener_status, listener_spec = _listener(cluster, ref.get("listener"), where)
    servers = listener_status.get("bootstrapServers")
    if not servers:
        raise SpecError(f"{where}.listener", f"Kafka {cluster_name!r} reports no bootstrapServers for listener "
                        f"{listener_status.get('name')!r} yet", Reason.STRIMZI_NOT_READY)
    tls = bool(listener_spec.get("tls"))
    auth = (listener_spec.get("authentication") or {}).get("type")
    if auth is not None and auth not in SUPPORTED_AUTHENTICATION:
        raise SpecError(f"{where}.listener", f"listener {listener_spec.get('name')!r} uses authentication {auth!r}; "
                        f"the operator supports {', '.join(SUPPORTED_AUTHENTICATION)} or none")
    sources: dict[str, SecretKey] = {}
    ca = cert = key = None
    if tls:
        ca_secret = f"{cluster_name}-cluster-ca-cert"
        ca = _key(_secret(read_secret, ca_secret, f"{where}.kafka"), ca_secret, "ca.crt", f"{where}.kafka")
        sources["ca"] = SecretKey(f"{where}.kafka", ca_secret, "ca.crt")
    mechanism = username = password = None
    if auth is not None:
        user_field = f"{where}.user"
        if not ref.get("user"):
            raise SpecError(user_field, f"is required: listener {listener_spec.get('name')!r} authenticates "
                            f"with {auth}")
        user = _resource(read_resource, KAFKA_USERS, ref["user"], user_field, "KafkaUser")
        user_status = user.get("status") or {}
        user_auth = ((user.get("spec") or {}).get("authentication") or {}).get("type")
        if user_auth != auth:
            raise SpecError(user_field, f"KafkaUser {ref['user']!r} authenticates with {user_auth!r}, but listener "
                            f"{listener_spec.get('name')!r} expects {auth!r}")
        secret_name = user_status.get("secret")
        if not secret_name:
            raise SpecError(user_field, f"KafkaUser {ref['user']!r} has no Secret yet (status.secret)",
                            Reason.STRIMZI_NOT_READY)
        data = _secret(read_secret, secret_name, user_field)
        if auth == "scram-sha-512":
            mechanism, username = "SCRAM-SHA-512", str(user_status.get("username") or ref["user"])
            try:
                password = Masked(_key(data, secret_name, "password", user_field).decode())
            except UnicodeDecodeError:
                raise SpecError(user_field, f"Secret {secret_name!r} key 'password' is not UTF-8 text") from None
            sources["password"] = SecretKey(user_field, secret_name, "password")
        else:
            cert = _key(data, secret_name, "user.crt", user_field)
            key = _key(data, secret_name, "user.key", user_field)
            sources["cert"] = SecretKey(user_field, secret_name, "user.crt")
            sources["key"] = SecretKey(user_field, secret_name, "user.key")
    protocol = ("SASL_SSL" if tls else "SASL_PLAINTEXT") if mechanism else ("SSL" if tls else "PLAINTEXT")
    return ConnectionSettings(servers, protocol, mechanism, username, password,
                              TlsFiles(ca, cert, key) if tls else None, SecretSources(**sources))


def _listener(cluster: Mapping[str, Any], name: str | None, where: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The listener's status entry and its spec (Strimzi keeps both by name)."""
    cluster_name = cluster.get("metadata", {}).get("name")
    reported = (cluster.get("status") or {}).get("listeners") or []
    if not reported:
        raise SpecError(f"{where}.kafka", f"Kafka {cluster_name!r} reports no listeners yet (status.listeners)",
                        Reason.STRIMZI_NOT_READY)
    if name is None:
        chosen = reported[0]
    else:
        chosen = next((entry for entry in reported if entry.get("name") == name), None)
        if chosen is None:
            names = ", ".join(repr(entry.get("name")) for entry in reported)
            raise SpecError(f"{where}.listener", f"Kafka {cluster_name!r} has no listener {name!r} (it has {names})")
    declared = ((cluster.get("spec") or {}).get("kafka") or {}).get("listeners") or []
    spec = next((entry for entry in declared if entry.get("name") == chosen.get("name")), {"name": chosen.get("name")})
    return chosen, spec


def _resource(read: ResourceReader, plural: str, name: str, where: str, kind: str) -> Mapping[str, Any]:
    try:
        return read(plural, name)
    except LookupError:
        raise SpecError(where, f"{kind} {name!r} not found in the resource's namespace", Reason.STRIMZI_NOT_READY) from None


def _secret(read: SecretReader, name: str, where: str) -> Mapping[str, bytes]:
    try:
        return read(name)
    except LookupError:
        raise SpecError(where, f"Secret {name!r} not found in the resource's namespace", Reason.SECRET_NOT_FOUND) from None


def _key(data: Mapping[str, bytes], secret: str, key: str, where: str) -> bytes:
    if key not in data:
        raise SpecError(where, f"Secret {secret!r} has no key {key!r}", Reason.SECRET_NOT_FOUND)
    return data[key]
