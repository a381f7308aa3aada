"""What the analysis needs to know about the cluster besides `__consumer_offsets`: which topics exist
(offsets of other topics are DeletedTopic material) and the broker's `offsets.retention.minutes`
(GroupCoordinatorConfig.OFFSETS_RETENTION_MINUTES_CONFIG, default 7 days), read with DescribeConfigs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .reachability import UnreachableError, check_reachable
from .source import SourceError, client_config

RETENTION_CONFIG = "offsets.retention.minutes"
MINUTE_MS = 60_000


@dataclass(frozen=True)
class ClusterInfo:
    topics: frozenset[str]
    retention_ms: int | None


def admin_config(bootstrap_servers: str, settings: Mapping[str, Any] | None) -> dict[str, Any]:
    consumer = client_config(bootstrap_servers, settings)
    keep = {"bootstrap_servers", "request_timeout_ms"} | {k for k in consumer if k in (settings or {})}
    return {k: v for k, v in consumer.items() if k in keep}


def describe_cluster(
    bootstrap_servers: str, settings: Mapping[str, Any] | None = None, *, want_retention: bool = True
) -> ClusterInfo:
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import KafkaError

    try:
        check_reachable(bootstrap_servers)
    except UnreachableError as exc:  # the source's error, as every other failure to reach the cluster here
        raise SourceError(str(exc)) from None
    try:
        admin = KafkaAdminClient(**admin_config(bootstrap_servers, settings))
    except (KafkaError, ValueError, OSError) as exc:
        raise SourceError(f"cannot connect to Kafka at {bootstrap_servers}: {exc}") from None
    try:
        topics = frozenset(admin.list_topics())
        retention_ms = None
        if want_retention:
            brokers = admin.describe_cluster()["brokers"]
            if not brokers:
                raise SourceError(f"{bootstrap_servers} reports no brokers")
            node = str(brokers[0]["broker_id"])
            resource = ConfigResource(ConfigResourceType.BROKER, node, {RETENTION_CONFIG: None})
            described = admin.describe_configs([resource], config_filter="all")
            entry = described.get("broker", {}).get(node, {}).get(RETENTION_CONFIG)
            if entry is None or entry.get("value") is None:
                raise SourceError(
                    f"broker {node} does not report {RETENTION_CONFIG}; give --broker-retention instead"
                )
            retention_ms = int(entry["value"]) * MINUTE_MS
        return ClusterInfo(topics, retention_ms)
    except KafkaError as exc:
        raise SourceError(f"cannot describe the cluster at {bootstrap_servers}: {exc}") from None
    finally:
        admin.close()
