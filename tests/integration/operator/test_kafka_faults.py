"""The Kafka fault matrix (docs/safety.md, "Fault matrix"): every Kafka step of an OffsetDeletion and of its
restore, struck by each fault the sandbox broker can inject (kafka_sandbox/faults.py), against the operator
under Kopf; and a real operator process SIGKILLed while its OffsetDelete is held at the broker, then a fresh
one. The faults are the broker's (the sandbox stays for them); the Kubernetes side needs none, so it is the
real kube-apiserver (the `real_api` marker: the install applied, the operator on the installed
ServiceAccount's token: installed_api.py).

Every case ends with the documented outcome: the deletion (or restore) ends once, with the right offsets
in Kafka; a stored backup exists before anything was deleted; the change request was sent as often as the
fault explains and no more (a `count` witness at the broker); and an Event said what happened meanwhile.
One broker, namespace and operator serve the matrix; each case has its own group and OffsetDeletion."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics, sandbox_broker
from installed_api import InstalledApi
from kafka_clients import admin_commit, committed, empty_group
from operator_harness import GROUP_VERSION, Kube, Operators
from test_offset_deletion import deletion
from test_offset_deletion_safety import backups
from test_run_command import operator_process
from waiting import wait_until

from kafka_offset_operator.model.backups import Action
from kafka_sandbox import SandboxBroker
from kafka_sandbox.faults import Fault

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # operator end to end, with request timeouts

TIMEOUT_MS = 1500  # the operator's Kafka request timeout here; a "timeout" answers later than this
LATE_S = TIMEOUT_MS / 1000 + 1.0
OFFSETS = {("orders", 0): 3, ("orders", 1): 4}  # every case's group starts with these; orders is deleted
KEPT = {("kept", 0): 7}  # and this, which no case deletes


@dataclass
class World:
    broker: SandboxBroker
    kube: Kube  # admin, in the install's namespace for the module (api.namespace)


@pytest.fixture(scope="module")
def world(api: InstalledApi) -> Iterator[World]:
    with sandbox_broker() as broker:
        make_topics(broker, {"orders": 2, "kept": 1})
        operators = Operators(api.options(kafka_timeout_ms=TIMEOUT_MS))
        operators.start()
        try:
            yield World(broker, api.kube)
        finally:
            operators.close()


# -- the faults: what the broker does to the request, and what a client can know about it

Inject = Callable[[SandboxBroker, str, str | None, int], Fault]
FAULTS: dict[str, Inject] = {
    "NOT_COORDINATOR": lambda b, api, g, after: b.faults.error(api, "NOT_COORDINATOR", group=g, after=after),
    "COORDINATOR_LOAD_IN_PROGRESS": lambda b, api, g, after: b.faults.error(
        api, "COORDINATOR_LOAD_IN_PROGRESS", group=g, after=after),
    "COORDINATOR_NOT_AVAILABLE": lambda b, api, g, after: b.faults.error(
        api, "COORDINATOR_NOT_AVAILABLE", group=g, after=after),
    "REQUEST_TIMED_OUT": lambda b, api, g, after: b.faults.error(api, "REQUEST_TIMED_OUT", group=g, after=after),
    "reset": lambda b, api, g, after: b.faults.reset(api, group=g, after=after),  # the request is lost
    "reset-applied": lambda b, api, g, after: b.faults.reset(api, group=g, after=after, applied=True),  # its answer
    "timeout": lambda b, api, g, after: b.faults.delay(api, LATE_S, group=g, after=after),  # applied, answer late
    "timeout-late": lambda b, api, g, after: b.faults.delay(api, LATE_S, group=g, after=after, applied=False),
}
# What the operator's Event says meanwhile: Kafka's error, or for a read whose answer was lost the client's
# error; a request that changes offsets and whose answer was lost (or whose write timed out at the
# coordinator) is neither a success nor a failure: "answer was lost", re-read next time.
READ_SAID = {"reset": "CONNECTION_FAILED", "timeout": "REQUEST_TIMED_OUT"}
CHANGE_SAID = {"reset": "CONNECTION_FAILED", "reset-applied": "answer was lost", "timeout": "answer was lost",
               "timeout-late": "answer was lost", "REQUEST_TIMED_OUT": "answer was lost"}
# How often a request that changes offsets reaches Kafka in all, per fault of it (error answers: twice). A
# late request lands after the client gave up: the retry's re-read may still find the offsets (a second
# OffsetDelete of the same backed-up offsets) or find them gone (none).
CHANGE_SENT = {"reset": {2}, "reset-applied": {1}, "timeout": {1}, "timeout-late": {1, 2}}


@dataclass(frozen=True)
class Step:
    name: str  # as the matrix in docs/safety.md names it
    api: str
    after: int  # requests of this API (for the case's group) that pass before the fault strikes
    grouped: bool = True  # the request names the group (else the fault strikes the API's next request)


CONNECT = Step("connect (Metadata)", "Metadata", 0, grouped=False)
CLUSTER_ID = Step("cluster id (DescribeCluster)", "DescribeCluster", 0, grouped=False)
COORDINATOR = Step("coordinator (FindCoordinator)", "FindCoordinator", 0)
BACKUP_DESCRIBE = Step("backup: DescribeGroups", "DescribeGroups", 0)
BACKUP_FETCH = Step("backup: OffsetFetch", "OffsetFetch", 0)
RECHECK_DESCRIBE = Step("re-check: DescribeGroups", "DescribeGroups", 1)
RECHECK_FETCH = Step("re-check: OffsetFetch", "OffsetFetch", 1)
DELETE = Step("delete: OffsetDelete", "OffsetDelete", 0)
COMMIT = Step("restore: OffsetCommit", "OffsetCommit", 0)

READ_FAULTS = ["NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "reset", "timeout"]
DELETION_MATRIX = [
    (CONNECT, "reset"), (CONNECT, "timeout"),
    (CLUSTER_ID, "REQUEST_TIMED_OUT"), (CLUSTER_ID, "reset"), (CLUSTER_ID, "timeout"),
    (COORDINATOR, "COORDINATOR_NOT_AVAILABLE"), (COORDINATOR, "COORDINATOR_LOAD_IN_PROGRESS"), (COORDINATOR, "reset"),
    (COORDINATOR, "timeout"),
    *[(BACKUP_DESCRIBE, f) for f in READ_FAULTS], *[(BACKUP_FETCH, f) for f in READ_FAULTS],
    *[(RECHECK_DESCRIBE, f) for f in READ_FAULTS[::2]], *[(RECHECK_FETCH, f) for f in READ_FAULTS[::2]],
    *[(DELETE, f) for f in FAULTS],
]
RESTORE_MATRIX = [(COMMIT, f) for f in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
                                        "REQUEST_TIMED_OUT", "reset", "reset-applied", "timeout")]


def case_id(step: Step, fault: str) -> str:
    return f"{step.api}{step.after or ''}-{fault}"


def reasons(kube: Kube, name: str) -> list[str]:
    return [e["reason"] for e in kube.events_for(name)]


def said_meanwhile(kube: Kube, name: str) -> list[str]:
    """The KafkaUnavailable Warnings the deletion got: they say what happened."""
    return [e["message"] for e in kube.events_for(name) if e["reason"] == "KafkaUnavailable"]


def backups_of(kube: Kube, name: str, action: Action) -> list[Any]:
    return [b for b in backups(kube).values() if b.requested_by.name == name and b.action is action]


@pytest.mark.parametrize(("step", "fault"), DELETION_MATRIX, ids=[case_id(s, f) for s, f in DELETION_MATRIX])
def test_a_fault_at_a_deletion_step_is_retried_and_the_deletion_succeeds_once(
        world: World, step: Step, fault: str) -> None:
    broker, kube = world.broker, world.kube
    name = f"f-{case_id(step, fault)}".lower().replace("_", "-")
    admin_commit(broker.bootstrap_servers, name, {**OFFSETS, **KEPT})  # a group of standalone consumers: fast
    sent = broker.faults.count("OffsetDelete", group=name)
    struck = FAULTS[fault](broker, step.api, name if step.grouped else None, step.after)
    try:
        kube.create("offsetdeletions", deletion(name, name, [{"name": "orders"}],
                                                kafka={"bootstrapServers": broker.bootstrap_servers}))
        status = kube.wait_for_phase(name, "Succeeded", "PartiallyFailed", "Failed", timeout=30)
        assert struck.hits == 1, f"the fault never struck: {struck.describe()}"
    finally:
        broker.faults.clear()
    assert status["phase"] == "Succeeded", status
    assert (status["deleted"], status["failed"]) == (2, 0)
    assert committed(broker.bootstrap_servers, name) == KEPT
    [stored] = backups_of(kube, name, Action.DELETE)  # one backup, taken before the delete
    assert {tp: c.offset for tp, c in stored.offsets.items()} == OFFSETS
    assert sent.hits in (CHANGE_SENT.get(fault, {2}) if step is DELETE else {1}), "OffsetDelete requests sent"
    wait_until(lambda: reasons(kube, name).count("Succeeded") == 1, what="one Succeeded Event")
    assert reasons(kube, name).count("BackedUp") == 1 and reasons(kube, name).count("Succeeded") == 1
    said = said_meanwhile(kube, name)
    if step is CONNECT:
        assert said == [] or any("CONNECTION_FAILED" in m or "REQUEST_TIMED_OUT" in m for m in said), said
    else:
        expected = (CHANGE_SAID if step is DELETE else READ_SAID).get(fault, fault)
        assert any(expected in m for m in said), said


@pytest.mark.parametrize(("step", "fault"), RESTORE_MATRIX, ids=[case_id(s, f) for s, f in RESTORE_MATRIX])
def test_a_fault_at_the_restore_commit_is_retried_and_restores_once(world: World, step: Step, fault: str) -> None:
    broker, kube = world.broker, world.kube
    name = f"r-{case_id(step, fault)}".lower().replace("_", "-")
    admin_commit(broker.bootstrap_servers, name, {**OFFSETS, **KEPT})
    kube.create("offsetdeletions", deletion(name, name, [{"name": "orders"}],
                                            kafka={"bootstrapServers": broker.bootstrap_servers}))
    kube.wait_for_phase(name, "Succeeded", timeout=30)
    sent = broker.faults.count("OffsetCommit", group=name)
    struck = FAULTS[fault](broker, step.api, name, step.after)
    try:
        kube.patch(GROUP_VERSION, "offsetdeletions", name, {"spec": {"restore": True}})
        status = kube.wait_for_phase(name, "Restored", timeout=30)
        assert struck.hits == 1, f"the fault never struck: {struck.describe()}"
    finally:
        broker.faults.clear()
    assert status["restored"] == 2 and all(r["status"] == "Restored" for r in status["restoreResults"]), status
    assert committed(broker.bootstrap_servers, name) == {**OFFSETS, **KEPT}
    assert len(backups_of(kube, name, Action.RESTORE)) == 1
    assert sent.hits in CHANGE_SENT.get(fault, {2}), "OffsetCommit requests sent"
    wait_until(lambda: reasons(kube, name).count("Restored") == 1, what="one Restored Event")
    said = said_meanwhile(kube, name)
    assert any(CHANGE_SAID.get(fault, fault) in m for m in said), said


# -- a real process killed while its OffsetDelete is held at the broker


@pytest.mark.parametrize("applied", [True, False], ids=["applied-after-the-kill", "never-applied"])
def test_sigkill_while_the_offset_delete_is_held_then_a_fresh_process_ends_it_right(
        broker: SandboxBroker, api: InstalledApi, kube: Kube, tmp_path: Path, applied: bool) -> None:
    """The first process sent its OffsetDelete (status.deleteStartTime written, backup stored) and dies before
    the answer. Kafka then applies the request (as it does with a request already queued when its client
    goes away) or never got it. The second process re-reads: the offsets are gone (applied) or still at their
    backed-up value (not applied, deleted now); never deleted without the backup, never sent again once gone."""
    name = f"kill-{'applied' if applied else 'lost'}"
    make_topics(broker, {"orders": 2, "kept": 1})
    empty_group(broker.bootstrap_servers, name, {**OFFSETS, **KEPT})
    sent = broker.faults.count("OffsetDelete", group=name)
    held = broker.faults.hold("OffsetDelete", group=name)
    with operator_process(api.token_kubeconfig, tmp_path, namespace=kube.namespace) as (proc, _h, _m, _log):
        kube.create("offsetdeletions", deletion(name, name, [{"name": "orders"}],
                                                kafka={"bootstrapServers": broker.bootstrap_servers}))
        held.wait(30)
        proc.kill()
        assert proc.wait(10) == -signal.SIGKILL
    status = kube.deletion(name)["status"]
    assert status["phase"] == "Running" and status.get("deleteStartTime"), status
    [stored] = backups_of(kube, name, Action.DELETE)
    assert {tp: c.offset for tp, c in stored.offsets.items()} == OFFSETS
    if applied:
        held.release()  # handled; its answer goes to a dead client
        wait_until(lambda: committed(broker.bootstrap_servers, name) == KEPT, 10, "the held delete applied")
    else:
        held.drop()
    with operator_process(api.token_kubeconfig, tmp_path, namespace=kube.namespace):
        status = kube.wait_for_phase(name, "Succeeded", "PartiallyFailed", "Failed", timeout=30)
    assert status["phase"] == "Succeeded" and status["deleted"] == 2, status
    assert committed(broker.bootstrap_servers, name) == KEPT
    assert backups_of(kube, name, Action.DELETE) == [stored]
    assert sent.hits == (1 if applied else 2)
    messages = {r["message"] for r in status["results"] if r["status"] == "Deleted" and "message" in r}
    assert messages == ({"deleted (gone when re-read after an earlier attempt sent the OffsetDelete)"} if applied
                        else set())
