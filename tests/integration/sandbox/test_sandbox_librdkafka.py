"""librdkafka, an independent Kafka client implementation: confluent-kafka and kcat against the sandbox."""

from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from waiting import wait_until

from kafka_sandbox import SandboxBroker

QUIET = {"log_level": 0}  # librdkafka logs every disconnect at shutdown otherwise


def test_confluent_admin_create_and_list_topics(broker: SandboxBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, **QUIET})
    for future in admin.create_topics([NewTopic("c1", 3, 1)]).values():
        future.result(10)
    [again] = admin.create_topics([NewTopic("c1", 3, 1)]).values()
    with pytest.raises(KafkaException) as refused:
        again.result(10)
    assert refused.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    metadata = admin.list_topics(timeout=10)
    assert {name: len(t.partitions) for name, t in metadata.topics.items()} == {
        "__consumer_offsets": 4,
        "c1": 3,
    }
    assert [b.id for b in metadata.brokers.values()] == [0]
    cluster = admin.describe_cluster().result(10)
    assert cluster.cluster_id == metadata.cluster_id and cluster.controller.id == 0


def test_confluent_produce_then_consume_by_assignment(broker: SandboxBroker) -> None:
    broker.create_topic("c2", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True, **QUIET})
    for i in range(200):
        producer.produce("c2", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
    assert producer.flush(20) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "unused",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    try:
        consumer.assign([TopicPartition("c2", p, OFFSET_BEGINNING) for p in range(2)])
        got = []

        def read_all() -> bool:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.partition(), message.offset(), message.key(), message.value()))
            return len(got) >= 200

        wait_until(read_all, 20, "200 records of c2", interval=0)
        assert sorted(k for _, _, k, _ in got) == sorted(b"k%d" % i for i in range(200))
        assert sorted(o for p, o, _, _ in got if p == 0) == list(range(100))
        assert consumer.get_watermark_offsets(TopicPartition("c2", 1), timeout=10) == (0, 100)
    finally:
        consumer.close()


def run_kcat(kcat: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([kcat, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.kcat
def test_kcat_metadata_listing(broker: SandboxBroker, kcat: str) -> None:
    broker.create_topic("listed", 2)
    metadata = json.loads(run_kcat(kcat, "-b", broker.bootstrap_servers, "-L", "-J"))
    assert [b["id"] for b in metadata["brokers"]] == [0]
    topics = {t["topic"]: t for t in metadata["topics"]}
    assert set(topics) == {"__consumer_offsets", "listed"}
    assert [p["leader"] for p in topics["listed"]["partitions"]] == [0, 0]


@pytest.mark.kcat
def test_kcat_produce_and_consume(broker: SandboxBroker, kcat: str) -> None:
    broker.create_topic("k", 1)
    lines = "".join(f"key{i}:value{i}\n" for i in range(20))
    run_kcat(kcat, "-b", broker.bootstrap_servers, "-P", "-t", "k", "-p", "0", "-K:", stdin=lines)
    out = run_kcat(
        kcat,
        "-b",
        broker.bootstrap_servers,
        "-C",
        "-t",
        "k",
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%k=%s@%o\n",
    )
    assert out.splitlines() == [f"key{i}=value{i}@{i}" for i in range(20)]
