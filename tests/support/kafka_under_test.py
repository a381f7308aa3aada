"""One handle on whichever broker a test runs against: Apache Kafka (real_kafka.RealKafka, the default) or the
sandbox (KOO_KAFKA_VERSIONS=sandbox). A test that takes the `kafka` fixture (tests/conftest.py) instead of
`broker` asks only for what both give: a bootstrap address, topics with records (brokers.make_topics) and,
on the real broker, a SASL_SSL listener.

The real broker is shared by the whole session (it takes seconds to start): after each test the fixture
deletes every group and topic the test made (`clean`), so tests keep plain names ("orders", "billing") and
still start from an empty cluster, as they do on a fresh sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokers import sandbox_broker
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import CoordinatorLoadInProgressError, GroupIdNotFoundError, UnknownTopicOrPartitionError
from real_kafka import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SMALL_JVM,
    RealKafka,
    Unavailable,
    missing_tools,
)
from waiting import wait_until

from kafka_sandbox import SandboxBroker


@dataclass(frozen=True)
class Secured:
    """The real broker's SASL_SSL listener: its address, the CA that signed its certificate and the users it
    knows (SCRAM-SHA-256/512 and PLAIN)."""

    bootstrap_servers: str
    ca_file: Path
    scram_user: str = SCRAM_USER
    scram_password: str = SCRAM_PASSWORD
    plain_user: str = PLAIN_USER
    plain_password: str = PLAIN_PASSWORD


@dataclass(frozen=True)
class Kafka:
    """The broker of one test. `version` is Kafka's (e.g. "4.4.0") or "sandbox"."""

    bootstrap_servers: str
    version: str
    sandbox: SandboxBroker | None = None
    real: RealKafka | None = None

    @property
    def is_real(self) -> bool:
        return self.real is not None

    @property
    def secured(self) -> Secured:
        assert self.real is not None and self.real.ca_file is not None, "only the real broker has SASL_SSL here"
        return Secured(self.real.secured_bootstrap_servers, self.real.ca_file)

    def create_topic(self, name: str, partitions: int) -> None:
        if self.sandbox is not None:
            self.sandbox.create_topic(name, partitions)
        else:
            produce_topics(self.bootstrap_servers, {name: partitions}, 0)

    def append_records(self, topic: str, partition: int, records: Sequence[tuple[bytes | None, bytes, int]]) -> None:
        """Records (key, value, timestamp ms) at the end of one partition: appended by the sandbox itself, or
        produced (acks=all, CreateTime as given) to Kafka."""
        if self.sandbox is not None:
            self.sandbox.append_records(topic, partition, list(records))
            return
        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, acks="all", linger_ms=5)
        try:
            sent = [producer.send(topic, key=k, value=v, partition=partition, timestamp_ms=ts) for k, v, ts in records]
            producer.flush(timeout=60)
            for future in sent:
                future.get(timeout=60)
        finally:
            producer.close()

    def delete_records_before(self, topic: str, partition: int, offset: int) -> None:
        """Move the partition's log start offset to `offset`, as retention would: DeleteRecords on Kafka."""
        if self.sandbox is not None:
            log = self.sandbox.ctx.topics.partition(topic, partition)
            self.sandbox.call(lambda: setattr(log, "log_start_offset", offset))
            return
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        try:
            admin.delete_records({TopicPartition(topic, partition): offset})
        finally:
            admin.close()

    @classmethod
    def of_real(cls, broker: RealKafka) -> Kafka:
        return cls(broker.bootstrap_servers, broker.version, real=broker)

    @classmethod
    def of_sandbox(cls, broker: SandboxBroker) -> Kafka:
        return cls(broker.bootstrap_servers, "sandbox", sandbox=broker)


def clean(bootstrap: str, timeout: float = 30.0) -> None:
    """Delete every group and every topic but Kafka's own, then wait until they are gone: the next test
    finds an empty cluster. A group that still has members (a test's consumer not closed) is an error."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        groups = sorted({g["group_id"] for g in all_groups(admin, timeout)})
        if groups:
            failed = {g: e for g, e in admin.delete_groups(groups).items()
                      if getattr(e, "errno", 0) and not isinstance(e, GroupIdNotFoundError)}
            assert not failed, f"groups left behind by the test could not be deleted: {failed}"
        topics = [t for t in admin.list_topics() if not t.startswith("__")]
        if topics:
            with suppress(UnknownTopicOrPartitionError):
                admin.delete_topics(topics)
            wait_until(lambda: not set(topics) & set(admin.list_topics()), timeout, f"topics {topics} to be deleted")
    finally:
        admin.close()


def all_groups(admin: KafkaAdminClient, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every group (ListGroups). Right after a broker starts, or after the first commit creates
    `__consumer_offsets`, or after a test deleted many groups, its coordinators may still be loading their
    partitions: ListGroups answers COORDINATOR_LOAD_IN_PROGRESS, which is retriable, so it is asked again."""
    [listed] = wait_until(lambda: _listed(admin), timeout, "a ListGroups answer")
    return listed


def _listed(admin: KafkaAdminClient) -> tuple[list[dict[str, Any]]] | None:
    """(every group,), or None while a coordinator is still loading (ask again)."""
    try:
        return (list(admin.list_groups()),)
    except CoordinatorLoadInProgressError:
        return None


_unavailable: dict[str, str] = {}  # version -> why it cannot run, so a session tries each once


@contextmanager
def kafka_for_session(version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kafka]:
    """The `real_kafka` fixture's broker: a sandbox for "sandbox", else Apache Kafka `version` (skipping the
    test with one line when this machine cannot run it)."""
    if version == "sandbox":
        yield Kafka("", "sandbox")  # each test gets a fresh sandbox (clean_after): it starts in milliseconds
        return
    if version not in _unavailable:
        reason = missing_tools()
        if reason:
            _unavailable[version] = reason
    if version in _unavailable:
        pytest.skip(_unavailable[version])
    broker = RealKafka(version, workdir=tmp_path_factory.mktemp(f"kafka-{version}"), jvm_options=SMALL_JVM)
    try:
        broker.start()
    except Unavailable as exc:
        _unavailable[version] = str(exc)
        pytest.skip(str(exc))
    try:
        yield Kafka.of_real(broker)
    finally:
        broker.stop()


@contextmanager
def clean_after(kafka: Kafka) -> Iterator[Kafka]:
    """`kafka` for one test, then emptied (`clean`) so the next test finds no group or topic of it."""
    if kafka.version == "sandbox":
        with sandbox_broker() as sandbox:
            yield Kafka.of_sandbox(sandbox)
        return
    try:
        yield kafka
    finally:
        clean(kafka.bootstrap_servers)


def produce_topics(bootstrap: str, topics: Mapping[str, int], records_per_partition: int = 5) -> None:
    """Create `topics` (name -> partitions) and give every partition `records_per_partition` records
    through a producer (acks=all), so offsets can be committed past 0; returns once all are written."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1) for name, partitions in topics.items()],
                            wait_for_metadata=True)
    finally:
        admin.close()
    if records_per_partition <= 0:
        return
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [producer.send(name, value=f"{name}-{p}-{i}".encode(), partition=p)
                   for name, partitions in topics.items() for p in range(partitions)
                   for i in range(records_per_partition)]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close()
