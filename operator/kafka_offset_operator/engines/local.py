"""The Local engine: analyses run by a warm child process (local_worker.py), off the operator's event loop.

One worker per operator process, one analysis at a time (Spark local mode uses every core anyway);
`run` blocks its caller's thread (handlers call it through asyncio.to_thread) until the report is read,
the run fails, or `cancel` is set: then the worker's whole process group (Python, JVM, Spark's Python
workers) is killed, and the next run starts a fresh worker. A worker that dies on its own is restarted the
same way. Nothing secret is logged: requests go through the worker's stdin only.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from ..adapters.kafka_admin import write_private_files
from ..model.reasons import Reason
from ..model.report import Report, read_report
from .job import AnalysisFailed, CancelFlag, Cancelled, Job, client_settings, new_run_id
from .local_worker import RESULT

log = logging.getLogger(__name__)

WORKER_MODULE = "kafka_offset_operator.engines.local_worker"


@dataclass(frozen=True)
class LocalRequest:
    run_id: str
    bootstrap_servers: str
    policy: Mapping[str, Any]  # groups/rules/protect, as offset_expiry.policy parses them
    client_settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold a password
    now_ms: int | None = None
    retention_ms: int | None = None


class _Worker:
    def __init__(self, python: str, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            [python, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, env=dict(env), start_new_session=True,  # its own process group
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put, True), daemon=True,
                         name="local-engine-out").start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append, False), daemon=True,
                         name="local-engine-err").start()

    @staticmethod
    def _pump(stream: IO[str], sink: Callable[[Any], None], mark_end: bool) -> None:
        for line in stream:
            sink(line.rstrip("\n"))
        if mark_end:
            sink(None)  # end of stdout: the worker is gone

    def send(self, request: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """End of input: the worker stops its Spark session and exits; killed if it takes too long."""
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
        self.kill()  # whatever is left of its process group (Spark's Python workers)


class LocalEngine:
    def __init__(self, python: str = sys.executable, shuffle_partitions: int | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.python = python
        self.shuffle_partitions = shuffle_partitions
        base = dict(os.environ if env is None else env)
        base.setdefault("PYSPARK_PYTHON", python)
        self.env = base
        self._worker: _Worker | None = None
        self._lock = threading.Lock()  # one analysis at a time
        self._tmp = tempfile.mkdtemp(prefix="koo-analysis-")  # 0700

    def run(self, request: LocalRequest, cancel: CancelFlag, poll_s: float = 0.2) -> Report:
        """Run one analysis and read its report; raises AnalysisFailed or Cancelled."""
        while not self._lock.acquire(timeout=poll_s):
            if cancel.is_set():
                raise Cancelled()
        try:
            return self._run(request, cancel, poll_s)
        finally:
            self._lock.release()

    def _run(self, request: LocalRequest, cancel: CancelFlag, poll_s: float) -> Report:
        if self._worker is None or not self._worker.alive:
            self._worker = _Worker(self.python, self.env)
        worker = self._worker
        results = os.path.join(self._tmp, f"{request.run_id}.json")
        worker.send({
            "runId": request.run_id,
            "bootstrapServers": request.bootstrap_servers,
            "policy": dict(request.policy),
            "clientSettings": dict(request.client_settings),
            "nowMs": request.now_ms,
            "retentionMs": request.retention_ms,
            "results": results,
            "shufflePartitions": self.shuffle_partitions,
        })
        try:
            answer = self._await(worker, request.run_id, cancel, poll_s)
            if not answer.get("ok"):
                kind = answer.get("kind")
                reason = {"input": Reason.ANALYSIS_INPUT_ERROR, "setup": Reason.SPARK_UNAVAILABLE}.get(
                    str(kind), Reason.ANALYSIS_FAILED)
                raise AnalysisFailed(reason, str(answer.get("message") or "the analysis failed"))
            with open(results, encoding="utf-8") as f:
                return read_report(f)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(results)

    def _await(self, worker: _Worker, run_id: str, cancel: CancelFlag, poll_s: float) -> dict[str, Any]:
        while True:
            if cancel.is_set():
                worker.kill()
                self._worker = None
                raise Cancelled()
            try:
                line = worker.lines.get(timeout=poll_s)
            except queue.Empty:
                continue
            if line is None:
                self._worker = None
                worker.kill()
                tail = " | ".join(list(worker.stderr)[-3:]) or "no output"
                raise AnalysisFailed(Reason.ANALYSIS_FAILED, f"the analysis process exited unexpectedly ({tail})")
            if line.startswith(RESULT):
                answer: dict[str, Any] = json.loads(line[len(RESULT):])
                if answer.get("runId") == run_id:
                    return answer

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)


_shared: LocalEngine | None = None
_shared_lock = threading.Lock()


def shared_engine() -> LocalEngine:
    """The process-wide engine: one warm Spark worker however many operators run in this process (tests
    start several; production runs one). Stopped at interpreter exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalEngine(shuffle_partitions=max(2 * (os.cpu_count() or 2), 4))
            import atexit

            atexit.register(_shared.close)
        return _shared


def run_local(job: Job, cancel: CancelFlag) -> Report:
    tmpdir, paths = (None, {}) if job.settings.tls is None else write_private_files(job.settings.tls)
    try:
        request = LocalRequest(
            run_id=new_run_id(),
            bootstrap_servers=job.settings.bootstrap_servers,
            policy=job.spec.analysis_spec,
            client_settings=client_settings(job.settings, paths),
            retention_ms=job.retention_ms,
        )
        return shared_engine().run(request, cancel)
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
