"""The operator process's peak memory with the Job engine (issue 21: its pod's memory must not grow with the
size of `__consumer_offsets`, because the scan runs in the Job's own pod).

    .venv/bin/python bench/operator_memory.py                       # small (40 groups) and large (4000 groups)
    .venv/bin/python bench/operator_memory.py --groups 40 --groups 20000

For each size: a sandbox broker whose `__consumer_offsets` holds the synthetic records of that many groups
(kafka_sandbox.synthetic, committed two days ago), the install applied to the real kube-apiserver and
kube-controller-manager (tests/support/kube_cluster.py, as the Job engine's tests use it), the kubelet
stand-in running each Job pod's command (spark-submit, job.py: its memory is the Job pod's, not the
operator's), and `kafka-offset-operator run --default-engine Job` as its own process with the installed
ServiceAccount's token. One policy including every group runs once (DryRun); the operator's peak resident set
(VmHWM, /proc/PID/status) is read when the run is in its status, beside its RSS then and the Job pod's.

Prints one line per size and a JSON summary. Nothing is asserted: docs/install.md holds the figures and the
memory request and limit the install sets from them.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "integration" / "operator")]

from installed_api import OPERATOR_USER, apply_file, installed_api  # noqa: E402
from job_standin import JobStandIn  # noqa: E402
from kube_cluster import control_plane  # noqa: E402
from kube_fixtures import kubectl  # noqa: E402
from operator_harness import GROUP_VERSION  # noqa: E402

from kafka_offsets_model.raw import OFFSETS_TOPIC  # noqa: E402
from kafka_sandbox import SandboxBroker  # noqa: E402
from kafka_sandbox.synthetic import DAY_MS, generate  # noqa: E402

POLICIES = "consumergroupoffsetpolicies"
IMAGE = "ghcr.io/example/kafka-offset-operator-spark:bench"
POD_SA = "kafka-offset-spark"  # manifests/spark/driver-rbac.yaml
OFFSETS_PARTITIONS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_kib(pid: int, field: str) -> int:
    """VmHWM (peak RSS) or VmRSS of a process, in KiB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def seeded_broker(groups: int, now_ms: int) -> tuple[SandboxBroker, int, int]:
    """A started sandbox broker holding `groups` groups' records in __consumer_offsets: (broker, records, bytes)."""
    topic = generate(4242, groups=groups, partitions=OFFSETS_PARTITIONS, commits=2, now_ms=now_ms - 2 * DAY_MS)
    broker = SandboxBroker(offsets_retention="7d", offsets_partitions=OFFSETS_PARTITIONS).start()
    for name in sorted(topic.existing_topics):
        broker.create_topic(name, 3)
    size = 0
    for partition in range(OFFSETS_PARTITIONS):
        rows = [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition]
        size += sum(len(k or b"") + len(v or b"") for k, v, _ in rows)
        broker.append_records(OFFSETS_TOPIC, partition, rows)
    return broker, len(topic.records), size


def one_size(groups: int, workdir: Path) -> dict[str, Any]:
    now_ms = int(time.time() * 1000)
    broker, records, size = seeded_broker(groups, now_ms)
    try:
        with control_plane(workdir / "kube") as plane, installed_api(plane, workdir) as api:
            out = kubectl(plane.kubeconfig, "label", "namespace", api.namespace,
                          "pod-security.kubernetes.io/enforce=restricted")
            assert out.returncode == 0, out.stderr
            rbac = (ROOT / "manifests" / "spark" / "driver-rbac.yaml").read_text().replace(
                "namespace: team-a", f"namespace: {api.namespace}")
            (workdir / "pod-rbac.yaml").write_text(rbac)
            apply_file(plane, workdir / "pod-rbac.yaml")
            standin = JobStandIn(api.kube, plane, workdir).start()
            log = (workdir / "operator.log").open("wb")
            env = {**os.environ, "KAFKA_OFFSET_OPERATOR_SPARK_IMAGE": IMAGE}
            operator = subprocess.Popen(
                [str(Path(sys.executable).parent / "kafka-offset-operator"), "run", "--namespace", api.namespace,
                 "--kubeconfig", str(api.token_kubeconfig), "--default-engine", "Job", "--user", OPERATOR_USER,
                 "--health-port", str(free_port()), "--metrics-port", str(free_port()), "--retry-interval", "1",
                 "--scan-share-window", "off", "--standalone"],
                stdout=log, stderr=subprocess.STDOUT, env=env)
            try:
                api.kube.create(POLICIES, {
                    "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
                    "metadata": {"name": "everything", "namespace": api.namespace},
                    "spec": {"kafka": {"bootstrapServers": broker.bootstrap_servers},
                             "rules": {"emptyGroupRetention": "1d", "standaloneRetention": "1d"},
                             "analysis": {"brokerRetention": "7d", "job": {"serviceAccount": POD_SA}}}})
                start = time.monotonic()
                deadline = start + 1200
                status: dict[str, Any] = {}
                while time.monotonic() < deadline:
                    assert operator.poll() is None, (workdir / "operator.log").read_text()[-3000:]
                    status = api.kube.get(GROUP_VERSION, POLICIES, "everything").get("status") or {}
                    if status.get("lastRun"):
                        break
                    time.sleep(1)  # polling cadence; the deadline decides
                else:
                    raise AssertionError(f"no run within 20 minutes: {status}")
                return {"groups": groups, "records": records, "bytes": size, "run_s": round(time.monotonic() - start),
                        "operator_peak_mib": round(proc_kib(operator.pid, "VmHWM") / 1024, 1),
                        "operator_rss_mib": round(proc_kib(operator.pid, "VmRSS") / 1024, 1),
                        "jobs": len(standin.pods), "job_exits": list(standin.exits.values()),
                        "last_run": {k: status["lastRun"].get(k) for k in ("engine", "recordsScanned", "groupsSeen", "offsets", "candidates")
                                     if k in status["lastRun"]}}
            finally:
                operator.terminate()
                operator.wait(60)
                log.close()
                standin.stop()
    finally:
        broker.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, action="append", help="groups in __consumer_offsets (repeatable)")
    args = parser.parse_args()
    results = []
    for groups in args.groups or [40, 4000]:
        with tempfile.TemporaryDirectory(prefix="koo-memory-") as tmp:
            result = one_size(groups, Path(tmp))
        results.append(result)
        print(f"{groups} groups, {result['records']} records ({result['bytes'] / 1e6:.1f} MB) in __consumer_offsets: "
              f"operator peak RSS {result['operator_peak_mib']} MiB (RSS after the run {result['operator_rss_mib']} "
              f"MiB), run {result['run_s']} s, Job pods {result['jobs']} exits {result['job_exits']}", flush=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
