"""A parent SIGKILLed while it holds the real control plane, a real Kafka broker or an operator process leaves
no server behind.

pytest killed by CI's timeout, or a demo killed with `kill -9`, never runs its `stop()`: without the
parent-death signal (kafka_offset_demo/processes.py, prctl(PR_SET_PDEATHSIG)) etcd, kube-apiserver,
kube-controller-manager and the broker's JVM lived on in their own sessions, holding ports and memory. Each
test starts the servers in a child Python process (from its main thread, as pytest and the demo do), reads
their pids, SIGKILLs that process and polls, with a deadline, until every server is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import kube_build
import pytest
from real_kafka import missing_tools, versions_under_test
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                    reason="the parent-death signal is Linux's")]

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parents[1] / "support"


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie nobody reaped yet counts as gone: it holds no port or memory)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def pids_then_kill(script: str, workdir: Path, start_timeout: float) -> list[int]:
    """Run `script` in a child Python (it starts servers, writes their pids as JSON to `workdir`/pids.json,
    then waits forever), SIGKILL the child once the pids are written, and wait until none of them runs."""
    pids_file = workdir / "pids.json"
    log = (workdir / "parent.log").open("wb")
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(workdir)], stdout=log,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  p for p in (str(SUPPORT), str(HERE), os.environ.get("PYTHONPATH")) if p)})
    log.close()
    pids: list[int] = []
    try:
        def written() -> bool:
            if parent.poll() is not None:
                raise AssertionError(f"the parent exited with {parent.returncode}:\n"
                                     f"{(workdir / 'parent.log').read_text(errors='replace')[-3000:]}")
            return pids_file.exists() and pids_file.stat().st_size > 0

        wait_until(written, start_timeout, "the parent to start its servers")
        pids = [int(p) for p in json.loads(pids_file.read_text())]
        assert pids and all(running(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        wait_until(lambda: not [p for p in pids if running(p)], 60,
                   f"the servers {pids} to die with their SIGKILLed parent")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(30)
        for pid in pids:  # the test failed: do not leave what it proved is left
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    return pids


def test_the_control_plane_dies_with_its_sigkilled_parent(tmp_path: Path) -> None:
    if os.environ.get("KOO_REAL_KUBE") == "0" or (kube_build.built() is None and shutil.which("go") is None):
        pytest.skip("the real Kubernetes control plane is switched off or cannot be built here")
    binaries = kube_build.build()
    pids = pids_then_kill(f"""
        import json, sys, threading
        from pathlib import Path
        from kafka_offset_demo.control_plane import ControlPlane
        workdir = Path(sys.argv[1])
        plane = ControlPlane(Path({str(binaries)!r}), workdir / "kube").start()
        (workdir / "pids.tmp").write_text(json.dumps([p.pid for p in plane.procs.values()]))
        (workdir / "pids.tmp").rename(workdir / "pids.json")
        threading.Event().wait()
    """, tmp_path, 240)
    assert len(pids) == 3  # etcd, kube-apiserver, kube-controller-manager


def test_the_kafka_broker_dies_with_its_sigkilled_parent(tmp_path: Path) -> None:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    version = next((v for v in versions_under_test() if v != "sandbox"), None)
    if version is None:
        pytest.skip("KOO_KAFKA_VERSIONS=sandbox: no Apache Kafka under test")
    pids = pids_then_kill(f"""
        import json, sys, threading
        from pathlib import Path
        from real_kafka import RealKafka
        workdir = Path(sys.argv[1])
        broker = RealKafka({version!r}, workdir=workdir / "kafka", heap="256m")
        broker.start()
        (workdir / "pids.tmp").write_text(json.dumps([broker.pid]))
        (workdir / "pids.tmp").rename(workdir / "pids.json")
        threading.Event().wait()
    """, tmp_path, 240)
    assert len(pids) == 1


def test_an_operator_process_dies_with_its_sigkilled_parent(tmp_path: Path) -> None:
    """operator_process.OperatorProcess (the kill matrices' and test_real_install's `run` process), started
    against an emulated API and ready: its parent's SIGKILL takes it too."""
    pids = pids_then_kill("""
        import json, sys, threading
        from pathlib import Path
        from operator_harness import emulated_cluster
        from operator_process import OperatorProcess
        workdir = Path(sys.argv[1])
        with emulated_cluster() as cluster:
            operator = OperatorProcess(cluster.write_kubeconfig(workdir / "kubeconfig"), workdir).ready(120)
            (workdir / "pids.tmp").write_text(json.dumps([operator.proc.pid]))
            (workdir / "pids.tmp").rename(workdir / "pids.json")
            threading.Event().wait()
    """, tmp_path, 180)
    assert len(pids) == 1
