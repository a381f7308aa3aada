"""spark-submit entry point: the same analysis as `kafka-offset-operator analyze`, with the same flags,
plus `--results PATH` (the report as JSON, written atomically) for the operator to pick up.

    spark-submit spark/offset_expiry/job.py --bootstrap-server kafka:9092 --policy policy.yaml \\
        --results /results/analysis.json

Exit codes: 0 done, 2 bad input or Kafka unreachable (one line on stderr), 1 the Spark job failed.

In a cluster (the operator's SparkApplication engine): `--policy configmap://NS/NAME` reads the policy from
a ConfigMap, `--results configmap://NS/NAME?...` writes the results into ConfigMaps (results_sink.py), and
Kafka credentials come from OFFSET_EXPIRY_KAFKA_* environment variables (client_env.py).

A shared run (issue 12: the operator's policies of one namespace, cluster and credentials): `--policy`,
`--results` (ConfigMaps) and `--broker-retention` once per policy, in the same order. One scan of
`__consumer_offsets` (analysis.execute_many), and each policy's results, the report it would get alone on
that snapshot, in its own ConfigMaps.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import NoReturn

from kafka_offsets_model.errors import InputError
from offset_expiry import results_sink
from offset_expiry.analysis import AnalysisRequest, execute, execute_many, prepare
from offset_expiry.cli_args import add_arguments, check_output_path, request_from_args
from offset_expiry.client_env import settings_from_env
from offset_expiry.output import emit, spark_failure_message
from offset_expiry.pipeline import PolicyRun
from offset_expiry.progress import Progress

PROG = "offset_expiry.job"


class _JobParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _JobParser(
        prog=PROG, description="Find expiring and deletable consumer-group offsets in __consumer_offsets."
    )
    add_arguments(parser, repeatable=True)
    parser.add_argument(
        "--results",
        metavar="PATH",
        action="append",
        help="also write the JSON report here, atomically; configmap://NAMESPACE/NAME writes it into ConfigMaps; "
        "once per --policy, in the same order, for a shared run",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parsed = build_parser().parse_args(argv)
    try:
        members = _members(parsed)
        if len(members) > 1:
            return _main_shared(members)
        args = members[0]
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


def _members(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One set of arguments per policy: --policy, --results and --broker-retention paired in order."""
    policies = args.policy or [None]
    results = args.results or [None]
    retentions = args.broker_retention or [None]
    count = len(policies)
    if count > 1:
        if len(results) != count or not all(results_sink.is_configmap_url(r) for r in results):
            raise InputError("--results: a shared run needs one configmap://NAMESPACE/NAME per --policy, in order")
        if args.output is not None:
            raise InputError("--output: not with several --policy (each policy's report goes to its --results)")
    elif len(results) > 1:
        raise InputError(f"--results: given {len(results)} times for one --policy")
    if len(retentions) == 1:
        retentions = retentions * count
    if len(retentions) != count:
        raise InputError(f"--broker-retention: given {len(retentions)} times for {count} --policy (give it once, "
                         "or once per --policy)")
    return [argparse.Namespace(**{**vars(args), "policy": p, "results": r, "broker_retention": b})
            for p, r, b in zip(policies, results, retentions, strict=True)]


def _main_shared(members: list[argparse.Namespace]) -> int:
    """One scan for several policies; each one's results in its own ConfigMaps."""
    requests = [_cluster_request(m) for m in members]
    first = requests[0]
    if any(r.retention_ms is None for r in requests):
        first = dataclasses.replace(first, retention_ms=None)  # the broker's, for those that give none
    with Progress() as progress:
        prepared = prepare(first, progress)
        from pyspark.sql import SparkSession

        progress.phase(f"starting Spark (one scan for {len(requests)} policies)")
        spark = SparkSession.builder.appName("offset-expiry").getOrCreate()
        runs = [PolicyRun(r.policy, prepared.retention_ms if r.retention_ms is None else r.retention_ms)
                for r in requests]
        try:
            analyses = execute_many(spark, prepared, runs, progress)
        except InputError:
            raise
        except Exception as exc:  # a Spark failure, reduced to one line
            print(f"{PROG}: error: {spark_failure_message(exc)}", file=sys.stderr)
            return 1
    for member, analysis in zip(members, analyses, strict=True):
        report = analysis.as_json_report()
        results_sink.write(member.results, report["summary"], report["offsets"])
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
