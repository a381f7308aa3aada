"""kafka-python against the sandbox broker: produce, consume by assignment, topic admin, configs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafka.protocol.admin import DescribeConfigsRequest
from sandbox_wire_client import WireClient
from waiting import wait_until

from kafka_sandbox import SandboxBroker


@pytest.fixture
def admin(broker: SandboxBroker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10_000)
    yield client
    client.close()


def consume_all(broker: SandboxBroker, topic: str, partitions: int, expected: int) -> list:  # type: ignore[type-arg]
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, group_id=None, enable_auto_commit=False
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got: list = []  # type: ignore[type-arg]

        def read_all() -> bool:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
            return len(got) >= expected

        wait_until(read_all, 20, f"{expected} records of {topic}", interval=0)
        return got
    finally:
        consumer.close()


def test_idempotent_produce_then_consume_by_assignment(
    broker: SandboxBroker, admin: KafkaAdminClient
) -> None:
    admin.create_topics({"orders": {"num_partitions": 3, "replication_factor": 1}})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)  # idempotent by default
    sent = {}
    for i in range(300):
        key, value = b"k%d" % i, b"v%d" % i
        producer.send("orders", key=key, value=value, partition=i % 3, timestamp_ms=1_700_000_000_000 + i)
        sent[key] = value
    producer.flush(timeout=20)
    producer.close()

    got = consume_all(broker, "orders", 3, 300)
    assert {r.key: r.value for r in got} == sent
    for p in range(3):
        offsets = [r.offset for r in got if r.partition == p]
        assert offsets == list(range(100))  # dense offsets from 0, in order
    assert all(r.timestamp == 1_700_000_000_000 + int(r.key[1:]) for r in got)


def test_end_beginning_and_time_offsets(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    broker.append_records("t", 0, [(b"a", b"1", 1000), (b"b", b"2", 2000), (b"c", b"3", 3000)])
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None)
    try:
        tp = TopicPartition("t", 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 3}
        assert consumer.offsets_for_times({tp: 1500})[tp].offset == 1
        assert consumer.offsets_for_times({tp: 5000})[tp] is None
    finally:
        consumer.close()


@pytest.fixture
def created(admin: KafkaAdminClient) -> dict[str, Any]:
    """CreateTopics' answer for "a.topic": 2 partitions and a retention.ms config."""
    return admin.create_topics({"a.topic": {"num_partitions": 2, "configs": {"retention.ms": "1000"}}})  # type: ignore[no-any-return]


def test_create_topics_answers_per_topic_and_the_topic_is_listed(created: dict[str, Any], admin: KafkaAdminClient) -> None:
    assert created["topics"][0]["error_code"] == 0
    assert created["topics"][0]["num_partitions"] == 2
    assert set(admin.list_topics()) == {"__consumer_offsets", "a.topic"}


def test_describe_topics_tells_the_internal_topic_and_the_leaders(created: dict[str, Any], admin: KafkaAdminClient) -> None:
    described = {t["name"]: t for t in admin.describe_topics()}
    assert described["__consumer_offsets"]["is_internal"] is True
    assert len(described["__consumer_offsets"]["partitions"]) == 4
    assert described["a.topic"]["is_internal"] is False
    assert [p["leader_id"] for p in described["a.topic"]["partitions"]] == [0, 0]


def test_create_partitions_grows_a_topic(created: dict[str, Any], admin: KafkaAdminClient) -> None:
    admin.create_partitions({"a.topic": NewPartitions(total_count=5)})
    assert len({t["name"]: t for t in admin.describe_topics(["a.topic"])}["a.topic"]["partitions"]) == 5


def test_delete_topics_removes_a_topic(created: dict[str, Any], admin: KafkaAdminClient) -> None:
    admin.delete_topics(["a.topic"])
    assert set(admin.list_topics()) == {"__consumer_offsets"}


def test_topic_admin_errors_are_kafkas(admin: KafkaAdminClient) -> None:
    admin.create_topics({"dup": {"num_partitions": 1}})
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics({"dup": {"num_partitions": 1}})
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topics({"three-replicas": {"num_partitions": 1, "replication_factor": 3}})
    with pytest.raises(InvalidTopicError):
        admin.create_topics({"bad name": {"num_partitions": 1}})
    with pytest.raises(InvalidTopicError):
        admin.create_topics({"d_u_p": {"num_partitions": 1}, "d.u.p": {"num_partitions": 1}})
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({"dup": NewPartitions(total_count=1)})
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["never-created"])


def test_describe_configs_of_broker_and_topics(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    broker.create_topic("t", 1, configs={"cleanup.policy": "compact"})
    described = admin.describe_configs(
        [
            ConfigResource(ConfigResourceType.BROKER, "0"),
            ConfigResource(ConfigResourceType.TOPIC, "t"),
            ConfigResource(ConfigResourceType.TOPIC, "__consumer_offsets"),
        ],
        config_filter="all",
    )
    brokers = described["broker"]["0"]
    assert brokers["offsets.retention.minutes"]["value"] == str(7 * 24 * 60)
    assert brokers["offsets.retention.minutes"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert brokers["offsets.topic.num.partitions"]["value"] == "4"
    assert brokers["offsets.retention.check.interval.ms"]["value"] == "600000"
    topic = described["topic"]["t"]
    assert topic["cleanup.policy"] == {
        **topic["cleanup.policy"],
        "value": "compact",
        "config_source": "DYNAMIC_TOPIC_CONFIG",
    }
    assert topic["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert described["topic"]["__consumer_offsets"]["cleanup.policy"]["value"] == "compact"


def test_describe_configs_errors_per_resource(broker: SandboxBroker) -> None:
    # kafka-python's admin hides per-resource errors, so ask over the wire.
    r = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        resources=[
            r(resource_type=2, resource_name="nope", configuration_keys=None),  # unknown topic
            r(resource_type=2, resource_name="bad name", configuration_keys=None),
            r(resource_type=4, resource_name="7", configuration_keys=None),  # another broker
            r(resource_type=4, resource_name="x", configuration_keys=None),
            r(resource_type=32, resource_name="g", configuration_keys=None),  # group configs: not simulated
            r(resource_type=4, resource_name="0", configuration_keys=["offsets.retention.minutes"]),
            r(resource_type=4, resource_name="", configuration_keys=None),  # cluster-wide dynamic defaults
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    with WireClient(broker.port) as client:
        results = client.request(request, 4).results
    assert [res.error_code for res in results] == [3, 17, 42, 42, 42, 0, 0]
    assert results[2].error_message == "Unexpected broker id, expected 0 or empty string, but received 7"
    assert [(c.name, c.value) for c in results[5].configs] == [("offsets.retention.minutes", "10080")]
    assert results[6].configs == []


@pytest.mark.broker(offsets_retention="36h", offsets_partitions=1)
def test_retention_given_in_hours_is_reported_in_minutes(admin: KafkaAdminClient) -> None:
    described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all")
    assert described["broker"]["0"]["offsets.retention.minutes"]["value"] == "2160"


def test_describe_cluster(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    cluster = admin.describe_cluster()
    assert cluster["controller_id"] == 0 and len(cluster["cluster_id"]) == 22
    assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [
        (0, "127.0.0.1", broker.port)
    ]


@pytest.mark.broker(offsets_partitions=1, auto_create_topics=True)
def test_auto_created_topics_when_enabled(broker: SandboxBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    producer.send("made-on-demand", b"v").get(timeout=20)
    producer.close()
    assert broker.call(lambda: broker.ctx.topics.partition_count("made-on-demand")) == 1


def test_topics_are_not_auto_created_by_default(broker: SandboxBroker) -> None:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None)
    try:
        assert not consumer.partitions_for_topic("not-there")
    finally:
        consumer.close()
    assert not broker.call(lambda: broker.ctx.topics.exists("not-there"))
