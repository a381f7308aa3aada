"""The real-Kafka harness itself (tests/support/real_kafka.py, kafka_under_test.py, java_clients.py): the broker
answers on both listeners with the users it was formatted with, the session fixture hands each test an empty
cluster, the jars are resolved once, Kafka's Java consumer joins groups with both rebalance protocols, a Kafka
Streams application runs with the classic protocol (every version) and the streams protocol (4.1+), and a
share consumer (KIP-932) reads through a share group (4.1+). Every check goes over Kafka's wire protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from java_clients import JavaConsumer, JavaShareConsumer, JavaStreams
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka, all_groups
from real_kafka import NEWEST, VERSIONS, resolve, versions_under_test
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.matrix]  # CI runs this module on every version


def real(kafka: Kafka) -> Kafka:
    if not kafka.is_real:
        pytest.skip("about Apache Kafka's harness; KOO_KAFKA_VERSIONS=sandbox runs the sandbox")
    return kafka


def secured_admin(kafka: Kafka, mechanism: str) -> KafkaAdminClient:
    """A refused password is tested through our CLI (test_cli_secured_kafka.py): kafka-python's admin retries
    its bootstrap for 30 s first."""
    s = kafka.secured
    user, password = (s.plain_user, s.plain_password) if mechanism == "PLAIN" else (s.scram_user, s.scram_password)
    config: dict[str, Any] = {"security_protocol": "SASL_SSL", "sasl_mechanism": mechanism,
                              "sasl_plain_username": user, "sasl_plain_password": password,
                              "ssl_cafile": str(s.ca_file), "request_timeout_ms": 10_000}
    return KafkaAdminClient(bootstrap_servers=s.bootstrap_servers, **config)


def test_versions_setting_reads_newest_all_and_lists() -> None:
    assert versions_under_test("") == [NEWEST]
    assert versions_under_test("all") == list(VERSIONS)
    assert versions_under_test("3.9, 4.1.2,sandbox") == ["3.9.2", "4.1.2", "sandbox"]


def test_topics_and_commits_are_visible_on_both_listeners(kafka: Kafka) -> None:
    real(kafka)
    make_topics(kafka, {"orders": 2}, records_per_partition=3)
    admin_commit(kafka.bootstrap_servers, "billing", {("orders", 0): 2, ("orders", 1): 3})
    assert committed(kafka.bootstrap_servers, "billing") == {("orders", 0): 2, ("orders", 1): 3}
    for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"):
        admin = secured_admin(kafka, mechanism)
        try:
            raw = admin.list_group_offsets({"billing": None})["billing"]
            assert {(tp.topic, tp.partition): o.offset for tp, o in raw.items()} == {("orders", 0): 2, ("orders", 1): 3}
        finally:
            admin.close()
    # The records are there: a consumer reads 3 from each partition.
    consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
        ends = consumer.end_offsets([TopicPartition("orders", 0), TopicPartition("orders", 1)])
        assert set(ends.values()) == {3}
    finally:
        consumer.close()


def test_each_test_finds_an_empty_cluster_part_one(kafka: Kafka) -> None:
    make_topics(kafka, {"left-behind": 1})
    admin_commit(kafka.bootstrap_servers, "left-behind", {("left-behind", 0): 1})


def test_each_test_finds_an_empty_cluster_part_two(kafka: Kafka) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        assert [t for t in admin.list_topics() if not t.startswith("__")] == []
        assert all_groups(admin) == []  # a cold broker's coordinators may still be loading: asked again
    finally:
        admin.close()


def test_a_second_resolve_resolves_nothing(real_kafka: Kafka) -> None:
    said: list[str] = []
    libs = resolve(real(real_kafka).version, said.append)
    assert said == [] and any(libs.glob("kafka_2.13-*.jar"))


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_the_java_consumer_joins_and_commits_with_each_protocol(kafka: Kafka, protocol: str) -> None:
    real(kafka)
    make_topics(kafka, {"orders": 2})
    with JavaConsumer(kafka.bootstrap_servers, f"java-{protocol}", ["orders"], protocol=protocol,
                      version=kafka.version) as consumer:
        assert consumer.wait_assigned(2) == {("orders", 0), ("orders", 1)}
        consumer.commit({("orders", 0): 4, ("orders", 1): 1})
    assert committed(kafka.bootstrap_servers, f"java-{protocol}") == {("orders", 0): 4, ("orders", 1): 1}
    listed = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        types = {g["group_id"]: g.get("group_type") for g in listed.list_groups()}
    finally:
        listed.close()
    assert f"java-{protocol}" in types
    if kafka.version >= "4":
        assert types[f"java-{protocol}"] == protocol


def minor(version: str) -> tuple[int, int]:
    major, minor_ = version.split(".")[:2]
    return int(major), int(minor_)


def group_types(kafka: Kafka) -> dict[str, str | None]:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        return {g["group_id"]: g.get("group_type") for g in admin.list_groups()}
    finally:
        admin.close()


@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_a_streams_application_commits_its_source_and_repartition_topics(kafka: Kafka, protocol: str,
                                                                         tmp_path: Path) -> None:
    """Streams' group is named by its application.id; with `streams` (KIP-1071, StreamsConfig.group.protocol
    from 4.1; the tests' broker enables it, real_kafka.group_settings / format_features) ListGroups says
    `streams`, with `classic` it is a classic `consumer` group. Either way it commits its source topic and its
    repartition topic (a source of the count's subtopology) up to their ends."""
    real(kafka)
    if protocol == "streams" and minor(kafka.version) < (4, 1):
        pytest.skip(f"the streams rebalance protocol (KIP-1071) is in Kafka 4.1+, not {kafka.version}")
    make_topics(kafka, {"words": 2}, records_per_partition=3)
    app = f"counts-{protocol}"
    with JavaStreams(kafka.bootstrap_servers, app, ["words"], tmp_path, protocol=protocol,
                     version=kafka.version) as streams:
        streams.wait_state("RUNNING")

        def all_committed() -> dict[tuple[str, int], int] | None:
            found = committed(kafka.bootstrap_servers, app)
            sources = {tp: o for tp, o in found.items() if tp[0] == "words"}
            repartition = {tp: o for tp, o in found.items() if tp[0].endswith("-repartition")}
            return found if sources == {("words", 0): 3, ("words", 1): 3} and repartition else None

        wait_until(all_committed, 90, f"{app} to commit its source and repartition topics")
        types = group_types(kafka)
        if kafka.version >= "4":
            assert types[app] == ("streams" if protocol == "streams" else "classic"), types


def test_a_share_consumer_reads_through_a_share_group_which_has_no_committed_offsets(kafka: Kafka) -> None:
    """KIP-932: the share group (`share.version=1` at format from 4.1, real_kafka.format_features) delivers the
    topic's records; ListGroups says `share`; OffsetFetch finds nothing committed (a share group's progress
    is its share-partition state in __share_group_state, not offsets in __consumer_offsets)."""
    real(kafka)
    if minor(kafka.version) < (4, 1):
        pytest.skip(f"share groups are enabled on the tests' broker from 4.1 (share.version=1), not {kafka.version}")
    make_topics(kafka, {"jobs": 2}, records_per_partition=4)
    with JavaShareConsumer(kafka.bootstrap_servers, "workers", ["jobs"], version=kafka.version) as share:
        share.wait_received(8)
        assert group_types(kafka)["workers"] == "share"
        assert committed(kafka.bootstrap_servers, "workers") == {}
