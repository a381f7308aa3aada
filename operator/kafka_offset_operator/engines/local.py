"""The Local engine: analyses run by a warm child process (local_worker.py), off the operator's event loop.

One worker per operator process, one scan at a time (Spark local mode uses every core anyway);
`run` blocks its caller's thread (handlers call it in a thread) until the report is read, the run fails,
or `cancel` is set. A worker that dies on its own is restarted for the next scan. Nothing secret is logged:
requests go through the worker's stdin only.

Shared scans (issue 12): requests wait in a queue, and a dispatcher thread starts the scans
(decisions/scan_sharing.next_scan): requests with the same `share_key` (same cluster, same credentials)
that arrive within the oldest one's window, or queue behind a running scan, share ONE scan of
`__consumer_offsets`, and each gets its own report, the one it would get alone. A request without a key
scans alone. Cancelling one request (its policy was deleted) only takes it out: the shared scan is killed
(the worker's whole process group: Python, JVM, Spark's Python workers) only when every request it serves
has been cancelled, and the next scan starts a fresh worker.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ..adapters import metrics
from ..adapters.kafka_admin import write_private_files
from ..decisions.scan_sharing import Waiting, next_scan
from ..model.reasons import Reason
from ..model.report import Report, read_report
from .job import AnalysisCancelled, AnalysisFailed, CancelFlag, Job, client_settings, new_run_id
from .local_worker import RESULT

log = logging.getLogger(__name__)

WORKER_MODULE = "kafka_offset_operator.engines.local_worker"


@dataclass(frozen=True)
class LocalRequest:
    run_id: str
    bootstrap_servers: str
    policy: Mapping[str, Any]  # groups/rules/protect, as kafka_offsets_model.policy parses them
    client_settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold a password
    now_ms: int | None = None
    retention_ms: int | None = None
    share_key: str | None = None  # decisions/scan_sharing.share_key; None: scans alone
    share_window_ms: int = 0  # how long it waits for others to join its scan


TLS_OPTIONS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")


class _QueuedRun:
    """One request in the queue, then in a scan; `done` is set once `report` or `error` is."""

    def __init__(self, number: int, request: LocalRequest, arrived_ms: int) -> None:
        self.number = number
        self.request = request
        self.arrived_ms = arrived_ms
        self.key = request.share_key or f"solo:{number}"
        self.done = threading.Event()
        self.report: Report | None = None
        self.error: BaseException | None = None
        self.cancelled = False  # its caller gave up (set under the engine's lock)

    @property
    def member_id(self) -> str:
        return f"{self.request.run_id}-{self.number}"

    def finish(self, report: Report | None = None, error: BaseException | None = None) -> None:
        self.report, self.error = report, error
        self.done.set()


class _Everyone:
    """A scan's cancel flag: set once every request it serves has been cancelled."""

    def __init__(self, tickets: Sequence[_QueuedRun]) -> None:
        self.tickets = tickets

    def is_set(self) -> bool:
        return all(t.cancelled for t in self.tickets)


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
                 env: Mapping[str, str] | None = None, poll_s: float = 0.2) -> None:
        self.python = python
        self.shuffle_partitions = shuffle_partitions
        base = dict(os.environ if env is None else env)
        base.setdefault("PYSPARK_PYTHON", python)
        self.env = base
        self.poll_s = poll_s
        self._worker: _Worker | None = None
        self._cond = threading.Condition()  # guards the queue, the dispatcher and the tickets' `cancelled`
        self._waiting: dict[int, _QueuedRun] = {}
        self._numbers = itertools.count(1)
        self._dispatcher: threading.Thread | None = None
        self._tmp = tempfile.mkdtemp(prefix="koo-analysis-")  # 0700
        self.scans = 0  # scans started (tests and the benchmark count them)

    def run(self, request: LocalRequest, cancel: CancelFlag, poll_s: float | None = None) -> Report:
        """Run one analysis (alone or in a shared scan) and read its report; raises AnalysisFailed or
        AnalysisCancelled."""
        poll = self.poll_s if poll_s is None else poll_s
        with self._cond:
            ticket = _QueuedRun(next(self._numbers), request, _now_ms())
            self._waiting[ticket.number] = ticket
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._dispatch, daemon=True, name="local-engine-scans")
                self._dispatcher.start()
            self._cond.notify_all()
        while not ticket.done.wait(poll):
            if cancel.is_set():
                with self._cond:
                    if not ticket.done.is_set():  # out of the queue, or out of its scan (killed if it was the last)
                        ticket.cancelled = True
                        self._waiting.pop(ticket.number, None)
                        self._cond.notify_all()
                        raise AnalysisCancelled()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.report is not None
        return ticket.report

    # -- the dispatcher thread: starts the scans, one at a time

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._waiting:
                        self._dispatcher = None  # idle: the next request starts another
                        return
                    waiting = [Waiting(t.number, t.key, t.arrived_ms, t.request.share_window_ms)
                               for t in self._waiting.values()]
                    plan = next_scan(waiting, _now_ms())
                    if plan.start:
                        break
                    self._cond.wait(timeout=max(0.01, (plan.wait_ms or 0) / 1000))
                tickets = [self._waiting.pop(n) for n in plan.start]
                directory = tempfile.mkdtemp(prefix="scan-", dir=self._tmp)
                try:
                    # Copied under the lock (a caller that gives up takes it first, then removes its files): the
                    # scan must not depend on files its first caller may remove mid-scan.
                    client = _own_tls_files(tickets[0].request.client_settings, directory)
                except OSError as exc:
                    client = {}
                    failed: BaseException | None = AnalysisFailed(Reason.ANALYSIS_FAILED, f"TLS files: {exc}")
                else:
                    failed = None
            try:
                if failed is not None:
                    raise failed
                self._scan(tickets, client, directory)
            except BaseException as exc:  # never leave a caller waiting
                for t in tickets:
                    if not t.done.is_set():
                        t.finish(error=exc if isinstance(exc, (AnalysisFailed, AnalysisCancelled)) else
                                 AnalysisFailed(Reason.ANALYSIS_FAILED, f"{type(exc).__name__}: {exc}"))
            finally:
                shutil.rmtree(directory, ignore_errors=True)

    def _scan(self, tickets: list[_QueuedRun], client: Mapping[str, str], directory: str) -> None:
        """One scan for `tickets`, in the worker; every ticket is finished (report or error) when it returns."""
        first = tickets[0].request
        scan_id = new_run_id()
        results = {t.number: os.path.join(directory, f"{t.member_id}.json") for t in tickets}
        retention = next((t.request.retention_ms for t in tickets if t.request.retention_ms is not None), None)
        if self._worker is None or not self._worker.alive:
            self._worker = _Worker(self.python, self.env)
        worker = self._worker
        self.scans += 1
        metrics.scan_started("Local", len(tickets))
        if len(tickets) > 1:
            log.info("one scan of __consumer_offsets at %s for %d policies", first.bootstrap_servers, len(tickets))
        worker.send({
            "runId": scan_id,
            "bootstrapServers": first.bootstrap_servers,
            "clientSettings": dict(client),
            "nowMs": first.now_ms,
            "retentionMs": retention,
            "shufflePartitions": self.shuffle_partitions,
            "members": [{"memberId": t.member_id, "policy": dict(t.request.policy),
                         "retentionMs": t.request.retention_ms, "results": results[t.number]} for t in tickets],
        })
        answer = self._await(worker, scan_id, _Everyone(tickets), self.poll_s)
        members: Mapping[str, Any] = answer.get("members") or {}
        for t in tickets:
            mine = members.get(t.member_id) or answer
            if mine.get("ok"):
                try:
                    with open(results[t.number], encoding="utf-8") as f:
                        t.finish(report=read_report(f))
                except Exception as exc:
                    t.finish(error=AnalysisFailed(Reason.ANALYSIS_FAILED, f"the report is unreadable: {exc}"))
            else:
                t.finish(error=_failure(mine))

    def _await(self, worker: _Worker, run_id: str, cancel: CancelFlag, poll_s: float) -> dict[str, Any]:
        while True:
            if cancel.is_set():
                worker.kill()
                self._worker = None
                raise AnalysisCancelled()
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


def _failure(answer: Mapping[str, Any]) -> AnalysisFailed:
    reason = {"input": Reason.ANALYSIS_INPUT_ERROR, "setup": Reason.SPARK_UNAVAILABLE}.get(
        str(answer.get("kind")), Reason.ANALYSIS_FAILED)
    return AnalysisFailed(reason, str(answer.get("message") or "the analysis failed"))


def _own_tls_files(settings: Mapping[str, str], directory: str) -> dict[str, str]:
    """The client settings with their TLS files copied into `directory` (0700, the scan's own)."""
    out = dict(settings)
    for option in TLS_OPTIONS:
        path = out.get(option)
        if path:
            copy = os.path.join(directory, f"tls-{option}.pem")
            shutil.copyfile(path, copy)
            os.chmod(copy, 0o600)
            out[option] = copy
    return out


def _now_ms() -> int:
    return int(time.time() * 1000)


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
            share_key=job.share_key,
            share_window_ms=job.share_window_ms,
        )
        return shared_engine().run(request, cancel)
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
