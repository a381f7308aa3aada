"""The operator's log as an operator of the operator reads it: one audit line per change, JSON on request,
and no connection chatter or per-timer success lines by default. The process runs on the real kube-apiserver
with the installed ServiceAccount's token (the `real_api` marker) against Apache Kafka (the `kafka`
fixture)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from brokers import make_topics
from installed_api import ADMIN, InstalledApi
from kafka_clients import empty_group
from kafka_under_test import Kafka
from operator_harness import GROUP_VERSION, Kube
from test_run_command import operator_process

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator process on the real API server


def test_json_log_has_one_audit_line_per_change_and_no_chatter(
        kafka: Kafka, kube: Kube, api: InstalledApi, tmp_path: Path) -> None:
    make_topics(kafka, {"orders": 2})
    empty_group(kafka.bootstrap_servers, "logged", {("orders", 0): 3, ("orders", 1): 4})
    body = {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": "logged", "namespace": kube.namespace},
            "spec": {"kafka": {"bootstrapServers": kafka.bootstrap_servers}, "group": "logged",
                     "topics": [{"name": "orders"}], "approved": True, "approvedBy": ADMIN}}
    with operator_process(api.token_kubeconfig, tmp_path, "--log-format", "json", namespace=kube.namespace) as (_proc, _health, _metrics, log):
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
