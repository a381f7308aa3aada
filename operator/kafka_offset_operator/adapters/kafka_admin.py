"""The one module through which the operator talks to Kafka, on kafka-python's KafkaAdminClient.

It gives the reconcilers Kafka's answers as plain values (model/offsets.py) with Kafka's error NAMES
(`GROUP_SUBSCRIBED_TO_TOPIC`, `GROUP_ID_NOT_FOUND`, ...), so the decision functions never see kafka-python.

Secrets: the password is held in a `Masked` string whose repr/str are asterisks, so kafka-python's own
DEBUG log of its configuration (KafkaAdminClient.__init__) cannot print it; TLS material is written to a
private 0700 directory as 0600 files and removed on close. No message built here contains a secret.

Connecting: a refused login or an untrusted certificate ends the connection attempt at once, with a message
naming the Secret and key the refused value came from (`_FailFastManager`, `_connect_failure`).
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

import kafka.errors as kerrors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, OffsetSpec, OffsetTimestamp
from kafka.net.compat import KafkaNetClient
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer import IsolationLevel
from kafka.structs import OffsetAndMetadata

from kafka_offsets_model.kafka_messages import ConsumerGroupDescribeRequest, StreamsGroupDescribeRequest

from ..model.connection import ConnectionSettings, TlsFiles
from ..model.offsets import (
    CLIENT_ERROR,
    CONNECTION_FAILED,
    SSL_HANDSHAKE_FAILED,
    TP,
    Committed,
    GroupInfo,
    KafkaFailure,
    LogRange,
    Member,
    ModernGroup,
    ModernMember,
    group_busy,
)

# ListOffsets' answer for a timestamp no record reaches (ListOffsetsResponse.UNKNOWN_OFFSET).
UNKNOWN_OFFSET = -1

# -- errors


def error_name(error: type[BaseException] | BaseException) -> str:
    """Kafka's name for an error class or instance (e.g. GROUP_SUBSCRIBED_TO_TOPIC)."""
    cls = error if isinstance(error, type) else type(error)
    message = getattr(cls, "message", None)
    if issubclass(cls, kerrors.BrokerResponseError) and isinstance(message, str):
        return message
    if issubclass(cls, (kerrors.KafkaConnectionError, kerrors.KafkaTimeoutError)):
        return CONNECTION_FAILED
    return CLIENT_ERROR


# kafka-python calls it retriable (a client's metadata may lag behind a new topic); from a coordinator
# answering an admin request it is final: the topic is not there.
_FINAL = frozenset({"UNKNOWN_TOPIC_OR_PARTITION"})


def retry_later(error: type[BaseException] | BaseException) -> bool:
    """The operator's one answer to "is this worth another try later?": kafka-python's own `retriable`
    flag of the error class (its error table), plus a busy group (model.offsets.BUSY_GROUP) and a failed
    connection, minus UNKNOWN_TOPIC_OR_PARTITION (final here, see _FINAL)."""
    name = error_name(error)
    if group_busy(name) or name == CONNECTION_FAILED:
        return True
    return bool(getattr(error, "retriable", False)) and name not in _FINAL


def _failure(exc: BaseException) -> KafkaFailure:
    name = error_name(exc)
    retriable = retry_later(exc)
    if isinstance(exc, kerrors.BrokerResponseError):
        text = getattr(type(exc), "description", None) or name
    elif name == CONNECTION_FAILED:
        text = "cannot reach the Kafka brokers"
    else:
        text = type(exc).__name__
    return KafkaFailure(name, str(text), retriable)


def kafka_failure(exc: BaseException) -> KafkaFailure:
    """A kafka-python error as a KafkaFailure (Kafka's error name, retry_later's verdict)."""
    return _failure(exc)


# -- connecting


# What Kafka's Java clients treat as fatal at connect time (AuthenticationException and its subclasses:
# SaslAuthenticationException, UnsupportedSaslMechanismException, IllegalSaslStateException,
# SslAuthenticationException): no point trying again with the same credentials.
_FATAL_AT_CONNECT = (
    kerrors.SaslAuthenticationFailedError,
    kerrors.UnsupportedSaslMechanismError,
    kerrors.IllegalSaslStateError,
)


def _ssl_cause(exc: BaseException | None) -> ssl.SSLError | None:
    """The TLS error behind a kafka-python connection error, if any: its cause or context (a failed
    handshake: KafkaConnectionError('Handshake failed: ...')) or its argument (a TLS alert read later, e.g. a
    refused client certificate under TLS 1.3: KafkaConnectionError(SSLError))."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLError):
            return exc
        inner = next((a for a in exc.args if isinstance(a, BaseException)), None)
        exc = exc.__cause__ or exc.__context__ or inner
    return None


class _ClosedDuringLogin(Exception):
    """The broker closed the connection in the middle of the SASL exchange, which Kafka does right after it
    answers a refused login (SASL_AUTHENTICATION_FAILED) or an unknown mechanism. kafka-python 3.0.12 often
    loses that answer: it drops data read together with the close (kafka/net/transport.py, _sock_recv)."""


class _FailFastManager(KafkaConnectionManager):  # type: ignore[misc]
    """kafka-python's connection manager, except that a connection refused for its credentials or its TLS
    handshake ends the bootstrap at once (kafka-python retries those until bootstrap_timeout_ms and then
    reports only a timeout; Kafka's Java clients give up at the first AuthenticationException). The failure
    is kept in `fatal` for the error message."""

    fatal: BaseException | None = None

    async def _connect(self, node: Any, conn: Any, *args: Any, **kwargs: Any) -> None:
        await super()._connect(node, conn, *args, **kwargs)
        future = conn.init_future
        if not (future.is_done and future.failed()):
            return
        error = future.exception
        answered = conn.broker_version_data is not None  # ApiVersions went through: TLS was fine
        if isinstance(error, _FATAL_AT_CONNECT) or (not answered and _ssl_cause(error) is not None):
            self.fatal = error
        elif answered and self.config["security_protocol"].startswith("SASL_") and isinstance(
                error, kerrors.KafkaConnectionError):
            self.fatal = _ClosedDuringLogin(str(error))
        else:
            return
        self.close()  # the bootstrap loop stops at its next turn


class _ClientFactory:
    """KafkaAdminClient's `kafka_client` option: builds kafka-python's own client on a _FailFastManager and
    remembers it, so a failed start can be cleaned up (KafkaAdminClient has started its IO thread by then)."""

    def __init__(self) -> None:
        self.net: NetworkSelector | None = None
        self.client: KafkaNetClient | None = None
        self.manager: _FailFastManager | None = None

    def __call__(self, **configs: Any) -> KafkaNetClient:
        self.net = NetworkSelector(**configs)
        self.manager = _FailFastManager(self.net, **configs)
        self.client = KafkaNetClient(net=self.net, manager=self.manager, **configs)
        return self.client

    def close(self) -> None:
        """What KafkaAdminClient.close does: close the connections, then stop the IO thread."""
        if self.client is not None:
            self.client.close()
        if self.net is not None:
            self.net.stop()


def _connect_failure(exc: BaseException, fatal: BaseException | None, settings: ConnectionSettings) -> KafkaFailure:
    """Why connecting failed, naming the setting (and the Secret and key it came from) to fix. Permanent
    failures (a refused login, an untrusted certificate) are not retriable: they stay until something changes."""
    sources = settings.sources
    where = f"the password in {sources.password}" if sources.password else "the configured password"
    tls_error = _ssl_cause(fatal)
    if isinstance(fatal, kerrors.SaslAuthenticationFailedError):
        said = str(fatal.args[0] if fatal.args else "").removeprefix("SaslAuthenticationFailedError: ")
        text = (f"Kafka refused the SASL/{settings.sasl_mechanism} login of user {settings.username!r} with {where}"
                f"{': ' + said if said else ''}. This lasts until {settings.names.credentials} or the Kafka user changes")
        return KafkaFailure(error_name(fatal), settings.redact(text), False)
    if isinstance(fatal, _ClosedDuringLogin):
        text = (f"Kafka closed the connection during the SASL/{settings.sasl_mechanism} login of user "
                f"{settings.username!r} with {where}, as it does when it refuses the credentials (or does not "
                f"enable that mechanism: {settings.names.mechanism}); its answer was lost with the connection. "
                f"This lasts until {settings.names.credentials} or the Kafka user changes")
        return KafkaFailure("SASL_AUTHENTICATION_FAILED", settings.redact(text), False)
    if isinstance(fatal, kerrors.UnsupportedSaslMechanismError):
        return KafkaFailure(error_name(fatal), f"the brokers do not enable SASL mechanism {settings.sasl_mechanism} "
                            f"({settings.names.mechanism})", False)
    if isinstance(fatal, kerrors.IllegalSaslStateError):
        return KafkaFailure(error_name(fatal), f"the listener at {settings.bootstrap_servers} does not take SASL "
                            f"({settings.names.protocol} is {settings.security_protocol})", False)
    if tls_error is not None:
        return KafkaFailure(SSL_HANDSHAKE_FAILED, _tls_problem(tls_error, settings), False)
    return _failure(exc)


def _tls_problem(error: ssl.SSLError, settings: ConnectionSettings) -> str:
    sources = settings.sources
    reason = getattr(error, "verify_message", None) or error.reason or str(error)
    servers = settings.bootstrap_servers
    if isinstance(error, ssl.SSLCertVerificationError):
        if error.verify_code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            return f"the certificate of {servers} does not name that host: {reason}"
        trust = f"the CA in {sources.ca}" if sources.ca else f"the system's CAs ({settings.names.ca} is not set)"
        return f"the certificate of {servers} is not trusted by {trust}: {reason}"
    if "ALERT" in str(error.reason or "") and sources.cert:
        return f"the broker at {servers} refused the client certificate in {sources.cert}: {reason}"
    if error.reason == "WRONG_VERSION_NUMBER" or isinstance(error, ssl.SSLEOFError):
        return (f"{servers} does not complete a TLS handshake ({reason}): does it take "
                f"{settings.names.protocol} {settings.security_protocol}?")
    return f"TLS handshake with {servers} failed: {reason}"


# -- the client


def write_private_files(tls: TlsFiles) -> tuple[str, dict[str, str]]:
    """TLS material as files for kafka-python: a fresh 0700 directory of 0600 files. Returns the directory
    (the caller removes it) and kafka-python's ssl_* options pointing into it."""
    tmpdir = tempfile.mkdtemp(prefix="koo-tls-")  # mkdtemp creates it 0700
    out: dict[str, str] = {}
    for option, content in (("ssl_cafile", tls.ca), ("ssl_certfile", tls.cert), ("ssl_keyfile", tls.key)):
        if content is None:
            continue
        path = os.path.join(tmpdir, option.removeprefix("ssl_") + ".pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        out[option] = path
    return tmpdir, out


def remove_private_files(tmpdir: str | None) -> None:
    """The other half of write_private_files (None: there were none)."""
    if tmpdir is not None:
        shutil.rmtree(tmpdir, ignore_errors=True)


def security_config(settings: ConnectionSettings) -> tuple[dict[str, Any], str | None]:
    """kafka-python's security settings for `settings` (the password stays Masked: kafka-python's DEBUG log
    of its configuration shows asterisks), and the private directory of the TLS files (None without TLS;
    the caller removes it)."""
    config: dict[str, Any] = {"security_protocol": settings.security_protocol}
    if settings.sasl_mechanism:
        config.update(sasl_mechanism=settings.sasl_mechanism, sasl_plain_username=settings.username,
                      sasl_plain_password=settings.password)
    if settings.tls is None:
        return config, None
    tmpdir, files = write_private_files(settings.tls)
    config.update(files, ssl_check_hostname=settings.check_hostname)
    return config, tmpdir


class KafkaAdmin:
    """A connected admin client for one reconcile step; use as a context manager.

    Connection failures and whole-request errors raise KafkaFailure; per-partition errors come back as
    {(topic, partition): error name or None}.
    """

    def __init__(self, settings: ConnectionSettings, timeout_ms: int = 10_000, client_id: str = "kafka-offset-operator") -> None:
        self.settings = settings
        security, self._tmpdir = security_config(settings)
        config: dict[str, Any] = {
            "bootstrap_servers": settings.bootstrap_servers.split(","),
            "client_id": client_id,
            "request_timeout_ms": timeout_ms,
            "bootstrap_timeout_ms": timeout_ms,
            **security,
        }
        factory = _ClientFactory()
        try:
            self._client = KafkaAdminClient(**config, kafka_client=factory)
        except Exception as exc:
            factory.close()  # KafkaAdminClient started an IO thread before it failed
            self._cleanup()
            raise _connect_failure(exc, factory.manager.fatal if factory.manager else None, settings) from None

    def _cleanup(self) -> None:
        remove_private_files(self._tmpdir)
        self._tmpdir = None

    def close(self) -> None:
        try:
            self._client.close()
        finally:
            self._cleanup()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise _failure(exc) from None

    # -- the cluster

    def cluster_id(self) -> str | None:
        """The cluster's id from Metadata: what a backup records, and what a restore checks it reaches."""
        described = self._call(self._client.describe_cluster)
        return str(described.get("cluster_id") or "") or None

    def topic_names(self) -> frozenset[str]:
        """The topics the cluster has now (Metadata): what tells an offset of a deleted topic."""
        return frozenset(self._call(self._client.list_topics))

    # -- groups

    def describe_group(self, group: str) -> GroupInfo:
        raw = self._call(self._client.describe_groups, [group])[group]
        error_class = _error_from_text(raw["error"]) if raw.get("error") else None
        error = error_name(error_class) if error_class is not None else None
        if error_class is not None and retry_later(error_class):
            # A coordinator moving or loading answers for no group: taking it for "Dead" would be a lie.
            raise _failure(error_class())
        members = tuple(_member(m) for m in raw.get("members") or ())
        return GroupInfo(
            group_id=group,
            state=raw.get("group_state") or "Dead",
            protocol_type=raw.get("protocol_type") or "",
            protocol=raw.get("protocol_data") or "",
            members=members,
            error=error,
        )

    def describe_modern_group(self, group: str, kind: str) -> ModernGroup | None:
        """ConsumerGroupDescribe (API 69; `kind` "consumer", a KIP-848 group) or StreamsGroupDescribe (API 89;
        "streams"), version 0, at the group's coordinator. None when the brokers do not serve that API
        (Kafka before 3.7, or streams before 4.1: such a cluster has no group of that kind). A group of that
        kind that does not exist comes back as state Dead (GROUP_ID_NOT_FOUND); an answer worth a retry (a
        coordinator moving or loading) raises KafkaFailure, retriable."""
        request_class = ConsumerGroupDescribeRequest if kind == "consumer" else StreamsGroupDescribeRequest
        client = self._client

        async def describe() -> Any:
            node = await client._find_coordinator_id(group)
            request = request_class(group_ids=[group], include_authorized_operations=False)
            return await client._manager.send(request, node_id=node)

        try:
            response = client._manager.run(describe)
        except kerrors.IncompatibleBrokerVersion:
            return None
        except Exception as exc:
            raise _failure(exc) from None
        [described] = [g for g in response.groups if g.group_id == group] or [None]
        if described is None:
            raise KafkaFailure(CLIENT_ERROR, f"{request_class.name} answered without group {group}", True)
        if described.error_code:
            error_class = kerrors.for_code(described.error_code)
            if error_class is kerrors.UnsupportedVersionError:
                return None
            if error_class is kerrors.GroupIdNotFoundError:
                return ModernGroup(group, kind, "Dead")
            raise _failure(error_class())
        members = tuple(ModernMember(
            str(m.member_id), str(m.client_id or ""), str(m.client_host or ""),
            tuple(getattr(m, "subscribed_topic_names", None) or ()), getattr(m, "subscribed_topic_regex", None))
            for m in described.members or ())
        topology = getattr(described, "topology", None)  # streams: null until the group has one
        sources = frozenset(t for sub in (getattr(topology, "subtopologies", None) or ()) for t in sub.source_topics)
        return ModernGroup(group, kind, str(described.group_state or "Dead"), members, sources)

    def committed_offsets(self, group: str) -> dict[TP, Committed]:
        """Every committed offset of the group (OffsetFetch for all partitions); {} for an unknown group."""
        raw = self._call(self._client.list_group_offsets, {group: None}).get(group, {})
        return {
            (tp.topic, tp.partition): Committed(
                oam.offset, -1 if oam.leader_epoch is None else oam.leader_epoch, oam.metadata or ""
            )
            for tp, oam in raw.items()
            if oam.offset >= 0
        }

    def delete_offsets(self, group: str, partitions: Iterable[TP]) -> dict[TP, str | None]:
        """OffsetDelete in one request. A top-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) raises
        KafkaFailure: Kafka then returns no partition results at all."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        raw = self._call(self._client.delete_group_offsets, group, tps)
        return partition_answers(raw)

    def commit_offsets(self, group: str, offsets: Mapping[TP, Committed]) -> dict[TP, str | None]:
        """An admin OffsetCommit (generation -1, no member): accepted only while the group has no members,
        so a busy group's answers (UNKNOWN_MEMBER_ID) come back per partition for the caller to wait on."""
        request = {
            TopicPartition(t, p): OffsetAndMetadata(c.offset, c.metadata, None if c.leader_epoch < 0 else c.leader_epoch)
            for (t, p), c in offsets.items()
        }
        raw = self._call(self._client.alter_group_offsets, group, request)
        return partition_answers(raw)

    def delete_group(self, group: str, *, raise_retriable: bool = False) -> str | None:
        """DeleteGroups for one group (its offsets and the group itself): None when deleted, else Kafka's
        error name, e.g. NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND. Used by keep-alive and by
        an OffsetDeletion with spec.deleteGroup."""
        raw = self._call(self._client.delete_groups, [group]).get(group, "KafkaError")
        if raw == "OK":
            return None
        cls = getattr(kerrors, str(raw), None)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            return CLIENT_ERROR
        if raise_retriable and retry_later(cls) and not group_busy(error_name(cls)):
            # A coordinator moving or loading: not an answer about the group. Tried again later.
            raise _failure(cls())
        return error_name(cls)

    # -- topics and their logs

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """The partitions of each topic (Metadata), as Kafka's reset tool lists a topic named without
        partitions. A topic that does not exist is left out; any other refusal (e.g.
        TOPIC_AUTHORIZATION_FAILED) raises KafkaFailure."""
        wanted = sorted(set(topics))
        if not wanted:
            return {}
        out: dict[str, list[int]] = {}
        for topic in self._call(self._client.describe_topics, wanted):
            code = int(topic.get("error_code") or 0)
            if code == kerrors.UnknownTopicOrPartitionError.errno:
                continue
            if code:
                raise _failure(kerrors.for_code(code)())
            out[str(topic["name"])] = sorted(int(p["partition_index"]) for p in topic.get("partitions") or ())
        return out

    def list_offsets(self, partitions: Iterable[TP], at: str | int, *, read_committed: bool = False) -> dict[TP, int]:
        """ListOffsets for each partition: `at` is "earliest" (the log start offset), "latest" (the log end
        offset) or a timestamp in epoch ms (the first offset whose record's timestamp is at or after it;
        UNKNOWN_OFFSET, -1, where no record is that late). One request per partition leader; a partition
        that does not exist raises KafkaFailure (UNKNOWN_TOPIC_OR_PARTITION): ask `log_ranges` or
        `topic_partitions` first. `read_committed`: "latest" is the last stable offset (before any open
        transaction), as a read_committed consumer sees the end."""
        if at == "earliest":
            spec: OffsetSpec | OffsetTimestamp = OffsetSpec.EARLIEST
        elif at == "latest":
            spec = OffsetSpec.LATEST
        elif isinstance(at, int) and not isinstance(at, bool) and at >= 0:
            spec = OffsetTimestamp(at)
        else:
            raise ValueError(f"list_offsets: {at!r} is not earliest, latest or a timestamp")
        request = {TopicPartition(t, p): spec for t, p in sorted(set(partitions))}
        if not request:
            return {}
        isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        raw = self._call(self._client.list_partition_offsets, request, isolation_level=isolation)
        return {(tp.topic, tp.partition): int(found.offset) for tp, found in raw.items()}

    def log_ranges(self, partitions: Iterable[TP]) -> dict[TP, LogRange]:
        """Each existing partition's log start and end offsets (ListOffsets EARLIEST and LATEST, as Kafka's
        reset tool asks them); a partition that does not exist is left out."""
        wanted = sorted(set(partitions))
        existing = self.topic_partitions(t for t, _ in wanted)
        known = [(t, p) for t, p in wanted if p in existing.get(t, ())]
        start = self.list_offsets(known, "earliest")
        end = self.list_offsets(known, "latest")
        return {tp: LogRange(start[tp], end[tp]) for tp in known if tp in start and tp in end}

    # -- configs

    def broker_configs(self, names: Iterable[str]) -> dict[str, str | None]:
        """Values of broker configs (e.g. offsets.retention.minutes) from one broker, whatever their source."""
        brokers = self._client._manager.cluster.brokers()
        if not brokers:
            raise KafkaFailure(CONNECTION_FAILED, "no brokers in the cluster metadata", True)
        broker_id = str(sorted(b.node_id for b in brokers)[0])
        wanted = list(names)
        resource = ConfigResource("BROKER", broker_id, wanted)
        raw = self._call(self._client.describe_configs, [resource], config_filter="all")
        configs = raw.get("broker", {}).get(broker_id, {})
        return {name: (configs[name].get("value") if name in configs else None) for name in wanted}


def partition_answers(raw: Mapping[TopicPartition, type[BaseException]]) -> dict[TP, str | None]:
    """Per-partition answers by Kafka's error name (None: done). An answer worth a retry that is not about a
    busy group (a coordinator moving or loading, copied by Kafka into every partition) fails the whole
    request instead, as the same error would have done at the top: KafkaFailure, retriable."""
    for err in raw.values():
        if err is not kerrors.NoError and retry_later(err) and not group_busy(error_name(err)):
            raise KafkaFailure(error_name(err), str(getattr(err, "description", "") or error_name(err)), True)
    return {(tp.topic, tp.partition): _partition_error(err) for tp, err in raw.items()}


def _partition_error(err: type[BaseException]) -> str | None:
    return None if err is kerrors.NoError else error_name(err)


def _error_from_text(text: str) -> type[BaseException]:
    """DescribeGroups gives errors as text like '[Error 69] GroupIdNotFoundError: ...'; map back to the class."""
    found: type[BaseException] = kerrors.KafkaError
    if text.startswith("[Error "):
        code = text[len("[Error "):].split("]", 1)[0]
        if code.lstrip("-").isdigit():
            found = kerrors.for_code(int(code))
    return found


def _member(raw: Mapping[str, Any]) -> Member:
    metadata = raw.get("member_metadata")
    topics: tuple[str, ...] | None = None
    if isinstance(metadata, Mapping) and isinstance(metadata.get("topics"), list):
        topics = tuple(metadata["topics"])
    elif metadata is not None and isinstance(getattr(metadata, "topics", None), list):
        topics = tuple(metadata.topics)
    return Member(
        member_id=raw.get("member_id") or "",
        client_id=raw.get("client_id") or "",
        client_host=raw.get("client_host") or "",
        topics=topics,
    )
