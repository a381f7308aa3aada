"""Broker and topic configuration as DescribeConfigs reports it: names, values, types and sources.

Defaults are Kafka 4.x's (storage/.../LogConfig.java, server-common/.../ServerLogConfigs.java,
group-coordinator/.../GroupCoordinatorConfig.java). The sandbox does not enforce most topic configs;
it stores and reports them (see docs/sandbox-broker.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .context import BrokerConfig

LONG_MAX = str(2**63 - 1)


class ConfigType(IntEnum):
    """DescribeConfigsResponse ConfigType (ConfigDef.Type)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigsResponse ConfigSource (DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ResourceType(IntEnum):
    """ConfigResource.Type ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    type: ConfigType
    source: ConfigSource
    read_only: bool = False


TOPIC_DEFAULTS: dict[str, tuple[str, ConfigType]] = {
    "cleanup.policy": ("delete", ConfigType.LIST),
    "compression.type": ("producer", ConfigType.STRING),
    "delete.retention.ms": ("86400000", ConfigType.LONG),
    "file.delete.delay.ms": ("60000", ConfigType.LONG),
    "flush.messages": (LONG_MAX, ConfigType.LONG),
    "flush.ms": (LONG_MAX, ConfigType.LONG),
    "index.interval.bytes": ("4096", ConfigType.INT),
    "local.retention.bytes": ("-2", ConfigType.LONG),
    "local.retention.ms": ("-2", ConfigType.LONG),
    "max.compaction.lag.ms": (LONG_MAX, ConfigType.LONG),
    "max.message.bytes": ("1048588", ConfigType.INT),
    "message.timestamp.after.max.ms": (LONG_MAX, ConfigType.LONG),
    "message.timestamp.before.max.ms": (LONG_MAX, ConfigType.LONG),
    "message.timestamp.type": ("CreateTime", ConfigType.STRING),
    "min.cleanable.dirty.ratio": ("0.5", ConfigType.DOUBLE),
    "min.compaction.lag.ms": ("0", ConfigType.LONG),
    "min.insync.replicas": ("1", ConfigType.INT),
    "preallocate": ("false", ConfigType.BOOLEAN),
    "remote.storage.enable": ("false", ConfigType.BOOLEAN),
    "retention.bytes": ("-1", ConfigType.LONG),
    "retention.ms": ("604800000", ConfigType.LONG),
    "segment.bytes": ("1073741824", ConfigType.INT),
    "segment.index.bytes": ("10485760", ConfigType.INT),
    "segment.jitter.ms": ("0", ConfigType.LONG),
    "segment.ms": ("604800000", ConfigType.LONG),
    "unclean.leader.election.enable": ("false", ConfigType.BOOLEAN),
}

# GroupCoordinator.offsetsTopicConfigs: what the coordinator creates __consumer_offsets with.
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(100 * 1024 * 1024),
    "compression.type": "producer",
}


def unknown_topic_configs(names: list[str]) -> list[str]:
    return [n for n in names if n not in TOPIC_DEFAULTS]


def topic_entries(overrides: dict[str, str]) -> list[ConfigEntry]:
    """Every topic config: the topic's own value (TOPIC_CONFIG) or the default (DEFAULT_CONFIG)."""
    out = []
    for name, (default, ctype) in sorted(TOPIC_DEFAULTS.items()):
        if name in overrides:
            out.append(ConfigEntry(name, overrides[name], ctype, ConfigSource.TOPIC_CONFIG))
        else:
            out.append(ConfigEntry(name, default, ctype, ConfigSource.DEFAULT_CONFIG))
    return out


def broker_entries(config: BrokerConfig, node_id: int, explicit: frozenset[str]) -> list[ConfigEntry]:
    """The broker's configs; those given when the sandbox was started are STATIC_BROKER_CONFIG, the rest
    DEFAULT_CONFIG. Broker configs are read-only here (no dynamic broker configs)."""
    retention_minutes = config.offsets_retention_ms // 60_000
    values: list[tuple[str, str, ConfigType]] = [
        ("auto.create.topics.enable", str(config.auto_create_topics).lower(), ConfigType.BOOLEAN),
        ("broker.id", str(node_id), ConfigType.INT),
        (
            "connection.failed.authentication.delay.ms",
            str(config.failed_authentication_delay_ms),
            ConfigType.INT,
        ),
        ("group.initial.rebalance.delay.ms", str(config.group_initial_rebalance_delay_ms), ConfigType.INT),
        ("group.max.session.timeout.ms", str(config.group_max_session_timeout_ms), ConfigType.INT),
        ("group.max.size", str(config.group_max_size), ConfigType.INT),
        ("group.min.session.timeout.ms", str(config.group_min_session_timeout_ms), ConfigType.INT),
        ("message.max.bytes", str(config.message_max_bytes), ConfigType.INT),
        ("node.id", str(node_id), ConfigType.INT),
        ("num.partitions", str(config.default_partitions), ConfigType.INT),
        ("offset.metadata.max.bytes", str(config.offset_metadata_max_bytes), ConfigType.INT),
        (
            "offsets.retention.check.interval.ms",
            str(config.offsets_retention_check_interval_ms),
            ConfigType.LONG,
        ),
        ("offsets.retention.minutes", str(retention_minutes), ConfigType.INT),
        ("offsets.topic.num.partitions", str(config.offsets_partitions), ConfigType.INT),
        ("offsets.topic.replication.factor", "1", ConfigType.SHORT),
        ("socket.request.max.bytes", str(config.max_request_bytes), ConfigType.INT),
    ]
    return [
        ConfigEntry(
            name,
            value,
            ctype,
            ConfigSource.STATIC_BROKER_CONFIG if name in explicit else ConfigSource.DEFAULT_CONFIG,
            read_only=True,
        )
        for name, value, ctype in values
    ]
