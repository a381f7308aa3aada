"""Records written into `__consumer_offsets` (or any topic) through Apache Kafka's own produce path: how the
Spark suites and bench/analyze.py seed a real broker with records a group coordinator writes (every group kind,
tombstones, corrupt records) that no client could make it write.

The records go as prebuilt v2 batches (the layout a coordinator writes, kafka_sandbox.topics.build_batch), one
per partition per Produce request (v3+ takes one batch per partition), pipelined on one connection, from a
client whose id is `__admin_client`: the one id Kafka lets append to an internal topic
(`KafkaApis.handleProduceRequest`: `internalTopicsAllowed = request.header.clientId ==
AdminUtils.ADMIN_CLIENT_ID`). The broker validates each batch (CRC, keys of a compacted topic) and assigns the
offsets, so the log is Kafka's; readers then fetch it as they fetch any topic.

What this costs the broker: its group coordinator did not write these records and does not load them (until
the partition is loaded again), so it knows none of their groups; Kafka 4.x's coordinator (CoordinatorRuntime)
also logs an ERROR per batch appended behind its back ("New committed offset N of __consumer_offsets-P must be
less than or equal to ..."). Seed only a broker of your own that nothing else uses for groups (the Spark suites'
`seeded_kafka`, the bench's broker per shape), never the session's shared one.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_offsets_model.raw import RawRecord

if TYPE_CHECKING:
    from kafka_under_test import Kafka

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID: may append to internal topics

Row = tuple[bytes | None, bytes | None, int]  # key, value, timestamp ms


@dataclass(frozen=True)
class Produced:
    """What Kafka acknowledged: the records in all, and the base offset of each batch, per partition, in the
    order the batches were given."""

    records: int
    base_offsets: dict[int, list[int]]


def batch_records(batch: bytes) -> int:
    """recordsCount of a v2 batch (the last int32 of its 61-byte header)."""
    return int(struct.unpack_from(">i", batch, 57)[0])


def produce_batches(bootstrap: str, topic: str, batches: Mapping[int, Sequence[bytes]], in_flight: int = 8) -> Produced:
    """Append prebuilt v2 record batches to `topic` on a single broker: round i sends the i-th batch of every
    partition in one Produce request (acks=all), `in_flight` requests pipelined on one connection."""
    from kafka.errors import for_code
    from kafka.net.compat import KafkaNetClient
    from kafka.protocol.producer import ProduceRequest

    client = KafkaNetClient(bootstrap_servers=bootstrap, client_id=ADMIN_CLIENT_ID,
                            max_in_flight_requests_per_connection=in_flight, request_timeout_ms=120_000)
    try:
        client.get_broker_version(timeout_ms=30_000)
        future = client.cluster.add_topic(topic)
        client.poll(future=future, timeout_ms=30_000)
        node = _only_leader(client, topic)
        version = client.api_version(ProduceRequest, max_version=8)  # v9+ is flexible; nothing here needs it
        rounds = max((len(b) for b in batches.values()), default=0)
        Topic = ProduceRequest.TopicProduceData
        pending: list[Any] = []
        bases: dict[int, list[int]] = {p: [] for p in batches}

        def answers(f: Any) -> list[Any]:
            client.poll(future=f, timeout_ms=120_000)
            if not f.succeeded():
                raise RuntimeError(f"produce to {topic} failed: {f.exception if f.failed() else 'timed out'}")
            return [part for answer in f.value.responses for part in answer.partition_responses]

        def settle(f: Any) -> None:
            for part in answers(f):
                if part.error_code:
                    raise RuntimeError(f"produce to {topic}-{part.index}: {for_code(part.error_code).__name__}")
                bases[part.index].append(part.base_offset)

        def request(i: int, partitions: list[int]) -> Any:
            data = [Topic.PartitionProduceData(index=p, records=bytes(batches[p][i])) for p in partitions]
            return ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=120_000,
                                  topic_data=[Topic(name=topic, partition_data=data)])

        # The first round alone, until every partition took it: a partition of a topic made a moment ago may
        # not have its leader yet (NOT_LEADER_OR_FOLLOWER, retriable). Later rounds are pipelined, so a retry
        # there could reorder a partition's batches; a stable single broker gives none.
        todo = sorted(p for p, items in batches.items() if items)
        deadline = time.monotonic() + 120
        while todo:
            retry = []
            for part in answers(client.send(node, request(0, todo))):
                if part.error_code and for_code(part.error_code).retriable and time.monotonic() < deadline:
                    retry.append(part.index)
                elif part.error_code:
                    raise RuntimeError(f"produce to {topic}-{part.index}: {for_code(part.error_code).__name__}")
                else:
                    bases[part.index].append(part.base_offset)
            todo = sorted(retry)
            if todo:
                time.sleep(0.2)  # the retry backoff; the deadline decides
        for i in range(1, rounds):
            client.await_ready(node, timeout_ms=120_000)
            pending.append(client.send(node, request(i, [p for p, items in sorted(batches.items()) if i < len(items)])))
            while len(pending) >= in_flight:
                settle(pending.pop(0))
        for f in pending:
            settle(f)
        return Produced(sum(batch_records(b) for items in batches.values() for b in items), bases)
    finally:
        client.close()


def _only_leader(client: Any, topic: str) -> int:
    from kafka import TopicPartition

    leaders = {client.cluster.leader_for_partition(TopicPartition(topic, p))
               for p in client.cluster.partitions_for_topic(topic) or ()}
    if len(leaders) != 1 or None in leaders:
        raise RuntimeError(f"expected one broker leading every partition of {topic}, found {leaders}")
    return int(leaders.pop())


def seed(kafka: Kafka, topic: str, records: Iterable[RawRecord], batch_size: int = 40) -> list[RawRecord]:
    """`records` (their partition, timestamp, key and value; their offsets are ignored) at the end of `topic`,
    each partition's in the given order and in batches of `batch_size`: produced to Apache Kafka as above, or
    appended by the sandbox. Returns them with the offsets the broker gave them."""
    from kafka_sandbox.topics import build_batch

    rows: dict[int, list[Row]] = {}
    for r in records:
        rows.setdefault(r.partition, []).append((r.key, r.value, r.timestamp))
    chunks = {p: [items[i : i + batch_size] for i in range(0, len(items), batch_size)] for p, items in rows.items()}
    if kafka.sandbox is not None:
        bases = {p: [kafka.sandbox.append_records(topic, p, chunk) for chunk in items] for p, items in chunks.items()}
    else:
        batches = {p: [bytes(build_batch(chunk)) for chunk in items] for p, items in chunks.items()}
        bases = produce_batches(kafka.bootstrap_servers, topic, batches).base_offsets
    return [
        RawRecord(p, base + i, ts, key, value)
        for p, items in sorted(chunks.items())
        for base, chunk in zip(bases[p], items, strict=True)
        for i, (key, value, ts) in enumerate(chunk)
    ]
