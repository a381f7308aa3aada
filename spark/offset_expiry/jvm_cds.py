"""The JVM's class-data sharing archive for Spark's classpath (AppCDS, issue 22): what a cold run saves.

A cold Spark driver loads and verifies some 10,000 classes from Spark's jars before its first job; a dynamic
CDS archive (JDK 13+, `-XX:ArchiveClassesAtExit`) holds them parsed and verified, and a later JVM maps it
(`-XX:SharedArchiveFile`). The archive is made once, by the first run that finds none, into a cache outside
the repository (~/.cache/kafka-offset-operator/spark-cds/<pyspark>-<java>.jsa, $KOO_SPARK_CDS_DIR to move
it, $KOO_SPARK_CDS=0 to go without), and used by every later run with the same key.

Never a reason for a run to fail: an archive that is missing is written (or skipped when the cache cannot be
written), one the JVM refuses (its jars changed: the JVM checks their sizes and times) is ignored by the JVM
(`-Xshare:auto`, the default), and every choice is logged at debug. Only an archive that exists is named:
the JVM given a missing `SharedArchiveFile` runs without even its own base archive.

The decisions are pure (`plan`, `java_options`, `key`); the I/O (the cache, the JVM's release file, the
rename once the JVM has written its archive) is at the edges (`locate`, `finish`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

LOG = logging.getLogger(__name__)

ENABLE_ENV = "KOO_SPARK_CDS"  # "0": no archive, neither used nor written
DIR_ENV = "KOO_SPARK_CDS_DIR"
# The JVM prints a warning per class it cannot archive (classes of signed jars, lambda forms) when it writes
# the archive at exit, and one when it refuses an archive: both are expected and change nothing for the run.
QUIET = "-Xlog:cds=off,cds+dynamic=off"


class ArchiveMode(Enum):
    USE = "use"  # map the archive
    WRITE = "write"  # write it at the JVM's exit (into a temporary name, renamed by `finish`)
    OFF = "off"  # neither (disabled, or nowhere to write it)


@dataclass(frozen=True)
class ArchivePlan:
    """What this JVM does with the archive, and why (the debug line)."""

    mode: ArchiveMode
    archive: Path | None
    reason: str
    pending: Path | None = None  # WRITE: where the JVM writes it before `finish` renames it to `archive`


def key(pyspark_version: str, java_version: str) -> str:
    """The archive's name: one per Spark (its jars) and JVM (the archive's format is the JVM's build's)."""
    safe = re.compile(r"[^A-Za-z0-9._+-]")
    return f"{safe.sub('_', pyspark_version)}-{safe.sub('_', java_version)}"


def plan(enabled: bool, cache_dir: Path | None, archive_key: str | None, exists: bool, writable: bool,
         pid: int) -> ArchivePlan:
    """Use the archive when it exists; else write it when the cache can be written; else run without."""
    if not enabled:
        return ArchivePlan(ArchiveMode.OFF, None, f"{ENABLE_ENV}=0")
    if cache_dir is None or archive_key is None:
        return ArchivePlan(ArchiveMode.OFF, None, "no cache directory or no Java version found")
    archive = cache_dir / f"{archive_key}.jsa"
    if exists:
        return ArchivePlan(ArchiveMode.USE, archive, f"using {archive}")
    if not writable:
        return ArchivePlan(ArchiveMode.OFF, archive, f"{cache_dir} cannot be written: running without an archive")
    return ArchivePlan(ArchiveMode.WRITE, archive, f"no {archive}: this run writes it at the JVM's exit",
                pending=cache_dir / f"{archive_key}.jsa.{pid}.tmp")


def java_options(p: ArchivePlan) -> list[str]:
    """The driver JVM's options for the plan (spark.driver.extraJavaOptions)."""
    if p.mode is ArchiveMode.USE and p.archive is not None:
        return [f"-XX:SharedArchiveFile={p.archive}", "-Xshare:auto", QUIET]
    if p.mode is ArchiveMode.WRITE and p.pending is not None:
        return [f"-XX:ArchiveClassesAtExit={p.pending}", QUIET]
    return []


def java_version(java_home: str | None, java_on_path: str | None) -> str | None:
    """JAVA_VERSION and the runtime's build from the JDK's `release` file (reading it starts no JVM)."""
    home = Path(java_home) if java_home else (Path(java_on_path).resolve().parent.parent if java_on_path else None)
    if home is None:
        return None
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return release_version(text)


def release_version(release: str) -> str | None:
    """The JVM's build from a JDK `release` file: JAVA_RUNTIME_VERSION, else JAVA_VERSION."""
    fields = dict(re.findall(r'^([A-Z_]+)="?([^"\n]*)"?$', release, re.MULTILINE))
    return fields.get("JAVA_RUNTIME_VERSION") or fields.get("JAVA_VERSION") or None


def default_cache_dir(environ: os._Environ[str] | dict[str, str]) -> Path:
    if environ.get(DIR_ENV):
        return Path(environ[DIR_ENV])
    base = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "kafka-offset-operator" / "spark-cds"


def locate(pyspark_version: str) -> ArchivePlan:
    """The plan for a driver JVM started now, from the environment and the cache (the I/O edge)."""
    enabled = os.environ.get(ENABLE_ENV, "1") != "0"
    cache_dir = default_cache_dir(os.environ)
    version = java_version(os.environ.get("JAVA_HOME"), shutil.which("java"))
    archive_key = key(pyspark_version, version) if version else None
    exists = archive_key is not None and (cache_dir / f"{archive_key}.jsa").is_file()
    writable = False
    if enabled and archive_key is not None and not exists:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            writable = os.access(cache_dir, os.W_OK)
        except OSError:
            writable = False
    p = plan(enabled, cache_dir, archive_key, exists, writable, os.getpid())
    LOG.debug("Spark CDS archive: %s", p.reason)
    return p


def finish(p: ArchivePlan) -> bool:
    """After the JVM has exited: move the archive it wrote into place (atomically; a concurrent run's equal
    archive may win). False, and the partial file removed, when the JVM wrote none."""
    if p.mode is not ArchiveMode.WRITE or p.pending is None or p.archive is None:
        return False
    try:
        if p.pending.stat().st_size > 0:
            os.replace(p.pending, p.archive)
            LOG.debug("Spark CDS archive written: %s", p.archive)
            return True
    except OSError as exc:
        LOG.debug("Spark CDS archive not written: %s", exc)
    p.pending.unlink(missing_ok=True)
    return False
