"""Progress on stderr for analyses that take more than a few seconds: the current phase and, while Spark
reads the snapshot, how many of its records are read. Quiet for short runs.

On a terminal (stderr isatty) it is one status line redrawn in place, with a bar; otherwise (a log, a CI
job, spark-submit's output) plain lines, at most one every EVERY_S and only when something changed.

Records read come from Spark's status tracker: the reading stage is the first stage Spark submits after
`watch()` (the snapshot is read once, by the first query stage, and cached), and its input partitions are
packed to about equal sizes (source.py), so completed tasks / tasks x the snapshot's records is what has
been read, to a task's share. Per-stage task counts alone say little: every stage of a small analysis has 2
to 10 tasks that finish together, so "(0/4 tasks)" would stand still until the stage was over.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

QUIET_FOR_S = 3.0
EVERY_S = 2.0
REDRAW_S = 0.5  # how often the terminal's status line is redrawn
BAR_WIDTH = 24


def bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """[#########---------------] for done of total."""
    filled = 0 if total <= 0 else min(width, width * done // total)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


class Progress:
    def __init__(
        self,
        out: TextIO | None = None,
        *,
        enabled: bool = True,
        quiet_for_s: float = QUIET_FOR_S,
        terminal: bool | None = None,
    ) -> None:
        """`terminal`: draw a status line in place; default: whether `out` is a terminal."""
        self.out = out if out is not None else sys.stderr
        self.enabled = enabled
        self.quiet_for_s = quiet_for_s
        self.terminal = _isatty(self.out) if terminal is None else terminal
        self.started = time.monotonic()
        self.phase_name = "starting"
        self._spark: Any = None
        self._records = 0
        self._first_stage = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_line = ""
        self._drawn = False

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="analysis-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._drawn:
            self.out.write("\r\x1b[K")  # the status line makes way for the report
        if self.enabled and time.monotonic() - self.started >= self.quiet_for_s:
            self._print(f"done in {time.monotonic() - self.started:.1f}s")

    def phase(self, name: str) -> None:
        self.phase_name = name

    def watch(self, spark: Any, records: int = 0) -> None:
        """Report the progress of this Spark session's next stages, the first of which reads `records`
        records (call it just before the query that reads them)."""
        self._records = records
        self._first_stage = _next_stage_id(spark)
        self._spark = spark

    def line(self) -> str:
        """What the progress says now (without the elapsed-time prefix)."""
        return f"{self.phase_name}{self._spark_progress()}"

    def _run(self) -> None:
        if self._stop.wait(self.quiet_for_s):
            return
        every = REDRAW_S if self.terminal else EVERY_S
        while True:
            line = self.line()
            if self.terminal:
                self._draw(line)
            elif line != self._last_line:
                self._print(line)
            self._last_line = line
            if self._stop.wait(every):
                return

    def _spark_progress(self) -> str:
        if self._spark is None:
            return ""
        try:
            tracker = self._spark.sparkContext.statusTracker()
            reading = tracker.getStageInfo(self._first_stage)
            if reading is None or reading.numTasks == 0 or reading.numCompletedTasks < reading.numTasks:
                done, tasks = (0, 1) if reading is None else (reading.numCompletedTasks, reading.numTasks)
                read = self._records * done // tasks
                if self.terminal:
                    return f": {bar(read, self._records)} {read}/{self._records} records read"
                return f": {read}/{self._records} records read"
            finished = 0
            for stage_id in range(self._first_stage, _next_stage_id(self._spark)):
                info = tracker.getStageInfo(stage_id)
                if info is not None and info.numTasks and info.numCompletedTasks >= info.numTasks:
                    finished += 1
        except Exception:  # the session may be stopping; progress is best effort
            return ""
        return f": all {self._records} records read; decoding and deciding, {finished} Spark stages done"

    def _draw(self, line: str) -> None:
        elapsed = time.monotonic() - self.started
        self.out.write(f"\r\x1b[K[analyze {elapsed:5.1f}s] {line}")
        self.out.flush()
        self._drawn = True

    def _print(self, line: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[analyze {elapsed:5.1f}s] {line}", file=self.out, flush=True)


def _next_stage_id(spark: Any) -> int:
    """The id Spark gives its next stage: stage ids count up from 0 across the session's jobs."""
    try:
        tracker = spark.sparkContext.statusTracker()
        known = [-1]
        for job_id in tracker.getJobIdsForGroup(None):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                known.extend(info.stageIds)
        return max(known) + 1
    except Exception:
        return 0


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False
