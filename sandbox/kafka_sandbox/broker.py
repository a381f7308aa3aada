"""Starting and stopping the sandbox broker: `BrokerRuntime` on an event loop, `SandboxBroker` in a thread.

`BrokerRuntime` is the async core (used directly by the `kafka-sandbox` command); `SandboxBroker` runs it
on a private event loop in a background thread so synchronous tests and benchmarks can use it with
`with SandboxBroker(...) as broker:`. Everything touching broker state hops onto that loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from kafka_offsets_model.codec import decode_key, partition_for
from kafka_offsets_model.durations import format_duration_ms, parse_duration_ms

from . import (
    api_versions,
    describe_configs,
    fetch,
    group_apis,
    leader_epochs,
    list_offsets,
    metadata_apis,
    modern_group_apis,
    produce,
    sasl,
    topic_admin,
)
from .clock import Clock
from .configs import OFFSETS_TOPIC_CONFIGS
from .context import OFFSETS_TOPIC, BrokerConfig, BrokerContext
from .coordinator import SandboxCoordinator, create_coordinator
from .coordinator.messages import CleanupReport
from .faults import Faults
from .security import ListenerSecurity
from .server import BrokerServer, Session
from .topics import TopicStore

log = logging.getLogger(__name__)

T = TypeVar("T")

# Handler modules register their APIs when imported; ApiVersions advertises what got registered.
HANDLER_MODULES = (
    api_versions,
    metadata_apis,
    topic_admin,
    produce,
    fetch,
    list_offsets,
    leader_epochs,
    describe_configs,
    group_apis,
    modern_group_apis,
    sasl,
)

# Keyword arguments of SandboxBroker that are Kafka broker configs, by their Kafka names.
_KAFKA_NAMES = {
    "offsets_retention_ms": "offsets.retention.minutes",
    "offsets_retention_check_interval_ms": "offsets.retention.check.interval.ms",
    "offsets_partitions": "offsets.topic.num.partitions",
    "group_min_session_timeout_ms": "group.min.session.timeout.ms",
    "group_max_session_timeout_ms": "group.max.session.timeout.ms",
    "group_initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "group_max_size": "group.max.size",
    "offset_metadata_max_bytes": "offset.metadata.max.bytes",
    "max_request_bytes": "socket.request.max.bytes",
    "default_partitions": "num.partitions",
    "auto_create_topics": "auto.create.topics.enable",
    "message_max_bytes": "message.max.bytes",
    "failed_authentication_delay_ms": "connection.failed.authentication.delay.ms",
}


def broker_config(offsets_retention: str | int = "7d", **settings: Any) -> BrokerConfig:
    """A BrokerConfig from SandboxBroker's keyword arguments ("7d"-style or ms retention, field names of
    BrokerConfig for the rest). Retention must be whole minutes: Kafka's setting is in minutes."""
    retention_ms = (
        parse_duration_ms(offsets_retention) if isinstance(offsets_retention, str) else offsets_retention
    )
    if retention_ms <= 0 or retention_ms % 60_000:
        shown = offsets_retention if isinstance(offsets_retention, str) else format_duration_ms(retention_ms)
        raise ValueError(f"offsets retention must be a positive whole number of minutes, got {shown}")
    fields = {f.name for f in dataclasses.fields(BrokerConfig)} - {"explicit", "offsets_retention_ms"}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise TypeError(f"unknown broker settings: {', '.join(unknown)}")
    if settings.get("offsets_partitions", 1) < 1:
        raise ValueError(f"offsets partitions must be at least 1, got {settings['offsets_partitions']}")
    explicit = {_KAFKA_NAMES["offsets_retention_ms"]} | {
        _KAFKA_NAMES[k] for k in settings if k in _KAFKA_NAMES
    }
    return BrokerConfig(offsets_retention_ms=retention_ms, explicit=frozenset(explicit), **settings)


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class BrokerRuntime:
    """The broker on the running event loop: context, topics, group coordinator and TCP server."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        node_id: int = 0,
        clock: Clock | None = None,
        security: ListenerSecurity | None = None,
    ) -> None:
        topics = TopicStore()
        topics.create(OFFSETS_TOPIC, config.offsets_partitions, internal=True, configs=OFFSETS_TOPIC_CONFIGS)
        self.ctx = BrokerContext(
            node_id, host, port, clock or Clock(), config, topics, security=security or ListenerSecurity()
        )
        self.ctx.coordinator = create_coordinator(self.ctx)
        self.server = BrokerServer(self.ctx)

    async def start(self) -> None:
        await self.ctx.coordinator.start()
        await self.server.start()

    async def close(self) -> None:
        await self.server.close()
        await self.ctx.coordinator.close()

    # -- operations for tests, on the loop

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        self.ctx.topics.create(name, partitions, configs=dict(configs or {}))

    def expire_offsets(self) -> CleanupReport:
        return self.ctx.coordinator.expire_offsets()

    def append_offsets_records(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> dict[int, int]:
        """Append raw records to the `__consumer_offsets` partitions their groups map to, one batch per
        partition, in the given order; then let the coordinator replay them. Returns partition -> base offset."""
        by_partition: dict[int, list[tuple[bytes, bytes | None, int]]] = {}
        partitions = self.ctx.config.offsets_partitions
        for key, value, timestamp in records:
            _rtype, _version, fields = decode_key(key)
            group = fields.get("group", fields.get("GroupId"))
            if not isinstance(group, str):
                raise ValueError(f"record key {key!r} names no group")
            by_partition.setdefault(partition_for(group, partitions), []).append((key, value, int(timestamp)))
        bases = {}
        for partition, batch in sorted(by_partition.items()):
            bases[partition] = self.ctx.topics.append_records(OFFSETS_TOPIC, partition, batch)
            self.ctx.coordinator.replay(partition, batch)
        return bases


class SandboxBroker:
    """A Kafka wire-protocol simulator on 127.0.0.1, for tests and benchmarks. NOT a production broker.

        with SandboxBroker(offsets_retention="7d", offsets_partitions=4) as broker:
            broker.bootstrap_servers        # "127.0.0.1:PORT"
            broker.clock.advance(days=8)
            broker.expire_offsets()

    The one listener speaks `security_protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL): SSL needs
    `ssl_context` (security.server_ssl_context), SASL needs `sasl_users` ({"alice": "alice-secret"}) and
    enables `sasl_mechanisms` (default PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512).

    Keyword arguments beyond the named ones are BrokerConfig fields (e.g. auto_create_topics=True).
    """

    def __init__(
        self,
        offsets_retention: str | int = "7d",
        offsets_partitions: int = 50,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        node_id: int = 0,
        clock: Clock | None = None,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        sasl_users: Mapping[str, str] | None = None,
        sasl_mechanisms: Iterable[str] | None = None,
        **settings: Any,
    ) -> None:
        config = broker_config(offsets_retention, offsets_partitions=offsets_partitions, **settings)
        security = ListenerSecurity.create(
            security_protocol, ssl_context=ssl_context, sasl_users=sasl_users, sasl_mechanisms=sasl_mechanisms
        )
        self.runtime = BrokerRuntime(
            config, host=host, port=port, node_id=node_id, clock=clock, security=security
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Fault injection for tests (faults.py): errors, resets, late answers and held requests.
        self.faults = Faults(self.call, lambda: self.runtime.server.faults)

    # -- lifecycle

    def start(self) -> SandboxBroker:
        if self._loop is not None:
            raise RuntimeError("the sandbox broker is already running")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=self._run_loop, args=(loop,), name="sandbox-broker", daemon=True
        )
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.runtime.start(), loop).result(timeout=30)
        except BaseException:
            self._stop_loop()
            raise
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.runtime.close(), self._loop).result(timeout=30)
        finally:
            self._stop_loop()

    def __enter__(self) -> SandboxBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=30)
        loop.close()

    # -- what tests use

    @property
    def ctx(self) -> BrokerContext:
        return self.runtime.ctx

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.ctx.host}:{self.ctx.port}"

    @property
    def port(self) -> int:
        return self.ctx.port

    @property
    def security_protocol(self) -> str:
        return self.ctx.security.protocol

    def sessions(self) -> list[Session]:
        """Every connection that got past the listener's security so far (TLS handshake and SASL), in order."""
        return self.call(lambda: list(self.runtime.server.sessions))

    def failed_authentications(self) -> list[str]:
        """Why each SASL exchange the broker answered with a failure failed (no secrets), in order."""
        return self.call(lambda: list(self.runtime.server.failed_authentications))

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def coordinator(self) -> SandboxCoordinator:
        return self.ctx.coordinator

    def call(self, fn: Callable[[], T | Awaitable[T]], timeout: float = 30) -> T:
        """Run `fn` on the broker's loop (where all broker state lives) and return its result."""
        if self._loop is None:
            raise RuntimeError("the sandbox broker is not running")

        async def run() -> T:
            return await _maybe_await(fn())  # type: ignore[no-any-return]

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=timeout)

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        self.call(lambda: self.runtime.create_topic(name, partitions, configs))

    def append_records(
        self, topic: str, partition: int, records: Iterable[tuple[bytes | None, bytes | None, int]]
    ) -> int:
        """Append records to a topic partition as one v2 batch (bulk seeding for tests and benchmarks);
        returns the batch's base offset."""
        batch = list(records)
        return self.call(lambda: self.ctx.topics.append_records(topic, partition, batch))

    def expire_offsets(self) -> CleanupReport:
        """Run the coordinator's offset expiration now (it also runs every offsets.retention.check.interval.ms)."""
        return self.call(self.runtime.expire_offsets)

    def append_offsets_records(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> dict[int, int]:
        """Seed raw `(key, value, timestamp)` records into `__consumer_offsets` (e.g. KIP-848 records the
        sandbox's classic coordinator never writes); returns partition -> base offset of its batch."""
        batch = list(records)
        return self.call(lambda: self.runtime.append_offsets_records(batch))
