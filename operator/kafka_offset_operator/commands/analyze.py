"""`analyze`: which committed offsets the broker will expire and when, and which a policy would delete.

Runs the Spark job of offset_expiry in local mode, in this process. Kafka is contacted (topics,
offsets.retention.minutes, the snapshot of __consumer_offsets) before Spark starts, so a wrong address,
a missing topic or a bad flag fails in seconds with one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from typing import TYPE_CHECKING, Any

from kafka_offsets_model.errors import InputError
from offset_expiry.cli_args import add_arguments, request_from_args
from offset_expiry.progress import Progress

from ..errors import UserError
from . import kafka_connection

if TYPE_CHECKING:
    from kafka_offsets_model.openapi import SchemaCheck

    from ..model.connection import ConnectionSettings


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "analyze",
        help="report offsets the broker will expire, and deletion candidates under a policy",
        description="Read all of __consumer_offsets (a snapshot, read_committed), rebuild every group, and "
        "say for each committed offset when the broker will expire it and whether a "
        "ConsumerGroupOffsetPolicy makes it a deletion candidate now. Runs Spark in local mode.",
    )
    add_arguments(p)
    kafka_connection.add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Spark and Arrow load only when an analysis really runs, the policy's reader (YAML, jsonschema) only when
    # this command runs: the other commands stay quick to start (bench/startup.py).
    from kafka_offsets_model.policy import regex_pattern_warnings

    from ..engines.dispatch import spark_installed

    if not spark_installed():  # the operator image, or an install without the extra
        raise UserError("analyze runs PySpark here, and this install has none: pip install "
                        "'kafka-offset-operator[spark]' (or run the analysis in the cluster: engine Job)")
    from offset_expiry.analysis import execute, prepare
    from offset_expiry.output import emit, spark_failure_message, unmatched_patterns
    from offset_expiry.session import JavaMissing, local_session

    tmpdir = None
    settings: ConnectionSettings | None = None
    try:
        request = request_from_args(args, _policy_file_schema())
        settings = kafka_connection.connection(args, request.bootstrap_servers)
        if args.command_config is not None:
            kafka_connection.check_login(settings)
            client, tmpdir = _client_settings(settings)
            request = dataclasses.replace(request, client_settings=client)
        for line in regex_pattern_warnings(request.policy):
            warn(line)
        with Progress() as progress:
            prepared = prepare(request, progress)
            progress.phase("starting Spark (local mode)")
            spark = local_session(
                "kafka-offset-operator-analyze", verbose=args.verbose, records=prepared.snapshot.records
            )
            try:
                analysis = execute(spark, prepared, progress)
            except InputError:
                raise
            except Exception as exc:  # a Spark failure: JVM and worker tracebacks, reduced to one line
                raise UserError(settings.redact(spark_failure_message(exc))) from None
        for line in unmatched_patterns(analysis, request.policy, request.candidates_only):
            warn(line)
        emit(analysis, fmt=args.format, output=args.output)
    except (InputError, JavaMissing) as exc:
        raise UserError(settings.redact(str(exc)) if settings is not None else str(exc)) from None
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


def _policy_file_schema() -> SchemaCheck:
    """A --policy file is checked against the CRD's own spec schema (`mode: Sometimes` is refused as the API
    server refuses it, one line, exit 2), without its required fields: the file may leave out spec.kafka (the
    command takes --bootstrap-server)."""
    from kafka_offsets_model.openapi import SchemaCheck

    from ..model.api import POLICY_KIND
    from ..model.crds import spec_schema

    schema = dict(spec_schema(POLICY_KIND))
    schema.pop("required", None)
    return SchemaCheck(schema)


def _client_settings(settings: ConnectionSettings) -> tuple[dict[str, str], str | None]:
    """The analysis' kafka-python settings (offset_expiry.fetcher.CLIENT_SETTINGS, as strings) of a
    --command-config, as the operator's Local engine gives them (engines/job.client_settings), and the
    private directory of its TLS files (removed when the run ends)."""
    from ..adapters.kafka_admin import write_private_files
    from ..engines.job import client_settings

    tmpdir, paths = write_private_files(settings.tls) if settings.tls is not None else (None, {})
    client = client_settings(settings, paths)
    if settings.tls is not None:
        client["ssl_check_hostname"] = str(settings.check_hostname).lower()
    return client, tmpdir


def warn(line: str) -> None:
    print(f"kafka-offset-operator: warning: {line}", file=sys.stderr)
