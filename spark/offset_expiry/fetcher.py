"""Raw Fetch requests for one partition range, read_committed, over kafka-python's network client.

KafkaConsumer turns every record into several Python objects; at millions of records that alone is
slower than the rest of the analysis. Here kafka-python does what it is good at (connections, SASL/TLS,
metadata, the Fetch request and response classes) and the record bytes go to recordset.parse_record_set.

Uses `kafka.net.compat.KafkaNetClient`, kafka-python 3's replacement for its old KafkaClient (the
network layer its consumer, producer and admin client share).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from kafka_offsets_model.errors import InputError

from .recordset import AbortedTransaction, ParsedRecords, parse_record_set
from .recordset_arrays import RecordArrays, parse_record_arrays

_P = TypeVar("_P", ParsedRecords, RecordArrays)

FETCH_MAX_BYTES = 32 * 1024 * 1024
PARTITION_MAX_BYTES = 16 * 1024 * 1024
MAX_FETCH_VERSION = 12  # v13+ names topics by id
READ_COMMITTED = 1
RETRY_FOR_S = 60.0
_OFFSET_OUT_OF_RANGE = 1


# kafka-python settings a caller may pass (Spark options "kafka.<name>"): connection and security only.
CLIENT_SETTINGS = frozenset(
    {
        "security_protocol",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password",
        "ssl_check_hostname",
        "client_id",
        "request_timeout_ms",
    }
)


class FetchError(InputError):
    pass


def typed_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Settings arrive as strings (Spark options, environment variables); kafka-python wants types."""
    out: dict[str, Any] = {}
    for name, value in (settings or {}).items():
        if name not in CLIENT_SETTINGS:
            raise FetchError(f"unsupported Kafka client setting {name!r}")
        if name.endswith("_ms") and isinstance(value, str):
            value = int(value)
        elif name == "ssl_check_hostname" and isinstance(value, str):
            value = value.lower() == "true"
        out[name] = value
    return out


def net_config(bootstrap_servers: str, settings: Mapping[str, Any] | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers.split(","),
        "client_id": "offset-expiry-reader",
        "request_timeout_ms": 30_000,
        "receive_message_max_bytes": FETCH_MAX_BYTES + 1024 * 1024,
    }
    config.update(typed_settings(settings))
    return config


class PartitionFetcher:
    """Fetches [start, end) of one partition; one instance per Spark task."""

    def __init__(
        self, bootstrap_servers: str, settings: Mapping[str, Any] | None = None, topic: str | None = None
    ) -> None:
        """`topic`: the topic to be read, named before the client's first metadata request so that it
        answers for it too (otherwise the first fetch waits for a second metadata request, which
        kafka-python holds back by retry_backoff_ms: 0.1 s per task)."""
        from kafka.errors import KafkaError
        from kafka.net.compat import KafkaNetClient

        self.bootstrap_servers = bootstrap_servers
        try:
            self.client = KafkaNetClient(**net_config(bootstrap_servers, settings))
            if topic is not None:
                self.client.cluster.add_topic(topic)
            self.client.get_broker_version(timeout_ms=30_000)
        except (KafkaError, OSError) as exc:
            raise FetchError(f"cannot connect to Kafka at {bootstrap_servers}: {exc}") from None

    def close(self) -> None:
        self.client.close()

    def _leader(self, topic: str, partition: int, deadline: float) -> int:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        cluster = self.client.cluster
        leader = cluster.leader_for_partition(tp)
        if leader is not None and leader >= 0:
            return int(leader)
        future = cluster.add_topic(topic)
        while True:
            self.client.poll(future=future, timeout_ms=100)
            leader = cluster.leader_for_partition(tp)
            if leader is not None and leader >= 0:
                return int(leader)
            if time.monotonic() > deadline:
                raise FetchError(f"no leader for {topic}-{partition} on {self.bootstrap_servers}")
            future = cluster.request_update()

    def fetch(self, topic: str, partition: int, start: int, end: int) -> Iterator[ParsedRecords]:
        """Parsed records with start <= offset < end, in offset order, one fetch response at a time."""
        for parsed in self._fetch(topic, partition, start, end, parse_record_set):
            yield _below(parsed, end)

    def fetch_arrays(self, topic: str, partition: int, start: int, end: int) -> Iterator[RecordArrays]:
        """fetch's records as arrays (recordset_arrays: the vectorised parser)."""
        for parsed in self._fetch(topic, partition, start, end, parse_record_arrays):
            yield parsed.below(end)

    def _fetch(self, topic: str, partition: int, start: int, end: int, parse: Callable[..., _P]) -> Iterator[_P]:
        from kafka.errors import for_code
        from kafka.protocol.consumer import FetchRequest

        version = self.client.api_version(FetchRequest, max_version=MAX_FETCH_VERSION)
        if version < 4:
            raise FetchError("the broker does not support read_committed fetches (Fetch v4, Kafka 0.11)")
        deadline = time.monotonic() + RETRY_FOR_S
        node = self._leader(topic, partition, deadline)
        offset = start
        while offset < end:
            request = FetchRequest(
                version=version,
                replica_id=-1,
                max_wait_ms=500,
                min_bytes=1,
                max_bytes=FETCH_MAX_BYTES,
                isolation_level=READ_COMMITTED,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchTopic.FetchPartition(
                                partition=partition,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=PARTITION_MAX_BYTES,
                            )
                        ],
                    )
                ],
                forgotten_topics_data=[],
                rack_id="",
            )
            response = self.client.send_and_receive(node, request, timeout_ms=60_000)
            data = response.responses[0].partitions[0]
            if data.error_code == _OFFSET_OUT_OF_RANGE and data.log_start_offset > offset:
                offset = data.log_start_offset  # deleted since the snapshot: gone from Kafka too
                continue
            # kafka-python's error table says what is worth another try (leader moves, timeouts, epochs).
            if data.error_code and for_code(data.error_code).retriable and time.monotonic() < deadline:
                node = self._leader(topic, partition, deadline)
                continue
            if data.error_code:
                name = for_code(data.error_code).__name__
                raise FetchError(f"fetching {topic}-{partition} at offset {offset}: {name}")
            aborted = [
                AbortedTransaction(a.producer_id, a.first_offset) for a in data.aborted_transactions or ()
            ]
            parsed = parse(bytes(data.records or b""), offset, aborted)
            if parsed.next_offset <= offset:
                if time.monotonic() > deadline:
                    raise FetchError(
                        f"no progress reading {topic}-{partition} at offset {offset} (snapshot end {end})"
                    )
                continue
            deadline = time.monotonic() + RETRY_FOR_S
            offset = parsed.next_offset
            yield parsed


def _below(parsed: ParsedRecords, end: int) -> ParsedRecords:
    if not parsed.offsets or parsed.offsets[-1] < end:
        return parsed
    n = next(i for i, o in enumerate(parsed.offsets) if o >= end)
    return ParsedRecords(
        parsed.offsets[:n], parsed.timestamps[:n], parsed.keys[:n], parsed.values[:n], parsed.next_offset
    )
