"""Bad requests get what Kafka gives them (an error response or a closed connection), and the broker goes
on serving other clients. Exact requests are sent over a bare socket; a real client checks the aftermath."""

from __future__ import annotations

import struct
import time
import uuid

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record.util import calc_crc32c
from sandbox_wire_client import WireClient, frame, request_header
from waiting import wait_until

from kafka_sandbox import SandboxBroker
from kafka_sandbox.registry import registered
from kafka_sandbox.topics import build_batch

UNSUPPORTED_VERSION, INVALID_REQUEST, CORRUPT_MESSAGE = 35, 42, 2
OFFSET_OUT_OF_RANGE, FETCH_SESSION_ID_NOT_FOUND, INVALID_RECORD = 1, 70, 87


def still_serves(broker: SandboxBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10_000)
    try:
        assert "__consumer_offsets" in admin.list_topics()
    finally:
        admin.close()


def produce_request(topic: str, batch: bytes, acks: int = 1) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])],
    )


def fetch_request(
    topic: str, offset: int, *, max_wait_ms: int, partition_max_bytes: int = 1 << 20, **kw: int
) -> FetchRequest:
    t = FetchRequest.FetchTopic
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=kw.get("max_bytes", 50 << 20),
        isolation_level=0,
        session_id=kw.get("session_id", 0),
        session_epoch=kw.get("session_epoch", -1),
        topics=[
            t(
                topic=topic,
                partitions=[
                    t.FetchPartition(
                        partition=p,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    )
                    for p in range(kw.get("partitions", 1))
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


# ---- connection-level rules (SocketServer) ----


def test_garbage_frame_closes_only_that_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as bystander, WireClient(broker.port) as bad:
        bad.send_raw(frame(b"\x03\xe7garbage"))  # api key 999
        assert bad.closed_by_broker()
        response = bystander.request(ApiVersionsRequest(), 0)
        assert response.error_code == 0
    still_serves(broker)


def test_unknown_api_key_closes_the_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        # UpdateFeatures (57) is a real Kafka API this broker does not serve.
        client.send_raw(frame(request_header(57, 0, 1, "x", flexible=True) + b"\x00\x00"))
        assert client.closed_by_broker()
    still_serves(broker)


def test_unsupported_version_of_an_api_closes_the_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        client.send_raw(frame(request_header(3, 99, 1, "x", flexible=True) + b"\x01\x00"))
        assert client.closed_by_broker()
    still_serves(broker)


def test_join_group_versions_are_kafka_4s(broker: SandboxBroker) -> None:
    """KIP-896 removed JoinGroup v0-v1 in Kafka 4.0 (JoinGroupRequest.json "validVersions": "2-9"): the
    sandbox, which claims 4.x, advertises 2-9 and treats v1 as any version it does not speak."""
    assert {(s.min_version, s.max_version) for s in registered() if s.api_key == 11} == {(2, 9)}
    with WireClient(broker.port) as client:
        client.send_raw(frame(request_header(11, 1, 1, "old-client", flexible=False) + b"\x00\x01g"))
        assert client.closed_by_broker()
    still_serves(broker)


def test_too_short_for_a_header_closes_the_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        client.send_raw(frame(b"\x00"))
        assert client.closed_by_broker()


@pytest.mark.parametrize("size", [-1, 104_857_601, 2**31 - 1])
def test_oversized_or_negative_frame_closes_before_reading_it(broker: SandboxBroker, size: int) -> None:
    with WireClient(broker.port) as client:
        client.send_raw(struct.pack(">i", size))
        assert client.closed_by_broker()
    still_serves(broker)


def test_body_that_does_not_parse_closes_the_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        # Metadata v12 whose topics array claims more entries than the frame holds.
        client.send_raw(frame(request_header(3, 12, 1, "x", flexible=True) + b"\x7f"))
        assert client.closed_by_broker()
    still_serves(broker)


def test_requests_on_one_connection_are_answered_in_order(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        ids = [client.send(MetadataRequest(topics=None), 12) for _ in range(5)]
        for expected in ids:
            payload = client.read_frame()
            assert payload is not None
            assert struct.unpack_from(">i", payload)[0] == expected


# ---- ApiVersions (KIP-511) ----


def test_api_versions_advertises_exactly_the_registered_handlers(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        for version in range(0, 5):
            response = client.request(
                ApiVersionsRequest(client_software_name="t", client_software_version="1"), version
            )
            assert response.error_code == 0
            advertised = {(k.api_key, k.min_version, k.max_version) for k in response.api_keys}
            assert advertised == {(s.api_key, s.min_version, s.max_version) for s in registered()}


def test_api_versions_of_an_unknown_version_answers_v0_unsupported_version(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        client.send_raw(frame(request_header(18, 99, 7, "future-client", flexible=True) + b"\x01\x01\x00"))
        payload = client.read_frame()
        assert payload is not None
        response = ApiVersionsResponse.decode(payload, version=0, header=True)
        assert response.header.correlation_id == 7
        assert response.error_code == UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 4)]
        # the connection stays usable
        named = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert client.request(named, 3).error_code == 0


def test_api_versions_v3_with_an_invalid_software_name_is_invalid_request(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        request = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0")
        correlation = client.send(request, 3)
        payload = client.read_frame()
        # A v3 body (Kafka answers at the request's version); kafka-python would decode any error as v0,
        # so read it by hand: header v0, error code, empty compact api_keys, throttle, no tags.
        assert (
            payload
            == struct.pack(">ih", correlation, INVALID_REQUEST) + b"\x01" + struct.pack(">i", 0) + b"\x00"
        )


# ---- Produce ----


def test_produce_with_a_corrupt_crc_is_corrupt_message_and_nothing_is_written(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    batch = bytearray(build_batch([(b"k", b"v", 1_700_000_000_000)]))
    batch[-1] ^= 0xFF  # flip a byte of the record: the CRC no longer matches
    with WireClient(broker.port) as client:
        response = client.request(produce_request("t", bytes(batch)), 9)
        partition = response.responses[0].partition_responses[0]
        assert partition.error_code == CORRUPT_MESSAGE
        assert partition.base_offset == -1
        good = client.request(produce_request("t", bytes(build_batch([(b"k", b"v", 1)]))), 9)
        assert good.responses[0].partition_responses[0].base_offset == 0


def test_produce_with_two_batches_is_invalid_record(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    one = bytes(build_batch([(b"k", b"v", 1)]))
    with WireClient(broker.port) as client:
        response = client.request(produce_request("t", one + one), 9)
        assert response.responses[0].partition_responses[0].error_code == INVALID_RECORD


def test_failed_produce_with_acks_0_closes_the_connection(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        client.send(produce_request("no-such-topic", bytes(build_batch([(b"k", b"v", 1)])), acks=0), 9)
        assert client.closed_by_broker()


def test_produce_to_the_offsets_topic_is_refused_for_clients(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        response = client.request(
            produce_request("__consumer_offsets", bytes(build_batch([(b"k", b"v", 1)]))), 9
        )
        assert response.responses[0].partition_responses[0].error_code == 17  # INVALID_TOPIC_EXCEPTION


# ---- Fetch ----


def test_fetch_long_poll_is_woken_by_an_append(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    with WireClient(broker.port) as client:
        client.send(fetch_request("t", 0, max_wait_ms=30_000), 12)
        wait_until(lambda: broker.call(broker.ctx.topics.waiting_fetches) != 0, 10, "the fetch to park", interval=0.01)
        started = time.monotonic()
        broker.append_records("t", 0, [(b"k", b"v", 1)])
        payload = client.read_frame()
        assert time.monotonic() - started < 5  # woken by the append, not by max_wait
    assert payload is not None
    partition = FetchResponse.decode(payload, version=12, header=True).responses[0].partitions[0]
    assert partition.error_code == 0 and partition.high_watermark == 1 and partition.records


def test_fetch_without_data_answers_after_max_wait(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    with WireClient(broker.port) as client:
        started = time.monotonic()
        response = client.request(fetch_request("t", 0, max_wait_ms=200), 12)
        assert time.monotonic() - started >= 0.19
        partition = response.responses[0].partitions[0]
        assert partition.error_code == 0 and partition.high_watermark == 0 and not partition.records


def test_fetch_kip74_returns_a_whole_batch_above_partition_max_bytes(broker: SandboxBroker) -> None:
    broker.create_topic("t", 2)
    for p in (0, 1):
        broker.append_records("t", p, [(b"k%d" % i, b"x" * 100, 1) for i in range(50)])
    with WireClient(broker.port) as client:
        response = client.request(
            fetch_request("t", 0, max_wait_ms=0, partition_max_bytes=10, partitions=2), 12
        )
        first, second = response.responses[0].partitions
        assert len(first.records) > 5000  # the whole 50-record batch, though the limit was 10 bytes
        assert not second.records  # min-one applies to the first partition with data only


def test_fetch_beyond_the_log_end_is_offset_out_of_range(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    with WireClient(broker.port) as client:
        response = client.request(fetch_request("t", 5, max_wait_ms=0), 12)
        assert response.responses[0].partitions[0].error_code == OFFSET_OUT_OF_RANGE


def test_incremental_fetch_without_a_session_is_fetch_session_id_not_found(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    with WireClient(broker.port) as client:
        response = client.request(fetch_request("t", 0, max_wait_ms=0, session_id=12, session_epoch=3), 12)
        assert response.error_code == FETCH_SESSION_ID_NOT_FOUND
        full = client.request(fetch_request("t", 0, max_wait_ms=0, session_epoch=0), 12)
        assert full.error_code == 0 and full.session_id == 0  # sessions are declined, full fetches work


# ---- ListOffsets ----


def test_list_offsets_earliest_latest_and_by_timestamp(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    broker.append_records("t", 0, [(b"a", b"1", 1000), (b"b", b"2", 2000)])
    broker.append_records("t", 0, [(b"c", b"3", 3000)])
    lt = ListOffsetsRequest.ListOffsetsTopic

    def ask(timestamp: int) -> tuple[int, int, int]:
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                lt(name="t", partitions=[lt.ListOffsetsPartition(partition_index=0, timestamp=timestamp)])
            ],
            timeout_ms=1000,
        )
        with WireClient(broker.port) as client:
            p = client.request(request, 9).topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert ask(-2) == (0, 0, -1)  # earliest
    assert ask(-1) == (0, 3, -1)  # latest
    assert ask(-3) == (0, 2, 3000)  # max timestamp
    assert ask(1500) == (0, 1, 2000)  # first record at or after 1500
    assert ask(9999) == (0, -1, -1)  # nothing that late


# ---- OffsetForLeaderEpoch ----


def test_offset_for_leader_epoch(broker: SandboxBroker) -> None:
    broker.create_topic("t", 2)
    broker.append_records("t", 0, [(b"a", b"1", 1), (b"b", b"2", 2)])
    ot = OffsetForLeaderEpochRequest.OffsetForLeaderTopic

    def ask(partition: int, epoch: int, current: int = -1) -> tuple[int, int, int]:
        request = OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                ot(
                    topic="t",
                    partitions=[
                        ot.OffsetForLeaderPartition(
                            partition=partition, current_leader_epoch=current, leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
        with WireClient(broker.port) as client:
            p = client.request(request, 4).topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    assert ask(0, 0) == (0, 0, 2)  # the current epoch ends at the log end
    assert ask(0, 3) == (0, -1, -1)  # an epoch the log never had
    assert ask(1, 0) == (0, -1, -1)  # nothing written: no epoch entries yet
    assert ask(0, 0, current=5) == (75, -1, -1)  # UNKNOWN_LEADER_EPOCH: the client is ahead of us
    assert ask(9, 0)[0] == 3  # UNKNOWN_TOPIC_OR_PARTITION


# ---- DeleteTopics / CreateTopics edge cases ----


def test_delete_topics_by_name_and_id_with_kafkas_refusals(broker: SandboxBroker) -> None:
    for name in ("a", "b", "c"):
        broker.create_topic(name, 1)
    a_id, b_id = (broker.call(lambda n=n: broker.ctx.topics.topic_id(n)) for n in ("a", "b"))
    state = DeleteTopicsRequest.DeleteTopicState
    request = DeleteTopicsRequest(
        topics=[
            state(name=None, topic_id=a_id),  # by id
            state(name="c", topic_id=uuid.UUID(int=0)),
            state(name="c", topic_id=uuid.UUID(int=0)),  # twice: refused, not deleted
            state(name="b", topic_id=b_id),  # name and id together
            state(name=None, topic_id=uuid.uuid4()),  # unknown id
            state(name="zz", topic_id=uuid.UUID(int=0)),  # unknown name
            state(name="__consumer_offsets", topic_id=uuid.UUID(int=0)),
        ],
        timeout_ms=1000,
    )
    with WireClient(broker.port) as client:
        results = client.request(request, 6).responses
    errors = sorted((r.name or "", r.error_code) for r in results)
    assert errors == [("", 100), ("__consumer_offsets", 42), ("a", 0), ("b", 42), ("c", 42), ("zz", 3)]
    assert sorted(broker.call(broker.ctx.topics.names)) == ["__consumer_offsets", "b", "c"]


def test_create_topics_validate_only_and_duplicates(broker: SandboxBroker) -> None:
    ct = CreateTopicsRequest.CreatableTopic

    def topic(name: str, partitions: int = 1, rf: int = 1) -> object:
        return ct(name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[])

    request = CreateTopicsRequest(
        topics=[
            topic("x"),
            topic("y"),
            topic("y"),
            topic("z", partitions=0),
            topic("w", partitions=-1, rf=-1),
        ],
        timeout_ms=1000,
        validate_only=True,
    )
    with WireClient(broker.port) as client:
        results = {r.name: r for r in client.request(request, 7).topics}
    assert {n: r.error_code for n, r in results.items()} == {"x": 0, "y": 42, "z": 37, "w": 0}
    assert results["y"].error_message == "Duplicate topic name."
    assert (results["w"].num_partitions, results["w"].replication_factor) == (1, 1)  # broker defaults
    assert broker.call(broker.ctx.topics.names) == ["__consumer_offsets"]  # validate_only created nothing


# ---- idempotent producers ----


def idempotent_batch(producer_id: int, epoch: int, first_seq: int, count: int = 1) -> bytes:
    """A v2 batch as an idempotent producer writes it: producer id, epoch and base sequence set."""
    batch = build_batch([(b"k%d" % i, b"v", 1) for i in range(count)])
    struct.pack_into(">qhi", batch, 43, producer_id, epoch, first_seq)
    struct.pack_into(">I", batch, 17, calc_crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def test_idempotent_producer_retries_duplicates_and_gaps(broker: SandboxBroker) -> None:
    broker.create_topic("t", 1)
    with WireClient(broker.port) as client:
        pid = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
        assert pid.error_code == 0 and pid.producer_epoch == 0

        def produce(epoch: int, seq: int, count: int = 1) -> tuple[int, int]:
            batch = idempotent_batch(pid.producer_id, epoch, seq, count)
            p = client.request(produce_request("t", batch, acks=-1), 9).responses[0].partition_responses[0]
            return p.error_code, p.base_offset

        assert produce(0, 0, 3) == (0, 0)
        assert produce(0, 3) == (0, 3)
        assert produce(0, 0, 3) == (0, 0)  # a retry of a written batch: its offset, not a second copy
        assert produce(0, 9) == (45, -1)  # OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(1, 5) == (45, -1)  # a new epoch must start at sequence 0
        assert produce(1, 0) == (0, 4)
        assert produce(0, 4) == (47, -1)  # INVALID_PRODUCER_EPOCH: fenced by epoch 1
    assert broker.call(lambda: broker.ctx.topics.partition("t", 0).high_watermark) == 5  # type: ignore[union-attr]


def test_transactional_init_producer_id_is_refused(broker: SandboxBroker) -> None:
    with WireClient(broker.port) as client:
        response = client.request(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000), 4
        )
    assert response.error_code == 16  # NOT_COORDINATOR: the sandbox has no transaction coordinator
