"""Fault injection: the sandbox broker misbehaves on purpose, for one API (and optionally one group), the
next N times, so tests can prove what a client does when Kafka does what real clusters do under stress.

Four kinds of fault, each what a real cluster does:

- error: answer with a Kafka error code instead of handling the request (NOT_COORDINATOR while a
  coordinator moves, COORDINATOR_LOAD_IN_PROGRESS while it loads __consumer_offsets, ...). Nothing is
  applied, as Kafka's coordinator applies nothing when it answers so.
- reset: close the connection without answering. `applied=True` handles the request first, so the change
  is made and only its answer is lost (a broker or network failing between the write and the reply).
- delay: answer `seconds` late, beyond the client's request timeout. `applied=True` (the default) handles
  the request at once and holds only the answer back; `applied=False` handles it after the delay, when the
  client has given up on it (Kafka handles a request already queued even if its client went away).
- hold: keep the request until the test releases it; the test learns that it arrived (`Hold.wait`), does
  what it wants meanwhile (kill the client), then `release()`s it (handled and answered) or `drop()`s it
  (connection closed; handled first with `applied=True`).

Every fault may let the first `after` matching requests through (to strike a client's second OffsetFetch,
say); `count` strikes nothing and only counts matching requests, as a witness of what a client sent.

Error codes are Kafka's names or numbers from kafka-python's error table (kafka.errors), never re-typed here.

The table lives on the broker's event loop (the server consults it for every request after decoding);
`Faults` is its thread-safe front for tests (`SandboxBroker.faults`).
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import DescribeClusterResponse
from kafka.protocol.admin.groups import DeleteGroupsResponse, DescribeGroupsResponse
from kafka.protocol.consumer import ListOffsetsResponse
from kafka.protocol.consumer.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorResponse

from .registry import CloseConnection, registered

GROUP_KEY_TYPE = 0  # FindCoordinator key_type of a consumer group


class Kind(enum.StrEnum):
    ERROR = "error"
    RESET = "reset"
    DELAY = "delay"
    HOLD = "hold"
    COUNT = "count"  # not a fault: counts the matching requests, which pass untouched


@dataclass
class Fault:
    """One injected fault. `hits` counts the requests it has struck so far (tests assert it fired)."""

    api_key: int
    api_name: str
    kind: Kind
    group: str | None = None
    times: int | None = 1  # requests still to strike; None: every request until cleared
    error: type[Errors.BrokerResponseError] | None = None
    delay_s: float = 0.0
    applied: bool = False  # reset / delay: whether the request is carried out
    after: int = 0  # let this many matching requests through first
    hits: int = 0
    passed: int = 0

    @property
    def spent(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def describe(self) -> str:
        what = {Kind.ERROR: f"answers {self.error.message if self.error else '?'}",
                Kind.RESET: "resets the connection" + (" after applying" if self.applied else ""),
                Kind.DELAY: f"answers {self.delay_s:g}s late" + ("" if self.applied else ", applied late"),
                Kind.HOLD: "holds the request", Kind.COUNT: "is counted"}[self.kind]
        scope = f" of group {self.group}" if self.group else ""
        count = "every time" if self.times is None else f"{self.times} time(s)"
        return f"{self.api_name}{scope} {what}, {count} ({self.hits} so far)"


class Hold:
    """A held request: `wait()` until one arrives, then `release()` or `drop()` it. Thread-safe."""

    def __init__(self, fault: Fault, loop: asyncio.AbstractEventLoop) -> None:
        self.fault = fault
        self._loop = loop
        self._arrived = threading.Event()
        self._decision: asyncio.Future[tuple[bool, bool]] = loop.create_future()  # (answer, apply)

    def wait(self, timeout: float = 30.0) -> Hold:
        """Until the held request arrived at the broker; AssertionError after `timeout` seconds."""
        if not self._arrived.wait(timeout):
            raise AssertionError(f"no {self.fault.api_name} request arrived within {timeout}s to hold")
        return self

    @property
    def arrived(self) -> bool:
        return self._arrived.is_set()

    def release(self) -> None:
        """Handle the held request and answer it (a client that went away gets nothing)."""
        self._decide(answer=True, apply=True)

    def drop(self, *, applied: bool = False) -> None:
        """Close its connection without an answer; `applied`: carry the request out first."""
        self._decide(answer=False, apply=applied)

    def _decide(self, *, answer: bool, apply: bool) -> None:
        def decide() -> None:
            if not self._decision.done():
                self._decision.set_result((answer, apply))

        self._loop.call_soon_threadsafe(decide)

    async def _hold(self) -> tuple[bool, bool]:
        self._arrived.set()
        return await self._decision


class FaultTable:
    """The broker's faults, on its event loop. The server calls `handle` for every decoded request."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self._holds: dict[int, Hold] = {}

    def add(self, fault: Fault, loop: asyncio.AbstractEventLoop) -> Hold | None:
        self.faults.append(fault)
        if fault.kind is Kind.HOLD:
            hold = Hold(fault, loop)
            self._holds[id(fault)] = hold
            return hold
        return None

    def clear(self) -> None:
        for hold in self._holds.values():
            hold.release()  # nobody is left to decide: let held requests through
        self.faults.clear()
        self._holds.clear()

    def _strike(self, api_key: int, request: Any, api_version: int) -> Fault | None:
        """The fault that strikes this request, if any (the first added); counts it for every counter."""
        struck = None
        for fault in self.faults:
            if fault.api_key != api_key or fault.spent or (struck is not None and fault.kind is not Kind.COUNT):
                continue
            if fault.group is not None and fault.group not in groups_of(api_key, request, api_version):
                continue
            if fault.passed < fault.after:
                fault.passed += 1
                continue
            fault.hits += 1
            if fault.kind is not Kind.COUNT:
                struck = fault
        return struck

    async def handle(self, api_key: int, request: Any, api_version: int, run: Callable[[], Awaitable[Any]]) -> Any:
        """The response to send: the handler's (via `run`), an error answer, or none (CloseConnection)."""
        fault = self._strike(api_key, request, api_version)
        if fault is None:
            return await run()
        if fault.kind is Kind.ERROR:
            assert fault.error is not None
            return error_response(api_key, request, api_version, fault.error)
        if fault.kind is Kind.RESET:
            if fault.applied:
                await run()
            raise CloseConnection(f"fault: {fault.describe()}")
        if fault.kind is Kind.DELAY:
            response = await run() if fault.applied else None
            await asyncio.sleep(fault.delay_s)
            return response if fault.applied else await run()
        answer, apply = await self._holds[id(fault)]._hold()
        response = await run() if apply else None
        if not answer:
            raise CloseConnection(f"fault: {fault.describe()}, dropped")
        return response


class Faults:
    """What tests call (`broker.faults`): inject faults from any thread; each returns its `Fault` (or `Hold`).

        broker.faults.error("OffsetDelete", "NOT_COORDINATOR", group="g", times=2)
        broker.faults.reset("OffsetCommit", applied=True)      # committed, answer lost
        broker.faults.delay("OffsetFetch", 6.0)                # beyond a 5 s request timeout
        held = broker.faults.hold("OffsetDelete").wait()       # the request is at the broker
        held.release()                                         # or held.drop(applied=True)

    `api` is the API's name as Kafka spells it ("OffsetDelete", "FindCoordinator", ...) or its key.
    """

    def __init__(self, call: Callable[[Callable[[], Any]], Any], table: Callable[[], FaultTable]) -> None:
        self._call = call  # runs a function on the broker's loop
        self._table = table

    def error(self, api: str | int, error: str | int, *, group: str | None = None, times: int | None = 1,
              after: int = 0) -> Fault:
        """Answer the next `times` requests with `error` (Kafka's name or code) instead of handling them."""
        key, name = api_key(api)
        if key not in _ERROR_ANSWERS:
            supported = ", ".join(sorted(n for k, n in (api_key(k) for k in _ERROR_ANSWERS)))
            raise ValueError(f"{name} has no error answer here; errors can be injected into {supported} "
                             "(reset, delay and hold work for every API)")
        return self._add(Fault(key, name, Kind.ERROR, _group(key, name, group), times, error=kafka_error(error),
                               after=after))

    def reset(self, api: str | int, *, group: str | None = None, times: int | None = 1, applied: bool = False,
              after: int = 0) -> Fault:
        """Close the connection instead of answering; `applied`: carry the request out first."""
        key, name = api_key(api)
        return self._add(Fault(key, name, Kind.RESET, _group(key, name, group), times, applied=applied, after=after))

    def delay(self, api: str | int, seconds: float, *, group: str | None = None, times: int | None = 1,
              applied: bool = True, after: int = 0) -> Fault:
        """Answer `seconds` late; `applied=False` handles the request only after the delay."""
        if seconds <= 0:
            raise ValueError(f"delay: seconds must be positive, got {seconds}")
        key, name = api_key(api)
        return self._add(Fault(key, name, Kind.DELAY, _group(key, name, group), times, delay_s=seconds,
                               applied=applied, after=after))

    def hold(self, api: str | int, *, group: str | None = None, after: int = 0) -> Hold:
        """Hold the next such request until the returned Hold is released or dropped."""
        key, name = api_key(api)
        fault = Fault(key, name, Kind.HOLD, _group(key, name, group), 1, after=after)

        def add() -> Hold | None:
            return self._table().add(fault, asyncio.get_running_loop())

        hold = self._call(add)
        assert isinstance(hold, Hold)
        return hold

    def count(self, api: str | int, *, group: str | None = None) -> Fault:
        """Count the matching requests from now on (`hits`); they pass untouched. Not a fault: a witness, e.g.
        of how many OffsetDelete requests a client sent."""
        key, name = api_key(api)
        return self._add(Fault(key, name, Kind.COUNT, _group(key, name, group), None))

    def clear(self) -> None:
        """Remove every fault; held requests are released."""
        self._call(lambda: self._table().clear())

    def active(self) -> list[Fault]:
        """The faults not spent yet."""
        return self._call(lambda: [f for f in self._table().faults if not f.spent])  # type: ignore[no-any-return]

    def _add(self, fault: Fault) -> Fault:
        self._call(lambda: self._table().add(fault, asyncio.get_running_loop()))
        return fault


# -- names and groups


def api_key(api: str | int) -> tuple[int, str]:
    """(key, name) of a served API, from its Kafka name or key; ValueError naming the served ones otherwise."""
    for spec in registered():
        name = spec.name.removesuffix("Request")
        if api in (spec.api_key, name):
            return spec.api_key, name
    served = ", ".join(s.name.removesuffix("Request") for s in registered())
    raise ValueError(f"the sandbox broker serves no API {api!r}; it serves {served}")


def kafka_error(error: str | int) -> type[Errors.BrokerResponseError]:
    """The error class of kafka-python's table for a Kafka error name (NOT_COORDINATOR) or code (16)."""
    for cls in Errors.kafka_errors.values():
        if error in (cls.errno, cls.message) and cls is not Errors.NoError:
            return cls  # type: ignore[no-any-return]
    raise ValueError(f"{error!r} is not a Kafka error name or code in kafka-python's table (kafka.errors)")


def _group(key: int, name: str, group: str | None) -> str | None:
    if group is not None and key not in _GROUP_APIS:
        raise ValueError(f"{name} requests name no group; inject the fault without group=")
    return group


def groups_of(api_key: int, request: Any, api_version: int) -> set[str]:
    """The consumer groups a request names (every group API, and FindCoordinator for group keys)."""
    out: set[str] = set()
    for attr in ("group_id", "groups", "groups_names"):
        value = getattr(request, attr, None)
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, list):
            out.update(v if isinstance(v, str) else str(v.group_id) for v in value)
    if api_key == FindCoordinatorResponse.API_KEY:
        key_type = request.key_type if api_version >= 1 else GROUP_KEY_TYPE
        if key_type == GROUP_KEY_TYPE:
            out.update(request.coordinator_keys if api_version >= 4 else [request.key])
    return out


# -- error answers: what Kafka's getErrorResponse builds for each request


def _top_level(response_class: Any) -> Callable[[Any, int, int], Any]:
    return lambda request, version, code: response_class(error_code=code)


def _offset_commit(request: Any, version: int, code: int) -> Any:
    topic_class = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_class = topic_class.OffsetCommitResponsePartition
    return OffsetCommitResponse(topics=[
        topic_class(name=t.name, partitions=[partition_class(partition_index=p.partition_index, error_code=code)
                                             for p in t.partitions]) for t in request.topics])


def _offset_fetch(request: Any, version: int, code: int) -> Any:
    if version >= 8:
        group_class = OffsetFetchResponse.OffsetFetchResponseGroup
        return OffsetFetchResponse(groups=[group_class(group_id=g.group_id, error_code=code, topics=[])
                                           for g in request.groups])
    if version >= 2:
        return OffsetFetchResponse(error_code=code, topics=[])
    topic_class = OffsetFetchResponse.OffsetFetchResponseTopic  # v1: no top-level error, every partition has it
    partition_class = topic_class.OffsetFetchResponsePartition
    return OffsetFetchResponse(topics=[
        topic_class(name=t.name, partitions=[partition_class(partition_index=p, committed_offset=-1, error_code=code)
                                             for p in t.partition_indexes]) for t in request.topics or ()])


def _find_coordinator(request: Any, version: int, code: int) -> Any:
    if version < 4:
        return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponse.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code)
        for k in request.coordinator_keys])


def _describe_groups(request: Any, version: int, code: int) -> Any:
    group_class = DescribeGroupsResponse.DescribedGroup
    return DescribeGroupsResponse(groups=[group_class(error_code=code, group_id=g, group_state="", protocol_type="",
                                                      protocol_data="", members=[]) for g in request.groups])


def _delete_groups(request: Any, version: int, code: int) -> Any:
    result_class = DeleteGroupsResponse.DeletableGroupResult
    return DeleteGroupsResponse(results=[result_class(group_id=g, error_code=code) for g in request.groups_names])


def _list_offsets(request: Any, version: int, code: int) -> Any:
    topic_class = ListOffsetsResponse.ListOffsetsTopicResponse
    partition_class = topic_class.ListOffsetsPartitionResponse
    return ListOffsetsResponse(topics=[
        topic_class(name=t.name, partitions=[partition_class(partition_index=p.partition_index, error_code=code,
                                                             timestamp=-1, offset=-1) for p in t.partitions])
        for t in request.topics])


def _describe_cluster(request: Any, version: int, code: int) -> Any:
    return DescribeClusterResponse(error_code=code, cluster_id="", controller_id=-1, brokers=[])


_ERROR_ANSWERS: dict[int, Callable[[Any, int, int], Any]] = {
    OffsetCommitResponse.API_KEY: _offset_commit,
    OffsetFetchResponse.API_KEY: _offset_fetch,
    FindCoordinatorResponse.API_KEY: _find_coordinator,
    DescribeGroupsResponse.API_KEY: _describe_groups,
    DeleteGroupsResponse.API_KEY: _delete_groups,
    ListOffsetsResponse.API_KEY: _list_offsets,
    DescribeClusterResponse.API_KEY: _describe_cluster,
    # APIs whose error answer is one top-level error_code
    **{int(cls.API_KEY): _top_level(cls) for cls in (OffsetDeleteResponse, JoinGroupResponse, HeartbeatResponse,
                                                     LeaveGroupResponse, SyncGroupResponse)},
}
_GROUP_APIS = frozenset({*(int(cls.API_KEY) for cls in (
    OffsetCommitResponse, OffsetFetchResponse, FindCoordinatorResponse, DescribeGroupsResponse, DeleteGroupsResponse,
    OffsetDeleteResponse, JoinGroupResponse, HeartbeatResponse, LeaveGroupResponse, SyncGroupResponse))})


def error_response(api_key: int, request: Any, api_version: int, error: type[Errors.BrokerResponseError]) -> Any:
    return _ERROR_ANSWERS[api_key](request, api_version, int(error.errno))

