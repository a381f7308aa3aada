"""The operator's log as an operator of the operator reads it: one audit line per change, JSON on request,
and no connection chatter or per-timer success lines by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from brokers import make_topics
from kafka_clients import empty_group
from operator_harness import GROUP_VERSION, NAMESPACE, Kube
from test_run_command import operator_process

from kafka_sandbox import SandboxBroker

pytestmark = pytest.mark.slow  # see the module docstring: real processes or a Spark run


def test_json_log_has_one_audit_line_per_change_and_no_chatter(
        broker: SandboxBroker, kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    make_topics(broker, {"orders": 2})
    empty_group(broker.bootstrap_servers, "logged", {("orders", 0): 3, ("orders", 1): 4})
    body = {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "logged", "namespace": NAMESPACE},
            "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers}, "group": "logged",
                     "topics": [{"name": "orders"}], "approved": True}}
    with operator_process(kubeconfig, tmp_path, "--log-format", "json") as (_proc, _health, _metrics, log):
        kube.create("offsetdeletions", body)
        kube.wait_for_status("logged", lambda s: s.get("phase") == "Succeeded", 30, "Succeeded")
        kube.patch(GROUP_VERSION, "offsetdeletions", "logged", {"spec": {"restore": True}})
        kube.wait_for_status("logged", lambda s: s.get("phase") == "Restored", 30, "Restored")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]  # every line is JSON
    audit = [line["message"] for line in lines if line["logger"] == "kafka_offset_operator.audit"]
    assert [m.split()[0] for m in audit] == ["BackedUp", "OffsetDelete", "OffsetCommit"]
    assert "before=[orders:0=3,orders:1=4] after=[none]" in audit[1]
    assert "before=[none] after=[orders:0=3,orders:1=4]" in audit[2]
    assert [line for line in lines if line["logger"].startswith("kafka.") and line["level"] == "INFO"] == []
    assert not [line for line in lines if "succeeded" in line["message"] and line["logger"] == "kopf.objects"]
