"""The local Spark session the CLI, the tests and the benchmark use (the SparkApplication path gets
its session from spark-submit instead)."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator

import pyspark
from pyspark.sql import SparkSession

from . import jvm_cds

LOG = logging.getLogger(__name__)

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Arrow batches of raw records; small enough to keep Python workers' memory flat.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.sql.session.timeZone": "UTC",
    # Spark keeps a Python worker daemon (and its forked workers, each importing pyarrow, numpy and
    # offset_expiry cold) per distinct worker environment. Its Python runners add SPARK_SIMPLIFIED_TRACEBACK=1
    # to the environment, but not all of a run's did (measured: two daemons, one with the variable and one
    # without, and four cold workers on two cores). With it in every worker's environment there is one
    # daemon and two workers (issue 22).
    "spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK": "1",
}


# Spark's JVM logs task failures with full stack traces; the CLI reports failures itself, in one line.
# OFFSET_EXPIRY_SPARK_LOG_LEVEL=WARN (or INFO), or `analyze --verbose`, brings the JVM's logs back.
LOG_LEVEL_ENV = "OFFSET_EXPIRY_SPARK_LOG_LEVEL"
# In shell mode (pyspark-shell, the mode a Python driver's JVM runs in) Spark sets the root logger to the
# level of the class that starts the shell, WARN unless configured, and prints "Setting default log level to
# WARN" when that differs from the root's (Logging.initializeLogging). For a Python driver that class is
# PythonGatewayServer: giving it our level keeps both quiet.
_LOG4J2 = """\
rootLogger.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""


def _log4j2_file(level: str) -> str:
    fd, path = tempfile.mkstemp(prefix="offset-expiry-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(_LOG4J2.format(level=level))
    return path


# What the JVM itself prints on stderr at every start, before any logging is set up, that no flag turns off:
# Spark 4's launcher adds --add-modules=jdk.incubator.vector, and the JVM warns about incubator modules.
JVM_NOISE = ("WARNING: Using incubator modules:",)


@contextlib.contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """While the JVM starts, our stderr (fd 2, which the JVM and its Python workers inherit) is a pipe; a
    thread copies every line to the real stderr except JVM_NOISE. Only the JVM keeps the pipe: ours is
    restored as soon as the JVM is up, and the thread ends when the JVM and its workers have exited."""
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=_copy_lines, args=(read_end, real), name="jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)


def _copy_lines(read_end: int, real: int) -> None:
    with os.fdopen(read_end, "rb") as lines, os.fdopen(real, "wb", buffering=0) as out:
        for line in lines:
            if not line.decode("utf-8", "replace").startswith(JVM_NOISE):
                try:
                    out.write(line)
                except OSError:  # our stderr is gone (a closed pipe): nothing left to tell
                    return


# A small run's driver JVM (issue 22): only the C1 compiler and the serial collector. On a small topic most of
# a cold run's JVM CPU is C2 compiling Spark's own hot methods and G1's threads, which a short run never earns
# back; on a big one the per-row work is C2's code (docs/performance.md, "A cold run's fixed cost").
SMALL_RUN_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
SMALL_RUN_RECORDS = 1_000_000
# Options of the user's that already choose the compilers or the collector: theirs stand.
_USER_JVM_CHOICE = re.compile(r"-XX:(TieredStopAtLevel=|[+-]TieredCompilation\b|\+Use\w*GC\b)")
USER_JVM_ENV = ("SPARK_SUBMIT_OPTS", "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS")


def driver_jvm_options(records: int | None, user_options: str = "") -> tuple[str, ...]:
    """The driver JVM's compiler and collector for a run of `records` records (None: not known, as for a
    session kept for many runs): SMALL_RUN_JVM up to SMALL_RUN_RECORDS, else the JVM's defaults; nothing
    when `user_options` (the environment's JVM options) choose either already."""
    if records is None or records > SMALL_RUN_RECORDS or _USER_JVM_CHOICE.search(user_options):
        return ()
    return SMALL_RUN_JVM


class JavaMissing(RuntimeError):
    pass


def check_java() -> None:
    """Spark needs a JVM (Java 17); say how to get one instead of failing deep inside py4j."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise JavaMissing(
        "Spark needs Java 17: install it (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
    )


def local_session(
    app_name: str = "offset-expiry",
    cores: int | None = None,
    shuffle_partitions: int | None = None,
    log_level: str | None = None,
    verbose: bool = False,
    records: int | None = None,
) -> SparkSession:
    """`log_level`: the JVM's log level (default OFF, or $OFFSET_EXPIRY_SPARK_LOG_LEVEL; WARN when
    `verbose`). Unless `verbose`, the JVM's own start-up warnings (JVM_NOISE) are dropped too. `records`:
    the size of the one run the session is for, when known (driver_jvm_options)."""
    check_java()
    # Python workers must run this interpreter (the one with offset_expiry installed), not PATH's python3;
    # SparkContext reads the variable when it starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    n = cores or os.cpu_count() or 2
    builder = SparkSession.builder.master(f"local[{n}]").appName(app_name)
    for key, value in DEFAULTS.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2 * n, 4)))
    level = (log_level or os.environ.get(LOG_LEVEL_ENV) or ("WARN" if verbose else "OFF")).upper()
    config_file = _log4j2_file(level)
    try:
        cds = jvm_cds.locate(pyspark.__version__)
        user_options = " ".join(os.environ.get(name, "") for name in USER_JVM_ENV)
        options = [
            f"-Dlog4j2.configurationFile={config_file}",
            *jvm_cds.java_options(cds),
            *driver_jvm_options(records, user_options),
        ]
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(options))
        with contextlib.nullcontext() if verbose else _jvm_stderr_filtered():
            spark = builder.getOrCreate()
    finally:
        os.unlink(config_file)  # read once, when the JVM starts
    spark.sparkContext.setLogLevel(level)
    if cds.mode is jvm_cds.ArchiveMode.WRITE:
        atexit.register(_write_archive, cds)
    return spark


def _write_archive(cds: jvm_cds.ArchivePlan, timeout_s: float = 300.0) -> None:
    """At our exit, once: stop the JVM (it writes the CDS archive as it exits) and wait for it, then move the
    archive into place. Whatever goes wrong leaves the run's outcome alone (the next run writes it again)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    try:
        active = SparkContext._active_spark_context
        if active is not None:
            active.stop()
        if gateway is not None:
            gateway.shutdown()
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # PythonGatewayServer exits on its stdin's end
            proc.wait(timeout=timeout_s)
    except Exception as exc:  # the archive is an optimisation; the run is already done
        LOG.debug("Spark CDS archive: the JVM did not exit cleanly (%s)", exc)
    jvm_cds.finish(cds)
