"""A Spark standalone cluster on loopback, from the pyspark distribution itself (issue 22, the distributed
path): a master and N workers started with `spark-class org.apache.spark.deploy.master.Master` / `...Worker`,
bound to 127.0.0.1 on ports chosen free, small memory, logs and work directories in a temporary directory,
stopped (process groups killed and reaped) when the context ends. The test suite and bench/analyze.py use it.

`pod_memory_mib` puts every executor JVM the workers start, with the Python workers it forks, into a memory
cgroup (v1) of its own with that limit: the mechanism a kubelet uses for a pod's memory limit, so an executor
lives under exactly what its Kubernetes pod would get, and is OOM-killed where the pod would be (ExecutorPods).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_offset_demo.ports import free_port

BIN = Path(sys.executable).parent
SPARK_CLASS = str(BIN / "spark-class")
SPARK_SUBMIT = str(BIN / "spark-submit")
READY_S = 240.0  # a cold JVM on two loaded cores takes tens of seconds
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass(frozen=True)
class Standalone:
    master_url: str
    workers: int
    worker_cores: int
    logs: Path
    pods: ExecutorPods | None = None  # the executors' memory cgroups, when the cluster has a pod limit

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


# The `java` the workers run (through JAVA_HOME, which spark-class and the worker's executor launcher both
# use): an executor's JVM first moves itself into a memory cgroup of its own, made here with the pod's limit;
# every other JVM (the worker itself, spark-class's launcher) runs as it is. The executor keeps this shell's
# pid (exec), so its Python workers, forked later, start in its cgroup.
_JAVA_WRAPPER = """\
#!/bin/sh
case "$*" in
  *{main}*)
    pod="{root}/executor-$$"
    mkdir "$pod" && echo {limit} > "$pod/memory.limit_in_bytes" && echo $$ > "$pod/cgroup.procs" || exit 70
    ;;
esac
exec {java} "$@"
"""


def own_memory_cgroup(mount: Path = CGROUP_V1_MEMORY) -> Path:
    """This process's memory cgroup (v1), as a directory: the executors' cgroups are made below it, so any
    limit above this process still holds for them."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return mount / path.lstrip("/")
    raise RuntimeError(f"no memory cgroup (v1) for this process under {mount}: executor pods need one")


@dataclass
class ExecutorPods:
    """Executors in memory cgroups of `limit_mib` each, below `root` (one `executor-<pid>` per executor JVM,
    a restarted executor in a new one, as a new pod). `sample()` keeps each one's peaks between reads (the
    caller's sampling thread); `figures()` reads the kernel's own: the most charged (memory.max_usage_in_bytes:
    page cache included, as a pod's is), how often the limit was hit (failcnt: the kernel then reclaims page
    cache first, so a hit is not a kill) and how many processes its OOM killer killed (oom_control)."""

    root: Path
    limit_mib: int
    home: Path  # the JAVA_HOME whose bin/java is the wrapper
    peaks: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def create(cls, tmp: Path, limit_mib: int, parent: Path | None = None) -> ExecutorPods:
        root = (parent or own_memory_cgroup()) / f"koo-executors-{uuid.uuid4().hex[:8]}"
        try:
            root.mkdir()
        except OSError as exc:
            raise RuntimeError(f"cannot make a memory cgroup at {root} ({exc}): executor pods need a writable "
                               "cgroup v1 memory controller (and root)") from None
        home = tmp / "executor-java-home"
        (home / "bin").mkdir(parents=True, exist_ok=True)
        wrapper = home / "bin" / "java"
        wrapper.write_text(_JAVA_WRAPPER.format(main=EXECUTOR_MAIN, root=root, limit=limit_mib * 1024 * 1024,
                                                java=real_java()))
        wrapper.chmod(0o755)
        return cls(root, limit_mib, home)

    def pods(self) -> list[Path]:
        return sorted(p for p in self.root.glob("executor-*") if p.is_dir())

    def sample(self) -> None:
        """Each pod's usage now: its working set (usage less inactive page cache: what the kubelet counts)
        and its processes' anonymous memory (total_rss), kept as peaks."""
        for pod in self.pods():
            with contextlib.suppress(OSError, ValueError):
                stat = _stat(pod)
                usage = int((pod / "memory.usage_in_bytes").read_text())
                now = {"working_set": usage - stat.get("total_inactive_file", 0), "rss": stat.get("total_rss", 0)}
                peaks = self.peaks.setdefault(pod.name, {})
                for key, value in now.items():
                    peaks[key] = max(value, peaks.get(key, 0))

    def figures(self) -> list[dict[str, Any]]:
        out = []
        for pod in self.pods():
            with contextlib.suppress(OSError, ValueError):
                oom = _stat(pod, "memory.oom_control")
                peaks = self.peaks.get(pod.name, {})
                out.append({"pod": pod.name, "limit_mib": self.limit_mib,
                            "max_usage_mib": int((pod / "memory.max_usage_in_bytes").read_text()) / 2**20,
                            "working_set_peak_mib": peaks.get("working_set", 0) / 2**20,
                            "rss_peak_mib": peaks.get("rss", 0) / 2**20,
                            "failcnt": int((pod / "memory.failcnt").read_text()),
                            "oom_kills": oom.get("oom_kill", 0)})
        return out

    def remove(self, timeout_s: float = 30.0) -> None:
        """Remove the cgroups once their processes are gone (the cluster's teardown ends them first): a
        cgroup with a process in it cannot be removed, so this polls under a deadline, then says which one
        is left."""
        deadline = time.monotonic() + timeout_s
        for pod in [*self.pods(), self.root]:
            while True:
                try:
                    pod.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{pod}: still has processes "
                                           f"{(pod / 'cgroup.procs').read_text().split()}") from None
                    time.sleep(0.2)  # polling the kernel under a deadline until the killed processes are reaped


def _stat(cgroup: Path, name: str = "memory.stat") -> dict[str, int]:
    return {key: int(value) for key, value in
            (line.split() for line in (cgroup / name).read_text().splitlines() if line.strip())}


def real_java() -> str:
    """The java spark-class would run: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found:
        raise RuntimeError("no java: set JAVA_HOME or put java on PATH")
    return os.path.realpath(found)


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
def standalone_cluster(tmp: Path, workers: int = 2, worker_cores: int = 1, worker_memory: str = "768m",
                       pod_memory_mib: int | None = None) -> Iterator[Standalone]:
    """`pod_memory_mib`: each executor (JVM and Python workers) under that memory limit (ExecutorPods, in
    the Standalone's `pods`; the cgroups are removed after the processes)."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = daemon_env()
    pods = None if pod_memory_mib is None else ExecutorPods.create(tmp, pod_memory_mib)
    if pods is not None:
        env["JAVA_HOME"] = str(pods.home)
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
        yield Standalone(url, workers, worker_cores, tmp, pods)
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
        if pods is not None:
            pods.remove()
