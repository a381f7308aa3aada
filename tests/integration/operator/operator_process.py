"""`kafka-offset-operator run` as a real process against an emulated API: started with short intervals, ready
once its liveness endpoint answers, and ended the way a node ends it (SIGKILL: no cleanup, no goodbye) or
the way a rollout does (SIGTERM). Its output goes to a file the test can read. It dies with whoever started
it (the servers' parent-death signal, kafka_offset_demo/processes.py): a SIGKILLed pytest leaves no operator
behind writing to an API server or a broker another run may reuse (test_no_orphan_servers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import TracebackType

from operator_harness import NAMESPACE
from waiting import wait_until

from kafka_offset_demo.control_plane import terminate
from kafka_offset_demo.ports import free_port
from kafka_offset_demo.processes import dies_with_parent


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as rsp:
            return rsp.status, rsp.read().decode()
    except OSError:
        return 0, ""


class OperatorProcess:
    """One `run` process; a context manager that ends it (SIGTERM, then SIGKILL) if the test did not."""

    def __init__(self, kubeconfig: Path, logs: Path, *extra: str, retry_interval: float = 0.3,
                 pod_id: str = "kafka-offset-operator-0", namespace: str = NAMESPACE) -> None:
        """`pod_id`: Kopf's peering identity (POD_ID, the pod's name in the Deployment). A fresh process with
        the same id is the container restarted in its pod: it takes over its own keep-alive at once, as after
        a SIGKILL on a node; another id waits for the dead one's (test_peering.py)."""
        self.health, self.metrics = free_port(), free_port()
        self.log_path = logs / f"operator-{self.health}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_offset_operator", "run", "--namespace", namespace, "--kubeconfig",
             str(kubeconfig), "--health-port", str(self.health), "--metrics-port", str(self.metrics),
             "--retry-interval", str(retry_interval), *extra],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "KUBECONFIG": "/nonexistent", "POD_ID": pod_id},
            preexec_fn=dies_with_parent(),
        )

    def ready(self, timeout: float = 60) -> OperatorProcess:
        """Until the liveness endpoint answers. A deadline, not a wait: at a load average of 20 (five test
        suites on 2 cores) a process took more than 30 s to import and start Kopf, on either broker."""
        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the operator exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            return get(f"http://127.0.0.1:{self.health}/healthz")[0] == 200

        wait_until(up, timeout, "the operator's liveness endpoint")
        return self

    def kill(self) -> int:
        """SIGKILL; the return code (-SIGKILL unless it had exited already)."""
        self.proc.kill()
        return self.proc.wait(10)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        terminate(self.proc, 30)
        self._log.close()

    def __enter__(self) -> OperatorProcess:
        return self.ready()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
