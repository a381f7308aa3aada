"""The workers' `java` of bench/analyze.py's `--executor-pod-memory` (tests/support/spark_standalone.py's
ExecutorPods, issue 22): an executor JVM moves itself into a memory cgroup of its own with its pod's limit
before it starts, so it and the Python workers it forks live under exactly that limit, and the kernel's OOM
killer ends it where a kubelet's pod would be ended; every other JVM of the cluster runs unconfined. First on a
plain directory laid out as the memory controller's (what the wrapper writes), then, where this process may
make cgroups (root, cgroup v1: the bench's machine), on the kernel's own: a process over the limit is killed
and counted. A few shell starts: well under a CPU-second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from spark_standalone import EXECUTOR_MAIN, ExecutorPods, own_memory_cgroup


def fake_java(tmp: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `java` the wrapper execs (JAVA_HOME's): a shell script with `body`."""
    home = tmp / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\n{body}\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))


def run_java(pods: ExecutorPods, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(pods.home / "bin" / "java"), *args], capture_output=True, text=True, timeout=60,
                          check=check)


def test_an_executor_jvm_moves_into_a_cgroup_of_its_own_and_other_jvms_do_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_java(tmp_path, 'echo "java $*"', monkeypatch)
    parent = tmp_path / "cgroup"
    parent.mkdir()
    pods = ExecutorPods.create(tmp_path / "cluster", 1433, parent=parent)
    done = run_java(pods, "-Xmx128m", "-cp", "x", "org.apache.spark.deploy.worker.Worker", "spark://h:1")
    assert "org.apache.spark.deploy.worker.Worker" in done.stdout and pods.pods() == []
    done = run_java(pods, "-Xmx1024M", "-cp", "x", EXECUTOR_MAIN, "--executor-id", "0")
    assert done.stdout.startswith("java -Xmx1024M")  # the real java ran, with every argument
    [pod] = pods.pods()
    assert (pod / "memory.limit_in_bytes").read_text().strip() == str(1433 * 1024 * 1024)
    # The shell wrote its own pid, which exec hands to the JVM: the executor's pid names its pod.
    assert (pod / "cgroup.procs").read_text().strip() == pod.name.removeprefix("executor-")
    run_java(pods, "-cp", "x", EXECUTOR_MAIN, "--executor-id", "1")  # a relaunched executor: a new pod
    assert len(pods.pods()) == 2


def test_the_kernel_kills_an_executor_over_its_pods_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        parent = own_memory_cgroup()
        probe = parent / "koo-probe-test"
        probe.mkdir()
        probe.rmdir()
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"no writable cgroup v1 memory controller here ({exc}): the bench needs one too")
    # The "executor": a Python process that holds 200 MiB, under a 64 MiB pod.
    fake_java(tmp_path, f"exec {sys.executable} -c 'x = bytearray(200 * 2**20); print(len(x))'", monkeypatch)
    pods = ExecutorPods.create(tmp_path / "cluster", 64)
    try:
        done = run_java(pods, "-cp", "x", EXECUTOR_MAIN, check=False)
        assert done.returncode == -9 or done.returncode == 137, done
        [figures] = pods.figures()
        assert figures["oom_kills"] == 1 and figures["failcnt"] > 0 and figures["max_usage_mib"] <= 64
        fine = run_java(pods, "-cp", "x", "org.apache.spark.deploy.master.Master", check=False)  # unconfined
        assert fine.returncode == 0 and fine.stdout.strip() == str(200 * 2**20)
    finally:
        pods.remove()
    assert not pods.root.exists()
