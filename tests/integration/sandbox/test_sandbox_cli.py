"""The `kafka-sandbox` command: one line when ready, serves clients, stops cleanly on SIGTERM."""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys

import pytest
from kafka import KafkaAdminClient

from kafka_sandbox import SandboxBroker

COMMAND = [sys.executable, "-m", "kafka_sandbox"]


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout), f"no line within {timeout}s"
    return proc.stdout.readline()


def test_runs_until_sigterm_and_serves_meanwhile() -> None:
    proc = subprocess.Popen(
        [*COMMAND, "--listen", "127.0.0.1:0", "--offsets-partitions", "3", "--offsets-retention", "2d"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = read_line(proc, 30)
        match = re.search(
            r"listening on (127\.0\.0\.1:\d+), offsets retention 2d, 3 __consumer_offsets", line
        )
        assert match, line
        admin = KafkaAdminClient(bootstrap_servers=match.group(1))
        try:
            described = admin.describe_topics(["__consumer_offsets"])
        finally:
            admin.close()
        assert len(described[0]["partitions"]) == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "nowhere"], "--listen wants HOST:PORT"),
        (["--offsets-retention", "90s"], "whole number of minutes"),
        (["--offsets-retention", "soon"], "--offsets-retention: "),
        (["--offsets-partitions", "0"], "offsets partitions must be at least 1"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_taken_port_is_a_one_line_error(broker: SandboxBroker) -> None:
    done = subprocess.run(
        [*COMMAND, "--listen", broker.bootstrap_servers], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "cannot listen on" in done.stderr and "Traceback" not in done.stderr
