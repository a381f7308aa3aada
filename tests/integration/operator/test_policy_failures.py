"""Policies that cannot run end in a condition, never in a crash loop: a spec with a bad field names the
field and waits for a fix; a missing Secret is retried with backoff; a Kafka outage is Degraded
(KafkaUnavailable) and recovers by itself once the brokers answer again. One (Local) analysis run."""

from __future__ import annotations

import os
import threading
from typing import Any

from operator_harness import GROUP_VERSION, NAMESPACE, EmulatedCluster, Kube
from policy_scenario import admin_commit

from kafka_offset_operator.engines.job import Cancelled
from kafka_offset_operator.engines.local import LocalEngine, LocalRequest
from kafka_sandbox import SandboxBroker

PLURAL = "consumergroupoffsetpolicies"
RUN_TIMEOUT = 240.0


def policy(kube: Kube, name: str, spec: dict[str, Any]) -> None:
    kube.create(PLURAL, {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                         "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})


def get(kube: Kube, name: str) -> dict[str, Any]:
    return kube.get(GROUP_VERSION, PLURAL, name)


def cond(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), {})


def wait_cond(kube: Kube, name: str, kind: str, status: str, timeout: float = 30.0) -> dict[str, Any]:
    return kube.wait_for(lambda: cond(obj := get(kube, name), kind).get("status") == status and obj, timeout,
                         f"{name}: {kind}={status}")


def test_bad_fields_are_named_and_a_kafka_outage_recovers(cluster: EmulatedCluster, kube: Kube, start_operator: Any) -> None:
    with SandboxBroker(offsets_partitions=4) as probe:
        port = probe.port  # a port that is free again once this broker stops
    servers = f"127.0.0.1:{port}"
    start_operator()
    # The API server refuses these (test_api_validation.py); an older CRD, or one without its schema, would not.
    with cluster.unvalidated():
        policy(kube, "bad-mode", {"kafka": {"bootstrapServers": servers}, "mode": "Sometimes"})
        policy(kube, "bad-interval", {"kafka": {"bootstrapServers": servers}, "schedule": {"interval": "soon"}})
        policy(kube, "bad-rule", {"kafka": {"bootstrapServers": servers}, "rules": {"emptyGroupRetention": "3 days"}})
    policy(kube, "no-secret", {"kafka": {"bootstrapServers": servers, "securityProtocol": "SASL_PLAINTEXT",
                                         "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "missing"}}}})
    policy(kube, "outage", {"kafka": {"bootstrapServers": servers}, "mode": "DryRun"})

    for name, field, reason in [("bad-mode", "spec.mode", "InvalidSpec"),
                                ("bad-interval", "spec.schedule.interval", "InvalidSpec"),
                                ("bad-rule", "spec.rules.emptyGroupRetention", "InvalidSpec"),
                                ("no-secret", "spec.kafka.sasl.secretRef", "SecretNotFound")]:
        obj = wait_cond(kube, name, "Degraded", "True")
        ready = cond(obj, "Ready")
        assert (ready["status"], ready["reason"]) == ("False", reason), name
        assert ready["message"].startswith(f"{field}: "), ready
    assert "nextRunTime" not in get(kube, "bad-mode")["status"]  # waits for a new spec, no retries
    assert "nextRunTime" in get(kube, "no-secret")["status"]  # the Secret may appear: retried with backoff

    down = wait_cond(kube, "outage", "Degraded", "True")
    assert cond(down, "Degraded")["reason"] == "KafkaUnavailable"
    assert servers in cond(down, "Degraded")["message"]
    invalid_version = get(kube, "bad-mode")["metadata"]["resourceVersion"]

    with SandboxBroker(offsets_partitions=4, port=port) as broker:  # the brokers are back, with a group
        broker.create_topic("orders", 1)
        admin_commit(broker, "replay", {("orders", 0): 0})
        up = wait_cond(kube, "outage", "Ready", "True", RUN_TIMEOUT)
        assert cond(up, "Degraded")["status"] == "False" and up["status"]["lastRun"]["engine"] == "Local"

        # Meanwhile the invalid spec was left alone (no crash loop) ... until it is fixed.
        assert get(kube, "bad-mode")["metadata"]["resourceVersion"] == invalid_version
        kube.patch(GROUP_VERSION, PLURAL, "bad-mode", {"spec": {"mode": "DryRun"}})
        fixed = wait_cond(kube, "bad-mode", "Ready", "True", RUN_TIMEOUT)
        assert fixed["status"]["lastRun"]["candidates"] == 0


def test_a_cancelled_local_run_takes_its_whole_process_group_down() -> None:
    """What a deleted policy does to its Local run: the worker, its JVM and Spark's Python workers go."""
    engine = LocalEngine()
    cancel = threading.Event()
    outcome: list[BaseException] = []
    with SandboxBroker(offsets_partitions=4) as broker:
        broker.create_topic("orders", 1)
        admin_commit(broker, "replay", {("orders", 0): 0})

        def run() -> None:
            try:
                engine.run(LocalRequest("cancel-me", broker.bootstrap_servers, {}, retention_ms=60_000), cancel)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            worker = Kube.wait_for(lambda: engine._worker, 10, "the worker to start")
            pgid = worker.proc.pid
            Kube.wait_for(lambda: "java" in group_commands(pgid), 60, "Spark's JVM to start")
            cancel.set()
            thread.join(30)
            assert [type(e) for e in outcome] == [Cancelled]
            Kube.wait_for(lambda: group_commands(pgid) == "", 10, "the process group to be gone")
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
