"""`kafka-offset-demo` (what `scripts/dev.sh demo` runs) as a user runs it (a subprocess): sandbox broker, emulated Kubernetes API,
the operator, a policy in DryRun then Approve; exit 0 and readable tables of the policy and its
OffsetDeletions, then one proposal approved, deleted and restored from its backup alone. No cluster, Docker or
network."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DEMO_TIMEOUT_S = 420  # a cold Spark start on a busy 2-core machine; about 30-70 s as a rule
STAY_UP_TIMEOUT_S = 1000  # two analyses (420 s each at most, below) and a control plane's start, under load


def assert_the_story(out: str, started: float) -> None:
    """What the demo's story prints, whichever API it runs on and whether or not it stays up afterwards."""
    policy = out[out.index("ConsumerGroupOffsetPolicy kafka/stale-offsets"):]
    assert "Ready       True (AnalysisSucceeded)" in policy
    assert "candidates  7 (EmptyGroup 3, Standalone 2, UnsubscribedTopic 2)" in policy
    # DryRun writes nothing to Kafka: keep-alive says what it would do; Approve proposes the rebase (an
    # OffsetDeletion that waits for an approval like the others) and changes nothing in Kafka.
    assert "keep-alive of protected groups: billing-monthly: would rebase as a simple group" in out
    assert "keep-alive of protected groups: billing-monthly: rebase proposed as OffsetDeletion" in out
    assert out.index("would rebase") < out.index("Approve analysis done") < out.index(": rebase proposed as")
    deletions = out[out.index("OffsetDeletions created by the policy"):].splitlines()[1:6]
    assert deletions[0].split() == ["NAME", "GROUP", "TOPICS[PARTITIONS]", "PHASE", "APPROVED"]
    rows = {line.split()[1]: line.split()[2:] for line in deletions[1:]}
    assert rows == {
        "billing-monthly": ["invoices[0]", "AwaitingApproval", "false"],  # keep-alive's rebase proposal
        "manual-replay": ["payments[0,1]", "AwaitingApproval", "false"],
        "orders-app": ["payments[0,1]", "AwaitingApproval", "false"],
        "reporting-old": ["orders[0,1]", "payments[0]", "AwaitingApproval", "false"],
    }
    # The safety promise: one proposal approved, its backup named, the resource deleted, restored from the backup.
    promise = out[out.index("The safety promise, played on one proposal"):]
    assert "approved: Succeeded, 3 offsets of group reporting-old deleted" in promise
    assert "its backup: ConfigMap kafka/offset-backup-offsetdeletion-stale-offsets-" in promise
    assert "the backup stays, and the group has 0 committed offsets" in promise
    assert "committed 3 offsets of group reporting-old" in promise
    assert "group reporting-old has its 3 offsets back, exactly as before the deletion" in promise
    # Its own figures (README.md states their range) and the operator's audit lines, in the file it names.
    took = re.search(r"The demo took (\d+) s of wall time \((\d+) s of CPU[^;]*; the operator's audit lines are in (\S+)\.\n", out)
    assert took is not None, out[-2000:]
    assert 0 < int(took.group(1)) <= time.monotonic() - started + 1
    log = Path(took.group(3))
    audit = log.read_text()
    log.unlink()
    assert re.search(r"kafka_offset_operator\.audit: BackedUp kafka/\S+ ", audit), audit[-2000:]
    assert re.search(r"kafka_offset_operator\.audit: OffsetDelete OffsetDeletion kafka/\S+ ", audit), audit[-2000:]


@pytest.mark.slow  # the whole demo, with a Spark analysis
def test_demo_exits_0_with_the_policy_and_its_deletions_as_tables() -> None:
    """The default run, which ends after the story, on the emulated API (forced: the default where no control
    plane is built). The stay-up run below covers the real control plane; together they cover both APIs and
    both endings with two runs of the demo, not three (each costs 2-4 minutes of CI)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafka_offset_demo", "--emulated-api"], capture_output=True,
                          text=True, timeout=DEMO_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert_the_story(done.stdout, started)
    assert "run the demo with --stay-up" in done.stdout
    print(f"demo took {time.monotonic() - started:.1f}s")


def stay_up() -> tuple[list[str], str]:
    """`kafka-offset-demo --stay-up` (on the real control plane where it is built): the story, then the KUBECONFIG to use; kubectl lists the proposals
    with their columns and approves one, which the operator carries out; Ctrl-C ends it with exit 0. The
    lines up to "Ctrl-C stops it", and all the output after."""
    demo = subprocess.Popen([sys.executable, "-m", "kafka_offset_demo", "--stay-up", "--timeout", "420"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # each analysis: a ceiling
    lines: list[str] = []
    try:
        assert demo.stdout is not None
        deadline = time.monotonic() + STAY_UP_TIMEOUT_S
        while not any(line.startswith("Ctrl-C stops it") for line in lines):
            line = demo.stdout.readline()
            assert line or demo.poll() is None, "".join(lines)[-3000:]
            assert time.monotonic() < deadline, "the demo never said it stays up"
            lines.append(line)
        kubeconfig = next(line.split("=", 1)[1].strip() for line in lines if "export KUBECONFIG=" in line)

        def kubectl(*args: str) -> str:
            done = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        table = kubectl("get", "od").splitlines()
        assert table[0].split() == ["NAME", "GROUP", "APPROVED", "PHASE", "DELETED", "FAILED", "AGE"]
        name = kubectl("get", "od", "-o", "jsonpath={.items[?(@.spec.group==\"manual-replay\")].metadata.name}")
        kubectl("patch", "od", name, "--type", "merge", "-p", '{"spec":{"approved":true}}')
        deadline = time.monotonic() + 60
        while kubectl("get", "od", name, "-o", "jsonpath={.status.phase}") != "Succeeded":
            assert time.monotonic() < deadline, kubectl("get", "od", name, "-o", "yaml")
            time.sleep(0.5)  # polling kubectl, as a user would
        backups = kubectl("get", "configmaps", "-l", "kafkaoffsets.dev/backup=true", "-o", "name").split()
        # The demo's deletion of one proposal and this deletion; keep-alive's rebase of billing-monthly is a
        # proposal that waits for an approval in Approve mode, so it took no backup (nothing changed).
        assert len(backups) == 2 and all("-delete-" in b for b in backups), backups
        # What the emulator gets wrong works here, as on any cluster.
        kubectl("create", "namespace", "team-a")
        kubectl("-n", "team-a", "create", "configmap", "c", "--from-literal=a=b")
        kubectl("-n", "team-a", "delete", "configmap", "c")  # returns: its watch sees the deletion
        missing = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "-n", "nowhere", "create", "configmap",
                                  "c", "--from-literal=a=b"], capture_output=True, text=True, timeout=60)
        assert missing.returncode != 0 and 'namespaces "nowhere" not found' in missing.stderr, missing.stderr
        demo.send_signal(signal.SIGINT)
        out, err = demo.communicate(timeout=300)  # the operator's stop waits up to 90 s, then Spark's
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 0, err[-3000:]
    assert "Traceback" not in "".join(lines) + out + err
    return lines, out


@pytest.mark.slow  # the whole demo again, on the real control plane
def test_the_demo_stays_up_on_the_real_control_plane_where_it_is_built() -> None:
    """`--stay-up` where the control plane is built runs on it: kubectl behaves as on a cluster (namespaces,
    configmaps, delete with its watch, a missing namespace refused), and nothing is said to be unfaithful."""
    from kafka_offset_demo.control_plane import built_binaries

    if built_binaries() is None:
        pytest.skip("no Kubernetes control plane built here (scripts/dev.sh cluster builds it; needs Go)")
    started = time.monotonic()
    lines, out = stay_up()
    assert_the_story("".join(lines), started)
    assert any("real Kubernetes API server v" in line for line in lines), "".join(lines)
    assert not any(line.startswith("Not faithful") for line in lines)
    assert "stopping: operator, real control plane, sandbox broker" in out


@pytest.mark.slow  # a process importing PySpark
def test_real_cluster_without_a_built_control_plane_is_one_line_and_exit_2(tmp_path: object) -> None:
    done = subprocess.run([sys.executable, "-m", "kafka_offset_demo", "--real-cluster"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "KOO_KUBE_CACHE": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kafka-offset-demo: error: --real-cluster: no Kubernetes control plane is built")
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
