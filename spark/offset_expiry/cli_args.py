"""The analysis' command-line arguments, shared by `kafka-offset-operator analyze` and job.py so both
accept exactly the same flags. Bad values raise InputError with a message fit for one line.

The policy's reader (YAML, jsonschema) loads when a request is built, not with the flags: `add_arguments` is
all that `kafka-offset-operator --help` and every other command's start-up need from here (bench/startup.py).

Every argument is checked here, before Kafka is contacted and long before Spark starts (10-20 s): a typo in
--output must not cost a whole run and end in a traceback."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_offsets_model.durations import parse_duration_ms
from kafka_offsets_model.errors import InputError, SpecError

if TYPE_CHECKING:
    from kafka_offsets_model.openapi import SchemaCheck
    from kafka_offsets_model.policy import Policy

    from .analysis import AnalysisRequest

FORMATS = ("table", "json")


def add_arguments(parser: argparse.ArgumentParser, *, repeatable: bool = False) -> None:
    """`repeatable` (job.py): --policy and --broker-retention may be given once per policy of a shared run
    (their values are then lists)."""
    many = {"action": "append"} if repeatable else {}
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker to connect to"
    )
    parser.add_argument(
        "--policy",
        metavar="PATH",
        help="a ConsumerGroupOffsetPolicy (the resource or just its spec) in YAML; default: no rules, "
        "report what the broker will expire" + ("; once per policy of a shared run" if repeatable else ""),
        **many,  # type: ignore[arg-type]
    )
    parser.add_argument(
        "--now",
        metavar="ISO-8601",
        help="evaluate as of this time (e.g. 2025-01-31T12:00:00Z; no zone means UTC); default: the time "
        "the snapshot is taken",
    )
    parser.add_argument(
        "--broker-retention",
        metavar="DURATION",
        help="the broker's offsets.retention.minutes as a duration (e.g. 7d); default: read it from the "
        "cluster with DescribeConfigs" + ("; once per --policy, in the same order, for a shared run" if repeatable else ""),
        **many,  # type: ignore[arg-type]
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="table (for people, default) or json"
    )
    parser.add_argument(
        "--output", metavar="PATH", help="write the report here (atomically) instead of stdout"
    )
    parser.add_argument("--candidates-only", action="store_true", help="list only the deletion candidates")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show the JVM's and Spark's own warnings and logs (quiet by default)",
    )


def parse_time_ms(text: str, flag: str = "--now") -> int:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"{flag}: {text!r} is not an ISO-8601 time like 2025-01-31T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def check_output_path(path: str, flag: str = "--output") -> None:
    """The report is written atomically (a temporary file in the same directory, then a rename), so what
    must hold is that the directory exists and takes new files, and that the path is not a directory."""
    target = Path(path)
    if not path.strip():
        raise InputError(f"{flag}: empty path")
    if target.is_dir():
        raise InputError(f"{flag}: {path} is a directory; give the path of a file to write")
    directory = target.absolute().parent
    if not directory.is_dir():
        raise InputError(f"{flag}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{flag}: cannot create files in {directory} (permission denied)")


def load_policy(path: str | None, schema: SchemaCheck | None = None) -> Policy:
    """The policy of a --policy file, checked against `schema` (default: the analysis' own POLICY_FILE)."""
    from kafka_offsets_model.policy import Policy, policy_from_yaml
    from kafka_offsets_model.policy_schema import POLICY_FILE

    if path is None:
        return Policy()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--policy: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"--policy: {path} is not UTF-8 text") from None
    try:
        return policy_from_yaml(text, path, POLICY_FILE if schema is None else schema)
    except SpecError as exc:
        raise InputError(f"--policy {path}: {exc}") from None


def check_bootstrap(servers: str, flag: str = "--bootstrap-server") -> None:
    """HOST:PORT[,HOST:PORT...] with numeric ports: checked here so the connect check only meets
    addresses that can be tried."""
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
            raise InputError(f"{flag}: {server.strip()!r} is not HOST:PORT (e.g. kafka:9092)")


def request_from_args(args: argparse.Namespace, policy_schema: SchemaCheck | None = None) -> AnalysisRequest:
    """The request the flags describe, every one checked. `policy_schema`: what --policy's spec is checked
    against (default: POLICY_FILE; the operator's `analyze` passes its CRD's)."""
    from .analysis import AnalysisRequest  # imports Spark: only when a run is really about to start

    retention_ms = None
    if args.broker_retention is not None:
        try:
            retention_ms = parse_duration_ms(args.broker_retention)
        except ValueError as exc:
            raise InputError(f"--broker-retention: {exc}") from None
        if retention_ms <= 0:
            raise InputError("--broker-retention: must be longer than 0 (Kafka requires at least 1 minute)")
    check_bootstrap(args.bootstrap_server)
    if args.output is not None:
        check_output_path(args.output)
    return AnalysisRequest(
        bootstrap_servers=args.bootstrap_server.strip(),
        policy=load_policy(args.policy, policy_schema),
        now_ms=None if args.now is None else parse_time_ms(args.now),
        retention_ms=retention_ms,
        candidates_only=args.candidates_only,
    )
