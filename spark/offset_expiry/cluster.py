"""What the analysis needs to know about the cluster besides `__consumer_offsets`: which topics exist
(offsets of other topics are DeletedTopic material), the broker's `offsets.retention.minutes`
(GroupCoordinatorConfig.OFFSETS_RETENTION_MINUTES_CONFIG, default 7 days) and
`offsets.retention.check.interval.ms` (OFFSETS_RETENTION_CHECK_INTERVAL_MS_CONFIG, default 10 minutes: how
often the cleanup runs, so how late after its expiry time an offset may still be there), read with
DescribeConfigs. A retention given by the caller is not read; the interval is read whenever the broker
answers, else Kafka's default is assumed (and the report says so)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .reachability import UnreachableError, check_reachable
from .source import SourceError, client_config

RETENTION_CONFIG = "offsets.retention.minutes"
CHECK_INTERVAL_CONFIG = "offsets.retention.check.interval.ms"
DEFAULT_CHECK_INTERVAL_MS = 600_000  # GroupCoordinatorConfig.OFFSETS_RETENTION_CHECK_INTERVAL_MS_DEFAULT
MINUTE_MS = 60_000


@dataclass(frozen=True)
class ClusterInfo:
    """`check_interval_ms` None: the broker did not say (the caller assumes Kafka's default)."""

    topics: frozenset[str]
    retention_ms: int | None
    check_interval_ms: int | None = None


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
        configs: dict[str, Any] = {}
        brokers = admin.describe_cluster()["brokers"]
        if not brokers and want_retention:
            raise SourceError(f"{bootstrap_servers} reports no brokers")
        node = str(brokers[0]["broker_id"]) if brokers else ""
        if brokers:
            wanted = {RETENTION_CONFIG: None, CHECK_INTERVAL_CONFIG: None}
            resource = ConfigResource(ConfigResourceType.BROKER, node, wanted)
            try:
                described = admin.describe_configs([resource], config_filter="all")
            except KafkaError:
                if want_retention:
                    raise
                described = {}  # the retention was given; the interval is only nice to have
            configs = described.get("broker", {}).get(node, {})
        if want_retention:
            entry = configs.get(RETENTION_CONFIG)
            if entry is None or entry.get("value") is None:
                raise SourceError(
                    f"broker {node} does not report {RETENTION_CONFIG}; give --broker-retention instead"
                )
            retention_ms = int(entry["value"]) * MINUTE_MS
        return ClusterInfo(topics, retention_ms, _positive_int(configs.get(CHECK_INTERVAL_CONFIG)))
    except KafkaError as exc:
        raise SourceError(f"cannot describe the cluster at {bootstrap_servers}: {exc}") from None
    finally:
        admin.close()


def _positive_int(entry: Mapping[str, Any] | None) -> int | None:
    try:
        value = int(entry["value"]) if entry is not None and entry.get("value") is not None else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and value > 0 else None
