"""spark-submit entry point: the same analysis as `kafka-offset-operator analyze`, with the same flags,
plus `--results PATH` (the report as JSON, written atomically) for the operator to pick up.

    spark-submit spark/offset_expiry/job.py --bootstrap-server kafka:9092 --policy policy.yaml \\
        --results /results/analysis.json

Exit codes: 0 done, 2 bad input or Kafka unreachable (one line on stderr), 1 the Spark job failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from offset_expiry.analysis import execute, prepare
from offset_expiry.cli_args import add_arguments, request_from_args
from offset_expiry.errors import InputError
from offset_expiry.output import emit, spark_failure_message
from offset_expiry.progress import Progress

PROG = "offset_expiry.job"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Find expiring and deletable consumer-group offsets in __consumer_offsets."
    )
    add_arguments(parser)
    parser.add_argument("--results", metavar="PATH", help="also write the JSON report here, atomically")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        request = request_from_args(args)
        with Progress() as progress:
            prepared = prepare(request, progress)
            from pyspark.sql import SparkSession

            progress.phase("starting Spark")
            spark = SparkSession.builder.appName("offset-expiry").getOrCreate()
            try:
                analysis = execute(spark, prepared, progress)
            except InputError:
                raise
            except Exception as exc:  # a Spark failure: JVM and worker tracebacks, reduced to one line
                print(f"{PROG}: error: {spark_failure_message(exc)}", file=sys.stderr)
                return 1
        emit(analysis, fmt=args.format, output=args.output, results=args.results)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
