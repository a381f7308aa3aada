"""Where a finished analysis goes: stdout or --output in table or JSON form, and the --results sink.

Files are written atomically (report.write_json_atomically / _write_text_atomically): an interrupted
run leaves the previous file or none, never half a report.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from typing import TextIO

from kafka_offsets_model.policy import Policy, unmatched_pattern_warnings

from .analysis import Analysis
from .report import write_json, write_json_atomically
from .table import render


def emit(
    analysis: Analysis, *, fmt: str, output: str | None, results: str | None = None, out: TextIO | None = None
) -> None:
    if results is not None:
        write_json_atomically(results, analysis.as_json_report())
    if fmt == "json":
        if output is not None:
            write_json_atomically(output, analysis.as_json_report())
        else:
            write_json(out or sys.stdout, analysis.as_json_report())
        return
    report = analysis.as_json_report()
    text = render(report["summary"], report["offsets"], analysis.now_ms)
    if output is not None:
        _write_text_atomically(output, text)
    else:
        (out or sys.stdout).write(text)


def unmatched_patterns(analysis: Analysis, policy: Policy, candidates_only: bool) -> list[str]:
    """Warnings for the policy's group patterns that matched no group of the report. A report of
    candidates only does not list every group, so it says nothing."""
    if candidates_only:
        return []
    groups = {str(row["group"]) for row in analysis.report["offsets"]}  # one streamed pass over the rows
    return unmatched_pattern_warnings(policy, groups)


def _write_text_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".analysis-", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


_SOURCE_ERROR = re.compile(r"SourceError: ([^\n]+)")
_PYTHON_ERROR = re.compile(r"^(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)


def spark_failure_message(exc: BaseException) -> str:
    """One line out of a Spark failure (whose text holds JVM and Python tracebacks)."""
    text = str(exc)
    found = _SOURCE_ERROR.search(text)
    if found:
        return found.group(1).strip()
    errors = _PYTHON_ERROR.findall(text)
    if errors:
        name, message = errors[-1]
        return f"the Spark job failed: {name}: {message.strip()}"
    first = io.StringIO(text).readline().strip()
    return f"the Spark job failed: {first or type(exc).__name__}"
