"""Fault injection on the sandbox broker (kafka_sandbox/faults.py), over the wire with kafka-python's admin
client and a bare socket client: each fault does what it says, to the requests it names, as often as asked,
and then the broker is healthy again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kafka.errors as kerrors
import pytest
from brokers import make_topics
from kafka import KafkaAdminClient, TopicPartition
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.structs import OffsetAndMetadata
from kafka_clients import committed, empty_group
from sandbox_wire_client import WireClient
from waiting import wait_until

from kafka_sandbox import SandboxBroker

TIMEOUT_MS = 1500


@pytest.fixture
def admin(broker: SandboxBroker) -> Iterator[KafkaAdminClient]:
    """Group "g" with orders/0 at 3 and orders/1 at 4, and an admin client with a short request timeout."""
    make_topics(broker, {"orders": 2})
    empty_group(broker.bootstrap_servers, "g", {("orders", 0): 3, ("orders", 1): 4})
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=TIMEOUT_MS)
    yield client
    client.close()


O0, O1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
BEFORE = {("orders", 0): 3, ("orders", 1): 4}

# How kafka-python's admin client shows an error answer of each API: by raising it, or in its result.
CALLS: dict[str, Callable[[KafkaAdminClient], Any]] = {
    "OffsetDelete": lambda a: a.delete_group_offsets("g", [O0]),
    "OffsetFetch": lambda a: a.list_group_offsets({"g": None}),
    "DescribeGroups": lambda a: a.describe_groups(["g"])["g"]["error"],
    "DeleteGroups": lambda a: a.delete_groups(["g"])["g"],
    "OffsetCommit": lambda a: a.alter_group_offsets("g", {O0: OffsetAndMetadata(1, "", None)})[O0],
    "DescribeCluster": lambda a: a.describe_cluster(),
}


def kafka_name(shown: Any) -> str:
    """Kafka's name of an error as kafka-python shows it: raised, as a class, by class name or as
    DescribeGroups' "[Error 16] ..." text."""
    if isinstance(shown, BaseException):
        shown = type(shown)
    elif isinstance(shown, str):
        code = shown.removeprefix("[Error ").split("]")[0]
        shown = kerrors.for_code(int(code)) if code.isdigit() else getattr(kerrors, shown)
    return str(shown.message)


@pytest.mark.parametrize(("api", "error"), [
    (api, ["NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"][i % 2]) for i, api in enumerate(sorted(CALLS))])
def test_an_error_answer_changes_nothing_and_strikes_once(
        broker: SandboxBroker, admin: KafkaAdminClient, api: str, error: str) -> None:
    fault = broker.faults.error(api, error)
    try:
        shown: Any = CALLS[api](admin)
    except kerrors.BrokerResponseError as exc:
        shown = exc
    assert kafka_name(shown) == error
    assert fault.hits == 1 and broker.faults.active() == []
    assert committed(broker.bootstrap_servers, "g") == BEFORE  # nothing applied
    CALLS[api](admin)  # the next one is handled
    assert fault.hits == 1


def test_find_coordinator_and_list_offsets_answer_errors(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    fault = broker.faults.error("FindCoordinator", 15, group="g")  # by code: COORDINATOR_NOT_AVAILABLE
    fresh = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=TIMEOUT_MS)
    try:
        with pytest.raises(kerrors.CoordinatorNotAvailableError):
            fresh.list_group_offsets({"g": None})
    finally:
        fresh.close()
    assert fault.hits == 1
    broker.faults.error("ListOffsets", "NOT_LEADER_FOR_PARTITION")  # kafka-python's name
    lt = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
        lt(name="orders", partitions=[lt.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    with WireClient(broker.port) as client:
        answer = client.request(request, 9).topics[0].partitions[0]
        assert (answer.error_code, answer.offset) == (kerrors.NotLeaderForPartitionError.errno, -1)
        assert client.request(request, 9).topics[0].partitions[0].offset == 5


def test_a_group_fault_strikes_only_that_group_and_times_counts(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    empty_group(broker.bootstrap_servers, "other", {("orders", 0): 1})
    fault = broker.faults.error("OffsetFetch", "NOT_COORDINATOR", group="g", times=2)
    assert admin.list_group_offsets({"other": None})["other"][O0].offset == 1
    assert fault.hits == 0
    for _ in range(2):
        with pytest.raises(kerrors.NotCoordinatorError):
            admin.list_group_offsets({"g": None})
    assert admin.list_group_offsets({"g": None})["g"][O1].offset == 4
    assert fault.hits == 2 and fault.spent


def test_every_time_until_cleared(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    fault = broker.faults.error("DescribeGroups", "COORDINATOR_LOAD_IN_PROGRESS", times=None)
    for _ in range(3):
        assert "CoordinatorLoadInProgress" in admin.describe_groups(["g"])["g"]["error"]
    broker.faults.clear()
    assert admin.describe_groups(["g"])["g"]["error"] is None and fault.hits == 3


@pytest.mark.parametrize("applied", [False, True], ids=["lost-request", "lost-answer"])
def test_a_reset_closes_the_connection_with_or_without_applying(
        broker: SandboxBroker, admin: KafkaAdminClient, applied: bool) -> None:
    fault = broker.faults.reset("OffsetDelete", group="g", applied=applied)
    with pytest.raises(kerrors.KafkaConnectionError):
        admin.delete_group_offsets("g", [O0])
    assert fault.hits == 1
    expected = {("orders", 1): 4} if applied else BEFORE
    assert committed(broker.bootstrap_servers, "g") == expected


def test_a_late_answer_times_the_client_out_after_applying(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    broker.faults.delay("OffsetDelete", TIMEOUT_MS / 1000 + 1)
    started = time.monotonic()
    with pytest.raises(kerrors.RequestTimedOutError):
        admin.delete_group_offsets("g", [O0])
    assert time.monotonic() - started >= TIMEOUT_MS / 1000
    assert committed(broker.bootstrap_servers, "g") == {("orders", 1): 4}


def test_a_late_request_is_applied_after_the_client_gave_up(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    broker.faults.delay("OffsetDelete", TIMEOUT_MS / 1000 + 0.5, applied=False)
    with pytest.raises(kerrors.RequestTimedOutError):
        admin.delete_group_offsets("g", [O0])
    assert committed(broker.bootstrap_servers, "g") == BEFORE  # not yet
    wait_until(lambda: committed(broker.bootstrap_servers, "g") == {("orders", 1): 4}, 10, "the late delete")


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_held_request_waits_for_the_test_then_is_answered(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    hold = broker.faults.hold("OffsetDelete", group="g")
    assert not hold.arrived
    thread, out = _in_thread(lambda: admin.delete_group_offsets("g", [O0]))
    hold.wait(10)
    assert committed(broker.bootstrap_servers, "g") == BEFORE and thread.is_alive()  # held: not applied
    hold.release()
    thread.join(10)
    assert out == [{O0: kerrors.NoError}] and committed(broker.bootstrap_servers, "g") == {("orders", 1): 4}


@pytest.mark.parametrize("applied", [False, True])
def test_a_held_request_can_be_dropped(broker: SandboxBroker, admin: KafkaAdminClient, applied: bool) -> None:
    hold = broker.faults.hold("OffsetDelete")
    thread, out = _in_thread(lambda: admin.delete_group_offsets("g", [O0]))
    hold.wait(10).drop(applied=applied)
    thread.join(10)
    assert isinstance(out[0], kerrors.KafkaConnectionError)
    assert committed(broker.bootstrap_servers, "g") == ({("orders", 1): 4} if applied else BEFORE)


def test_clear_lets_a_held_request_through(broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    hold = broker.faults.hold("OffsetFetch")
    thread, out = _in_thread(lambda: admin.list_group_offsets({"g": None}))
    hold.wait(10)
    broker.faults.clear()
    thread.join(10)
    assert out[0]["g"][O1].offset == 4


def test_metadata_can_be_reset_but_has_no_error_answer(broker: SandboxBroker) -> None:
    broker.faults.reset("Metadata")
    with WireClient(broker.port) as client:
        client.send(MetadataRequest(topics=None), 1)
        assert client.closed_by_broker()


@pytest.mark.parametrize(("call", "message"), [
    (lambda b: b.faults.error("Metadata", "NOT_COORDINATOR"), "Metadata has no error answer here"),
    (lambda b: b.faults.reset("Metadata", group="g"), "Metadata requests name no group"),
    (lambda b: b.faults.error("OffsetDelete", "NO_SUCH_ERROR"), "'NO_SUCH_ERROR' is not a Kafka error"),
    (lambda b: b.faults.hold("Offsetdelete"), "serves no API 'Offsetdelete'"),
    (lambda b: b.faults.delay("OffsetFetch", 0), "seconds must be positive"),
])
def test_bad_faults_are_refused_naming_the_problem(broker: SandboxBroker, call: Callable[[SandboxBroker], Any],
                                                   message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(broker)


def test_after_lets_the_first_requests_through_and_count_only_counts(
        broker: SandboxBroker, admin: KafkaAdminClient) -> None:
    sent = broker.faults.count("OffsetFetch", group="g")
    fault = broker.faults.error("OffsetFetch", "NOT_COORDINATOR", group="g", after=1)
    assert admin.list_group_offsets({"g": None})["g"][O0].offset == 3  # the first passes
    with pytest.raises(kerrors.NotCoordinatorError):
        admin.list_group_offsets({"g": None})
    assert admin.list_group_offsets({"g": None})["g"][O0].offset == 3
    assert (fault.hits, sent.hits) == (1, 3)
    assert broker.faults.active() == [sent]  # a counter is never spent
