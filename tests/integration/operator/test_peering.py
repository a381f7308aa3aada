"""One actor at a time (docs/safety.md): real `kafka-offset-operator run` processes sharing the real
kube-apiserver (the install applied, each process with the installed ServiceAccount's token:
installed_api.py) and Apache Kafka (the session's real broker; the sandbox with KOO_KAFKA_VERSIONS=sandbox),
peering through Kopf's ClusterKopfPeering as the Deployment's pods do. On the real API server because nothing
here needs fault injection: the peering object is created, watched and kept alive under a real RBAC
authorizer and real watches.

The module is a saga, one fixture per phase, each test proving one thing a phase did:

1. two processes start together: the one with the higher priority (the older) acts, the other waits; every
   OffsetDeletion is backed up and deleted once, by the active one;
2. a rollout: a third process starts (the new pod), then the active one gets SIGTERM (the old pod); the
   older of the other two takes over at once (the leaver removes its keep-alive), not after the peering
   lifetime, and finishes new work while the newcomer waits;
3. the active one is SIGKILLed; the newcomer takes over within the peering lifetime and finishes new work.

"Acted" is read from the audit log (one line per backup and per OffsetDelete, adapters/audit.py) and from
the Kubernetes Events (BackedUp, Succeeded), counted across every process.
"""

from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from brokers import make_topics
from installed_api import ADMIN, InstalledApi, can_i, installed_api
from kafka_clients import committed, empty_group
from kafka_under_test import Kafka, clean_after
from kube_cluster import ApiError, ControlPlane
from operator_harness import GROUP_VERSION, Kube
from operator_process import free_port, get
from waiting import wait_until

from kafka_offset_operator.model.api import DEFAULT_PEERING

pytestmark = pytest.mark.slow

# --peering-lifetime: how long a SIGKILLed process still counts as alive (docs/operator.md). Keep-alives come
# every second at this lifetime, so a loaded machine has 4 s of slack before a live process looks gone.
LIFETIME = 5
GROUP = "peers"
TOPICS = [f"t{i}" for i in range(8)]  # one OffsetDeletion per topic of group GROUP
PEERING_PATH = f"/apis/kopf.dev/v1/clusterkopfpeerings/{DEFAULT_PEERING}"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ", re.M)


@dataclass
class Process:
    """`run` in a process whose Kopf identity is `name` (POD_ID, as the Deployment sets it)."""

    name: str
    popen: subprocess.Popen[bytes]
    health: int
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def healthy(self) -> bool:
        return get(f"http://127.0.0.1:{self.health}/healthz")[0] == 200

    def resumed_at(self) -> list[float]:
        """When Kopf resumed this process after a pause (epoch seconds, from the log's local timestamps)."""
        out = []
        for line in self.text().splitlines():
            if "Resuming operations after the pause" in line and (m := STAMP.match(line)):
                out.append(datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
        return out


@dataclass
class World:
    broker: Kafka
    api: InstalledApi
    kube: Kube
    kubeconfig: Path
    home: Path
    processes: list[Process] = field(default_factory=list)

    def start(self, name: str) -> Process:
        health = free_port()
        log = self.home / f"{name}.log"
        popen = subprocess.Popen(
            [sys.executable, "-m", "kafka_offset_operator", "run", "--namespace", self.api.namespace, "--kubeconfig",
             str(self.kubeconfig), "--health-port", str(health), "--metrics-port", "0", "--retry-interval", "0.3",
             "--peering-lifetime", str(LIFETIME)],
            stdout=log.open("wb"), stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": "/nonexistent", "POD_ID": name},
        )
        process = Process(name, popen, health, log)
        self.processes.append(process)
        return process

    def peers(self) -> dict[str, dict[str, Any]]:
        """The live keep-alives in the peering object: identity -> priority, lifetime, lastseen."""
        return dict(self.kube.request("GET", PEERING_PATH).get("status") or {})

    def registered(self, *processes: Process) -> bool:
        try:
            peers = self.peers()
        except Exception:  # the object is created by the first process to start
            return False
        return all(p.healthy() and p.name in peers for p in processes)

    def delete_topic(self, topic: str) -> str:
        """An approved OffsetDeletion of `topic`'s offsets in group GROUP; its name."""
        name = f"del-{topic}"
        self.kube.create("offsetdeletions", {
            "apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name},
            "spec": {"kafka": {"bootstrapServers": self.broker.bootstrap_servers}, "group": GROUP,
                     "topics": [{"name": topic}], "approved": True, "approvedBy": ADMIN}})
        return name

    def succeeded(self, names: list[str], timeout: float) -> None:
        for name in names:
            self.kube.wait_for_status(name, lambda s: s.get("phase") == "Succeeded", timeout, f"{name} Succeeded")

    def acted(self, name: str) -> dict[str, int]:
        """Per process, how many audit lines of a change (backup, OffsetDelete) name deletion `name`."""
        pattern = re.compile(rf"kafka_offset_operator\.audit: (BackedUp|OffsetDelete OffsetDeletion) {self.api.namespace}/{name} ")
        return {p.name: len(pattern.findall(p.text())) for p in self.processes}

    def events(self, name: str, reason: str) -> int:
        return sum(1 for e in self.kube.events_for(name) if e.get("reason") == reason)


def stop(processes: list[Process]) -> None:
    running = [p for p in processes if p.popen.poll() is None]
    for process in running:
        process.popen.send_signal(signal.SIGTERM)
    for process in running:
        try:
            process.popen.wait(30)
        except subprocess.TimeoutExpired:
            process.popen.kill()
            process.popen.wait()


@pytest.fixture(scope="module")
def world(real_kafka: Kafka, real_cluster: ControlPlane, real_crds: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("peering")
    with clean_after(real_kafka) as broker, installed_api(real_cluster, home) as api:
        make_topics(broker, dict.fromkeys(TOPICS, 1))
        empty_group(broker.bootstrap_servers, GROUP, {(t, 0): 5 for t in TOPICS})
        try:  # an earlier test's processes may have left it: the first process here must create it
            real_cluster.api.request("DELETE", PEERING_PATH)
        except ApiError as exc:
            if exc.status != 404:
                raise
        w = World(broker, api, api.kube, api.token_kubeconfig, home)
        try:
            yield w
        finally:
            stop(w.processes)


@dataclass
class Pair:
    active: Process
    standby: Process
    names: list[str]


@pytest.fixture(scope="module")
def pair(world: World) -> Pair:
    """Phase 1: processes "op-a" and "op-b" started together; three deletions once both keep alive."""
    a, b = world.start("op-a"), world.start("op-b")
    wait_until(lambda: world.registered(a, b), 60, "both processes healthy and in the peering object")
    peers = world.peers()
    active, standby = (a, b) if peers["op-a"]["priority"] > peers["op-b"]["priority"] else (b, a)
    names = [world.delete_topic(t) for t in TOPICS[:3]]
    world.succeeded(names, 90)
    return Pair(active, standby, names)


def test_only_the_higher_priority_process_acts(world: World, pair: Pair) -> None:
    for name in pair.names:
        assert world.acted(name) == {pair.active.name: 2, pair.standby.name: 0}, name
        assert (world.events(name, "BackedUp"), world.events(name, "Succeeded")) == (1, 1), name
    assert committed(world.broker.bootstrap_servers, GROUP).keys().isdisjoint({(t, 0) for t in TOPICS[:3]})


@dataclass
class Rollout:
    handover_s: float  # from SIGTERM to the other process resuming
    exit_code: int
    names: list[str]
    successor: Process
    newcomer: Process
    priorities: tuple[int, int]  # the successor's and the newcomer's


@pytest.fixture(scope="module")
def rollout(world: World, pair: Pair) -> Rollout:
    """Phase 2: "op-c" starts (a rollout's new pod); the active process gets SIGTERM, as the old pod does;
    two deletions after."""
    c = world.start("op-c")
    wait_until(lambda: world.registered(pair.active, pair.standby, c), 60, "op-c healthy and in the peering object")
    peers = world.peers()
    sent = time.time()
    pair.active.popen.send_signal(signal.SIGTERM)
    exit_code = pair.active.popen.wait(30)
    resumed = wait_until(lambda: [t for t in pair.standby.resumed_at() if t >= sent - 1], 30, "the standby to resume")
    names = [world.delete_topic(t) for t in TOPICS[3:5]]
    world.succeeded(names, 90)
    return Rollout(resumed[0] - sent, exit_code, names, pair.standby, c,
                   (peers[pair.standby.name]["priority"], peers[c.name]["priority"]))


def test_a_leaving_process_hands_over_at_once(rollout: Rollout) -> None:
    print(f"handover after SIGTERM: {rollout.handover_s:.2f} s")  # shown with -s: docs/operator.md quotes it
    assert rollout.exit_code == 0
    # Its keep-alive is removed as it exits: no wait for the peering lifetime.
    assert rollout.handover_s < LIFETIME


def test_the_successor_finishes_new_work_alone(world: World, rollout: Rollout) -> None:
    # The default priority comes from the start time: the older process acts next (decisions/peering.py).
    assert rollout.priorities[0] > rollout.priorities[1]
    for name in rollout.names:
        assert {k: v for k, v in world.acted(name).items() if v} == {rollout.successor.name: 2}, name


@dataclass
class Crash:
    waited: list[str]  # done while the newcomer waited
    takeover_s: float  # from SIGKILL to the newcomer resuming
    names: list[str]  # done after the crash
    killed: Process
    newcomer: Process


@pytest.fixture(scope="module")
def crash(world: World, rollout: Rollout) -> Crash:
    """Phase 3: one deletion while "op-c" waits; the active process is SIGKILLed (no goodbye: its keep-alive
    stays until it expires); two deletions after."""
    active, c = rollout.successor, rollout.newcomer
    waited = [world.delete_topic(TOPICS[5])]
    world.succeeded(waited, 90)
    killed_at = time.time()
    active.popen.kill()
    active.popen.wait(10)
    resumed = wait_until(lambda: [t for t in c.resumed_at() if t >= killed_at - 1], LIFETIME + 30, "op-c to resume")
    names = [world.delete_topic(t) for t in TOPICS[6:8]]
    world.succeeded(names, 90)
    return Crash(waited, resumed[0] - killed_at, names, active, c)


def test_a_newcomer_waits_while_the_active_process_lives(world: World, crash: Crash) -> None:
    for name in crash.waited:
        assert {k: v for k, v in world.acted(name).items() if v} == {crash.killed.name: 2}, name


def test_a_crashed_process_is_replaced_within_the_peering_lifetime(crash: Crash) -> None:
    # Its last keep-alive was at most a second before the kill (they come every second at this lifetime);
    # the waiting process re-checks when that keep-alive expires. A second of slack for a loaded machine.
    print(f"takeover after SIGKILL: {crash.takeover_s:.2f} s (lifetime {LIFETIME} s)")
    assert crash.takeover_s <= LIFETIME + 1


def test_the_newcomer_finishes_new_work_alone(world: World, crash: Crash) -> None:
    for name in crash.names:
        assert {k: v for k, v in world.acted(name).items() if v} == {crash.newcomer.name: 2}, name
        assert (world.events(name, "BackedUp"), world.events(name, "Succeeded")) == (1, 1), name
    assert committed(world.broker.bootstrap_servers, GROUP) == {}


def test_the_clusterrole_allows_what_peering_does(world: World, crash: Crash) -> None:
    """The processes ran with the installed ServiceAccount's token only, and the peering object (deleted
    before they started) exists with their keep-alives: the real authorizer let them create, watch and patch
    it. The authorizer agrees, and grants nothing more on it than the ClusterRole says."""
    assert crash.newcomer.name in world.peers()
    namespace = world.api.namespace
    for verb in ("create", "get", "list", "watch", "patch"):
        assert can_i(world.api.plane, namespace, verb, "clusterkopfpeerings", "kopf.dev"), verb
    assert not can_i(world.api.plane, namespace, "delete", "clusterkopfpeerings", "kopf.dev")
