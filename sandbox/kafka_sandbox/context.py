"""What every request handler can reach: the broker's identity, clock, configuration, topics and coordinator.

Interface contract for handler modules (the group coordinator builds on it; keep it stable):

- `BrokerContext` is created once per broker, before the server accepts connections. Handlers receive it
  as their first argument. Everything in it is used on the broker's event-loop thread only; code running
  on other threads (tests, `SandboxBroker` methods) must hop onto the loop
  (`asyncio.run_coroutine_threadsafe` / `loop.call_soon_threadsafe`).
- `ctx.topics` is the `TopicStore` (see `topics.py`): `exists(name)`, `partition_count(name)`,
  `names()`, `topic_id(name)`, and `append_records(topic, partition, [(key, value, timestamp_ms)])`, which
  writes one v2 record batch and returns its base offset. `__consumer_offsets` exists from the start with
  `config.offsets_partitions` partitions.
- `ctx.coordinator` is the group coordinator (`coordinator.runtime.SandboxCoordinator`), installed by
  `BrokerRuntime` right after the context is made. The broker calls it (all on the loop thread):
    * `await coordinator.start()`  - before serving (starts its timers, e.g. the expiration task);
    * `await coordinator.close()`  - at shutdown;
    * `coordinator.on_topics_deleted(names)` - after DeleteTopics removed topics;
    * `coordinator.on_connection_closed(connection_id)` - when a client's connection ends;
    * `coordinator.expire_offsets()` - `SandboxBroker.expire_offsets()`;
    * `coordinator.replay(partition, records)` - after `SandboxBroker.append_offsets_records` appended raw
      records to that `__consumer_offsets` partition, so the coordinator loads them as Kafka does when it
      loads a partition.
- `ctx.security` is the listener's security (`security.py`): its protocol, TLS context and SASL users.
- Time comes from `ctx.clock.now_ms()` only, never `time.time()`, so tests can advance it.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_offsets_model.raw import (
    OFFSETS_TOPIC as OFFSETS_TOPIC,  # the sandbox's modules import it from here
)

from .clock import Clock
from .security import ListenerSecurity

if TYPE_CHECKING:
    from .coordinator.runtime import SandboxCoordinator
    from .topics import TopicStore

DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class BrokerConfig:
    """The broker settings the sandbox honours, named after Kafka's configs (defaults are Kafka 4.x's,
    except the initial rebalance delay: 0 so tests do not wait 3 s for every first join)."""

    offsets_retention_ms: int = 7 * DAY_MS  # offsets.retention.minutes = 10080
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offsets_partitions: int = 50  # offsets.topic.num.partitions
    group_min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    group_initial_rebalance_delay_ms: int = 0  # group.initial.rebalance.delay.ms (Kafka: 3000)
    group_max_size: int = 2**31 - 1  # group.max.size
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    max_request_bytes: int = 104_857_600  # socket.request.max.bytes
    default_partitions: int = 1  # num.partitions, for CreateTopics with numPartitions = -1
    auto_create_topics: bool = False  # auto.create.topics.enable (Kafka: true; off here unless asked)
    message_max_bytes: int = 1_048_588  # message.max.bytes
    failed_authentication_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    explicit: frozenset[str] = (
        frozenset()
    )  # Kafka names of the settings given at start (DescribeConfigs source)


def new_cluster_id() -> str:
    """Uuid.randomUuid().toString(): 16 random bytes in URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@dataclass
class BrokerContext:
    node_id: int
    host: str
    port: int
    clock: Clock
    config: BrokerConfig
    topics: TopicStore
    cluster_id: str = field(default_factory=lambda: new_cluster_id())
    security: ListenerSecurity = field(default_factory=ListenerSecurity)  # the one listener's protocol
    coordinator: SandboxCoordinator = field(init=False)  # it needs the context: installed right after
