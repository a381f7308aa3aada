"""Policies that cannot run end in a condition, never in a crash loop: a spec with a bad field names the
field and waits for a fix; a missing Secret is retried with backoff; a Kafka outage is Degraded
(KafkaUnavailable) and recovers by itself once the brokers answer again. One (Local) analysis run, so the
policies live once per module and each step is a module fixture one step further than the one before
(refused, Kafka down, Kafka back, the spec fixed); each test proves one thing a step did. Their runs are the
reference analysis (reference_engine.py) in place of Spark: what is tested is what happens around a run;
the Local engine runs in the cancelled-run test below.

Where each part runs (docs/testing.md): the saga stays on kmock's emulator, because three of its specs are
ones the real API server refuses (the emulator's `unvalidated()` stores them, as an older CRD would; the 422
is test_api_validation.py's), and on the sandbox broker, because its outage needs brokers that are down and
then come up at the address the policies name (the session's Apache Kafka cannot go down). The cancelled
Local run reads Apache Kafka (the `kafka` fixture)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from brokers import sandbox_broker
from kafka_clients import admin_commit
from kafka_under_test import Kafka
from operator_harness import (
    GROUP_VERSION,
    NAMESPACE,
    RUN_TIMEOUT,
    Kube,
    Operators,
    condition,
    emulated_cluster,
    fast_options,
)
from reference_engine import reference_engine
from waiting import wait_until

from kafka_offset_operator.engines.job import AnalysisCancelled
from kafka_offset_operator.engines.local import LocalEngine, LocalRequest

pytestmark = pytest.mark.slow  # Kafka timeouts, retries with backoff, a Spark start

PLURAL = "consumergroupoffsetpolicies"
REFUSED = [("bad-mode", "spec.mode", "InvalidSpec"),
           ("bad-interval", "spec.schedule.interval", "InvalidSpec"),
           ("bad-rule", "spec.rules.emptyGroupRetention", "InvalidSpec"),
           ("no-secret", "spec.kafka.sasl.secretRef", "SecretNotFound")]


def policy(kube: Kube, name: str, spec: dict[str, Any]) -> None:
    kube.create(PLURAL, {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                         "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})


def get(kube: Kube, name: str) -> dict[str, Any]:
    return kube.get(GROUP_VERSION, PLURAL, name)


def wait_cond(kube: Kube, name: str, kind: str, status: str, timeout: float = 90.0) -> dict[str, Any]:
    return wait_until(lambda: condition((obj := get(kube, name)).get("status"), kind).get("status") == status and obj, timeout,
                      f"{name}: {kind}={status}")


# -- policies that cannot run, step by step


@dataclass
class Policies:
    kube: Kube
    port: int  # where the brokers are expected (nothing listens until the `recovered` step)

    @property
    def servers(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Policies]:
    """Five policies whose Kafka is down: three with a bad field, one whose Secret is missing, one valid."""
    with sandbox_broker() as probe:
        port = probe.port  # a port that is free again once this broker stops
    servers = f"127.0.0.1:{port}"
    with emulated_cluster() as cluster:
        kube = Kube(cluster.url)
        operators = Operators(fast_options(cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")))
        try:
            operators.start()
            # The API server refuses these (test_api_validation.py); an older CRD, or one without its schema, would not.
            with cluster.unvalidated():
                policy(kube, "bad-mode", {"kafka": {"bootstrapServers": servers}, "mode": "Sometimes"})
                policy(kube, "bad-interval", {"kafka": {"bootstrapServers": servers}, "schedule": {"interval": "soon"}})
                policy(kube, "bad-rule", {"kafka": {"bootstrapServers": servers}, "rules": {"emptyGroupRetention": "3 days"}})
            policy(kube, "no-secret", {"kafka": {"bootstrapServers": servers, "securityProtocol": "SASL_PLAINTEXT",
                                                 "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "missing"}}}})
            policy(kube, "outage", {"kafka": {"bootstrapServers": servers}, "mode": "DryRun"})
            yield Policies(kube, port)
        finally:
            operators.close()


@dataclass
class Refused:
    degraded: dict[str, dict[str, Any]]  # each refused policy once Degraded
    after: dict[str, dict[str, Any]]  # each refused policy once all four were Degraded


@pytest.fixture(scope="module")
def refused(policies: Policies) -> Refused:
    degraded = {name: wait_cond(policies.kube, name, "Degraded", "True") for name, _, _ in REFUSED}
    return Refused(degraded, {name: get(policies.kube, name) for name, _, _ in REFUSED})


@dataclass
class Down:
    outage: dict[str, Any]  # the valid policy once Degraded
    invalid_version: str  # bad-mode's resourceVersion then


@pytest.fixture(scope="module")
def kafka_down(policies: Policies, refused: Refused) -> Down:
    down = wait_cond(policies.kube, "outage", "Degraded", "True")
    return Down(down, get(policies.kube, "bad-mode")["metadata"]["resourceVersion"])


@dataclass
class Up:
    outage: dict[str, Any]  # the valid policy once Ready
    invalid_version: str  # bad-mode's resourceVersion then


@pytest.fixture(scope="module")
def kafka_back(policies: Policies, kafka_down: Down) -> Iterator[Up]:
    """The brokers are back, with a group; they stay up for the steps after this one."""
    with sandbox_broker(port=policies.port) as broker, reference_engine(broker.bootstrap_servers):
        broker.create_topic("orders", 1)
        admin_commit(broker.bootstrap_servers, "replay", {("orders", 0): 0})
        up = wait_cond(policies.kube, "outage", "Ready", "True", RUN_TIMEOUT)
        yield Up(up, get(policies.kube, "bad-mode")["metadata"]["resourceVersion"])


@pytest.fixture(scope="module")
def fixed(policies: Policies, kafka_back: Up) -> dict[str, Any]:
    """bad-mode once its mode is fixed and it ran."""
    policies.kube.patch(GROUP_VERSION, PLURAL, "bad-mode", {"spec": {"mode": "DryRun"}})
    return wait_cond(policies.kube, "bad-mode", "Ready", "True", RUN_TIMEOUT)


def test_a_bad_field_is_named_in_the_ready_condition(refused: Refused) -> None:
    for name, field, reason in REFUSED:
        ready = condition(refused.degraded[name].get("status"), "Ready")
        assert (ready["status"], ready["reason"]) == ("False", reason), name
        assert ready["message"].startswith(f"{field}: "), ready


def test_an_invalid_spec_waits_for_a_new_one_and_a_missing_secret_is_retried(refused: Refused) -> None:
    assert "nextRunTime" not in refused.after["bad-mode"]["status"]  # waits for a new spec, no retries
    assert "nextRunTime" in refused.after["no-secret"]["status"]  # the Secret may appear: retried with backoff


def test_each_refusal_is_one_warning_event_read_back_from_the_api(refused: Refused, policies: Policies) -> None:
    """Posted once per change of the Ready condition (not once per retry), from the visit's own thread."""
    for name, field, reason in REFUSED:
        events = wait_until(lambda name=name: policies.kube.events_for(name), 30, f"{name}'s Event")
        assert [(e["type"], e["reason"]) for e in events] == [("Warning", reason)], name
        assert events[0]["message"].startswith(f"{field}: "), events


def test_a_kafka_outage_is_degraded_naming_the_brokers(kafka_down: Down, policies: Policies) -> None:
    assert condition(kafka_down.outage.get("status"), "Degraded")["reason"] == "KafkaUnavailable"
    assert policies.servers in condition(kafka_down.outage.get("status"), "Degraded")["message"]


def test_the_policy_recovers_once_kafka_answers(kafka_back: Up, policies: Policies) -> None:
    up = kafka_back.outage
    assert condition(up.get("status"), "Degraded")["status"] == "False" and up["status"]["lastRun"]["engine"] == "Local"
    # The outage and the recovery, each one Event (the retries in between posted none).
    wait_until(lambda: len(policies.kube.events_for("outage")) >= 2, 30, "the outage's and the recovery's Events")
    assert [(e["type"], e["reason"]) for e in policies.kube.events_for("outage")] == [
        ("Warning", "KafkaUnavailable"), ("Normal", "AnalysisSucceeded")]


def test_an_invalid_spec_is_left_alone_until_fixed(kafka_down: Down, kafka_back: Up, fixed: dict[str, Any]) -> None:
    # Meanwhile the invalid spec was left alone (no crash loop) ... until it is fixed.
    assert kafka_back.invalid_version == kafka_down.invalid_version
    assert fixed["status"]["lastRun"]["candidates"] == 0


def test_a_cancelled_local_run_takes_its_whole_process_group_down(kafka: Kafka) -> None:
    """What a deleted policy does to its Local run: the worker, its JVM and Spark's Python workers go."""
    engine = LocalEngine()
    cancel = threading.Event()
    outcome: list[BaseException] = []
    kafka.create_topic("orders", 1)
    admin_commit(kafka.bootstrap_servers, "replay", {("orders", 0): 0})

    def run() -> None:
        try:
            engine.run(LocalRequest("cancel-me", kafka.bootstrap_servers, {}, retention_ms=60_000), cancel)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        worker = wait_until(lambda: engine._worker, 10, "the worker to start")
        pgid = worker.proc.pid
        wait_until(lambda: "java" in group_commands(pgid), 60, "Spark's JVM to start")
        cancel.set()
        thread.join(30)
        assert [type(e) for e in outcome] == [AnalysisCancelled]
        wait_until(lambda: group_commands(pgid) == "", 10, "the process group to be gone")
    finally:
        cancel.set()
        engine.close()


def group_commands(pgid: int) -> str:
    """The command lines of the live processes in a process group (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid or fields[0] == "Z":  # state, ppid, pgrp; zombies are gone already
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                found.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, IndexError, ValueError):
            continue
    return "\n".join(found)
