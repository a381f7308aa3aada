"""The local Spark session the CLI, the tests and the benchmark use (the SparkApplication path gets
its session from spark-submit instead)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession

DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Arrow batches of raw records; small enough to keep Python workers' memory flat.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
    "spark.sql.session.timeZone": "UTC",
}


# Spark's JVM logs task failures with full stack traces; the CLI reports failures itself, in one line.
# OFFSET_EXPIRY_SPARK_LOG_LEVEL=WARN (or INFO) brings the JVM's logs back for debugging.
LOG_LEVEL_ENV = "OFFSET_EXPIRY_SPARK_LOG_LEVEL"
_LOG4J2 = """\
rootLogger.level = {level}
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
) -> SparkSession:
    """`log_level`: the JVM's log level (default OFF, or $OFFSET_EXPIRY_SPARK_LOG_LEVEL)."""
    check_java()
    # Python workers must run this interpreter (the one with offset_expiry installed), not PATH's python3;
    # SparkContext reads the variable when it starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    n = cores or os.cpu_count() or 2
    builder = SparkSession.builder.master(f"local[{n}]").appName(app_name)
    for key, value in DEFAULTS.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2 * n, 4)))
    level = (log_level or os.environ.get(LOG_LEVEL_ENV) or "OFF").upper()
    config_file = _log4j2_file(level)
    try:
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={config_file}")
        spark = builder.getOrCreate()
    finally:
        os.unlink(config_file)  # read once, when the JVM starts
    spark.sparkContext.setLogLevel(level)
    return spark
