"""spark-submit entry point: the same analysis as `kafka-offset-operator analyze`, with the same flags,
plus `--results PATH` (the report as JSON, written atomically) for the operator to pick up.

    spark-submit spark/offset_expiry/job.py --bootstrap-server kafka:9092 --policy policy.yaml \\
        --results /results/analysis.json

Exit codes: 0 done, 2 bad input or Kafka unreachable (one line on stderr), 1 the Spark job failed.

In a cluster (the operator's SparkApplication engine): `--policy configmap://NS/NAME` reads the policy from
a ConfigMap, `--results configmap://NS/NAME?...` writes the results into ConfigMaps (results_sink.py), and
Kafka credentials come from OFFSET_EXPIRY_KAFKA_* environment variables (client_env.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import NoReturn

from offset_expiry import results_sink
from offset_expiry.analysis import AnalysisRequest, execute, prepare
from offset_expiry.cli_args import add_arguments, check_output_path, request_from_args
from offset_expiry.client_env import settings_from_env
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
    parser.add_argument(
        "--results",
        metavar="PATH",
        help="also write the JSON report here, atomically; configmap://NAMESPACE/NAME writes it into ConfigMaps",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        request = _cluster_request(args)
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
        to_configmap = results_sink.is_configmap_url(args.results)
        emit(analysis, fmt=args.format, output=args.output, results=None if to_configmap else args.results)
        if to_configmap:
            report = analysis.as_json_report()
            results_sink.write(args.results, report["summary"], report["offsets"])
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cluster_request(args: argparse.Namespace) -> AnalysisRequest:
    """The request, with the policy read from a ConfigMap and Kafka credentials from the environment when
    the job runs in a cluster."""
    if args.results is not None and not results_sink.is_configmap_url(args.results):
        check_output_path(args.results, "--results")
    if results_sink.is_configmap_url(args.policy):
        text = results_sink.read_text(args.policy)
        fd, path = tempfile.mkstemp(prefix="policy-", suffix=".yaml")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            request = request_from_args(argparse.Namespace(**{**vars(args), "policy": path}))
        finally:
            os.unlink(path)
    else:
        request = request_from_args(args)
    settings = settings_from_env(os.environ)
    if settings:
        request = dataclasses.replace(request, client_settings={**request.client_settings, **settings})
    return request


if __name__ == "__main__":
    sys.exit(main())
