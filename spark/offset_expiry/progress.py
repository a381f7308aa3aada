"""Progress on stderr for analyses that take more than a few seconds: the current phase and, while
Spark works, how many tasks of the running stages are done. Quiet for short runs."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

QUIET_FOR_S = 3.0
EVERY_S = 2.0


class Progress:
    def __init__(
        self, out: TextIO | None = None, *, enabled: bool = True, quiet_for_s: float = QUIET_FOR_S
    ) -> None:
        self.out = out if out is not None else sys.stderr
        self.enabled = enabled
        self.quiet_for_s = quiet_for_s
        self.started = time.monotonic()
        self.phase_name = "starting"
        self._spark: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_line = ""

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="analysis-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.enabled and time.monotonic() - self.started >= self.quiet_for_s:
            self._print(f"done in {time.monotonic() - self.started:.1f}s")

    def phase(self, name: str) -> None:
        self.phase_name = name

    def watch(self, spark: Any) -> None:
        """Report task progress of this Spark session's running stages."""
        self._spark = spark

    def _run(self) -> None:
        if self._stop.wait(self.quiet_for_s):
            return
        while True:
            line = f"{self.phase_name}{self._tasks()}"
            if line != self._last_line:
                self._print(line)
                self._last_line = line
            if self._stop.wait(EVERY_S):
                return

    def _tasks(self) -> str:
        if self._spark is None:
            return ""
        try:
            tracker = self._spark.sparkContext.statusTracker()
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
        except Exception:  # the session may be stopping; progress is best effort
            return ""
        return f" ({done}/{total} tasks)" if total else ""

    def _print(self, line: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[analyze {elapsed:5.1f}s] {line}", file=self.out, flush=True)
