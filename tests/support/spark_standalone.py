"""A Spark standalone cluster on loopback, from the pyspark distribution itself (issue 22, the distributed
path): a master and N workers started with `spark-class org.apache.spark.deploy.master.Master` / `...Worker`,
bound to 127.0.0.1 on ports chosen free, small memory, logs and work directories in a temporary directory,
stopped (process groups killed and reaped) when the context ends. The test suite and bench/analyze.py use it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_offset_demo.ports import free_port

BIN = Path(sys.executable).parent
SPARK_CLASS = str(BIN / "spark-class")
SPARK_SUBMIT = str(BIN / "spark-submit")
READY_S = 240.0  # a cold JVM on two loaded cores takes tens of seconds


@dataclass(frozen=True)
class Standalone:
    master_url: str
    workers: int
    worker_cores: int
    logs: Path

    def submit_command(self, job: str, arguments: list[str], executor_memory: str = "512m",
                       conf: Mapping[str, str] | None = None) -> list[str]:
        """spark-submit in client mode against this cluster: every worker's cores, small executors; `conf`:
        more Spark settings."""
        settings = [f"{key}={value}" for key, value in (conf or {}).items()]
        return [SPARK_SUBMIT, "--master", self.master_url, "--deploy-mode", "client",
                "--executor-memory", executor_memory, "--driver-memory", "512m",
                "--total-executor-cores", str(self.workers * self.worker_cores),
                "--conf", f"spark.cores.max={self.workers * self.worker_cores}",
                "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                *[arg for setting in settings for arg in ("--conf", setting)],
                job, *arguments]


def daemon_env() -> dict[str, str]:
    """The daemons' and executors' environment: loopback only, small daemons, this interpreter for Python."""
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: the process ended ({proc.returncode}): {log.read_text()[-2000:]}")
        time.sleep(0.2)  # polling a log file under a deadline, not synchronising on time
    raise TimeoutError(f"{log.name}: no {text!r} within {READY_S:.0f} s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def standalone_cluster(tmp: Path, workers: int = 2, worker_cores: int = 1,
                       worker_memory: str = "768m") -> Iterator[Standalone]:
    tmp.mkdir(parents=True, exist_ok=True)
    env = daemon_env()
    procs: list[subprocess.Popen[bytes]] = []
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_S

    def start(name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([SPARK_CLASS, *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=tmp, start_new_session=True)
        procs.append(proc)
        return proc, log

    try:
        master, master_log = start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                              "--port", str(port), "--webui-port", str(free_port())])
        _wait_for(master_log, "I have been elected leader", master, deadline)
        started = []
        for i in range(workers):
            work = tmp / f"worker-{i}"
            work.mkdir(exist_ok=True)
            started.append(start(f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(worker_cores),
                "--memory", worker_memory, "--webui-port", str(free_port()), "--work-dir", str(work), url]))
        for proc, log in started:
            _wait_for(log, "Successfully registered with master", proc, deadline)
        yield Standalone(url, workers, worker_cores, tmp)
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
