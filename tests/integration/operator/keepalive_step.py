"""One keep-alive pass as the policy's reconciler runs it (reconcilers.keepalive over the backup store on the
API server), for the SIGKILL cell of test_kill_matrix_sandbox_faults.py: run as a process it can be killed
mid-way; imported, the next "process" is the test's own."""

from __future__ import annotations

import logging
import sys

from kafka_offset_operator.adapters.backup_store import BackupStore
from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.adapters.keepalive_store import RebaseBackups, RecommitIntents
from kafka_offset_operator.adapters.kube import Kube, load_config
from kafka_offset_operator.decisions.keepalive import KeepAlivePlan, Method
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.reconcilers.keepalive import KeepAliveResult, audit_body, carry_out, run_pass


def keep_alive_pass(kubeconfig: str, servers: str, group: str, recommit: bool, namespace: str) -> list[KeepAliveResult]:
    """The start of a pass (it resolves what an earlier run left open), then with `recommit` the re-commit of
    GROUP's unchanged offsets (Method.RECOMMIT: the path of a simple or a memberless KIP-848 group), for a
    policy of `namespace` (its backup store's)."""
    policy = {"metadata": {"namespace": namespace, "name": "guard", "uid": "uid-guard"}}
    who = audit_body(policy, "operator", "operator")
    kube = Kube(load_config(kubeconfig))
    try:
        with KafkaAdmin(ConnectionSettings(servers), timeout_ms=30_000) as admin:
            where = (BackupStore(kube), policy, admin.cluster_id(), servers, 3600.0, "operator")
            store, intents = RebaseBackups(*where), RecommitIntents(*where)
            results = run_pass(admin, store, [], 0, 0, who=who, intents=intents)
            if recommit:
                result = carry_out(admin, store, KeepAlivePlan(group, Method.RECOMMIT), who=who, intents=intents)
                results += [result] if result is not None else []
            return results
    finally:
        kube.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s", stream=sys.stdout)
    print(keep_alive_pass(sys.argv[1], sys.argv[2], sys.argv[3], recommit=True, namespace=sys.argv[4]), flush=True)
