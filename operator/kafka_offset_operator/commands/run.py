"""`run`: the operator itself, under Kopf, against the current kubeconfig or in-cluster config."""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..model.api import DEFAULT_PEERING

USER_ENV = "KAFKA_OFFSET_OPERATOR_USER"
VERIFIED_ENV = "KAFKA_OFFSET_OPERATOR_APPROVALS_VERIFIED"
ENGINE_ENV = "KAFKA_OFFSET_OPERATOR_DEFAULT_ENGINE"
ENGINES = ("Local", "Job", "SparkApplication")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run the operator (Kopf) against the cluster",
        description="Run the operator: reconcile OffsetDeletions (and policies) in the given namespaces or the "
        "whole cluster. Kubernetes access: the pod's service account in a cluster, else the kubeconfig "
        "(KUBECONFIG honoured, or --kubeconfig).",
    )
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--namespace", "-n", action="append", metavar="NS", dest="namespaces",
                       help="a namespace to serve (repeat for several)")
    scope.add_argument("--all-namespaces", "-A", action="store_true", help="serve every namespace")
    p.add_argument("--kubeconfig", type=Path, metavar="PATH", help="kubeconfig file (default: KUBECONFIG or in-cluster)")
    p.add_argument("--health-port", type=_port, default=8080, metavar="N",
                   help="liveness endpoint http://0.0.0.0:N/healthz (Kopf's); 0 turns it off (default 8080)")
    p.add_argument("--metrics-port", type=_port, default=9090, metavar="N",
                   help="Prometheus metrics on http://0.0.0.0:N/metrics; 0 turns them off (default 9090)")
    p.add_argument("--retry-interval", type=_seconds, default=30.0, metavar="SECONDS",
                   help="how often unfinished work is retried (Kafka down, group busy) (default 30)")
    p.add_argument("--backup-retention", type=_duration, default=30 * 86_400.0, metavar="DURATION",
                   help="how long the backup store keeps the backup of each change of offsets (default 30d)")
    p.add_argument("--scan-share-window", type=_window, default=5.0, metavar="SECONDS",
                   help="policies of the same Kafka cluster and credentials whose runs start within this many seconds "
                        "of each other share one scan of __consumer_offsets (SparkApplication engine: one application "
                        "per namespace); 'off': each scans alone (default 5)")
    p.add_argument("--default-engine", choices=ENGINES, default=os.environ.get(ENGINE_ENV) or "Local",
                   help="the analysis engine of a policy whose spec.analysis.engine is unset: Job (a Kubernetes Job "
                        "per scan; what the install and the operator image set), SparkApplication (spark-operator), "
                        f"or Local (PySpark inside the operator: needs the spark extra) (default: ${ENGINE_ENV}, "
                        "else Local)")
    p.add_argument("--kafka-concurrency", type=_concurrency, default=8, metavar="N",
                   help="at most N OffsetDeletions and policy re-checks talk to Kafka at once (default 8)")
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="text lines, or one JSON object per line for log collectors (default text)")
    peers = p.add_argument_group(
        "one actor at a time",
        "Processes sharing a peering object (Kopf's ClusterKopfPeering) never act together: the oldest live one "
        "acts, the others wait (docs/operator.md).")
    alone = peers.add_mutually_exclusive_group()
    alone.add_argument("--peering", default=DEFAULT_PEERING, metavar="NAME",
                       help=f"the ClusterKopfPeering object shared with the other processes of this installation "
                            f"(created when missing; its CRD must be installed) (default {DEFAULT_PEERING})")
    alone.add_argument("--standalone", action="store_true",
                       help="no peering: only if nothing else can ever run a second operator process")
    peers.add_argument("--peering-priority", type=int, metavar="N",
                       help="the highest live priority acts; equal ones pause each other (default: from the start "
                            "time, so the oldest process acts)")
    peers.add_argument("--peering-lifetime", type=_lifetime, default=60, metavar="SECONDS",
                       help="a process silent this long counts as gone: how long a crashed process's peers wait "
                            "before one takes over (default 60)")
    who = p.add_argument_group(
        "who asked and who approved",
        "The install's ValidatingAdmissionPolicy makes the API server verify spec.approvedBy and spec.requestedBy "
        "(docs/install.md).")
    who.add_argument("--user", default=os.environ.get(USER_ENV) or None, metavar="NAME",
                     help=f"the operator's own Kubernetes user name, written into its proposals' spec.requestedBy "
                          f"(and spec.approvedBy in Auto mode) (default: ${USER_ENV}; the install sets "
                          "system:serviceaccount:NAMESPACE:NAME)")
    who.add_argument("--approvals-verified", action="store_true",
                     default=os.environ.get(VERIFIED_ENV, "").lower() in ("1", "true", "yes"),
                     help="the install ships the admission policy: act on no approval without spec.approvedBy "
                          f"(default: ${VERIFIED_ENV})")
    p.add_argument("--verbose", "-v", action="store_true", help="debug logging (secrets stay masked)")
    p.set_defaults(run=run)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _lifetime(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number of seconds from 1 to 3600")
    return int(text)


def _window(text: str) -> float | None:
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (or 'off')") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 3600 seconds (or 'off')")
    return value


def _concurrency(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number from 1 to 256")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0.1 and 86400 seconds")
    return value


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
               "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def _duration(text: str) -> float:
    from kafka_offsets_model.durations import parse_duration_ms

    try:
        ms = parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ms < 60_000:
        raise argparse.ArgumentTypeError(f"{text!r} is shorter than a minute")
    return ms / 1000


def run(args: argparse.Namespace) -> int:
    import asyncio  # the operator's imports load here, not with the parser: `--help` and the others start quick

    import kubernetes.config

    from ..adapters import metrics
    from ..context import OperatorOptions
    from ..decisions.policy_spec import Engine
    from ..engines.dispatch import spark_installed
    from ..runtime import run_operator

    if args.approvals_verified and not args.user:
        raise UserError(f"--approvals-verified needs the operator's user name: --user NAME or ${USER_ENV} (its "
                        "Auto approvals must name it in spec.approvedBy)")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if args.log_format == "json"
                         else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])
    if args.default_engine not in ENGINES:
        raise UserError(f"--default-engine (or ${ENGINE_ENV}): one of {', '.join(ENGINES)}, not {args.default_engine!r}")
    if args.default_engine == "Local" and not spark_installed():
        raise UserError("--default-engine Local runs PySpark inside the operator, and this install has none "
                        "(pip install 'kafka-offset-operator[spark]'): use --default-engine Job or SparkApplication")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UserError(f"--kubeconfig: {args.kubeconfig} is not a file")
    options = OperatorOptions(
        namespaces=tuple(args.namespaces or ()),
        clusterwide=bool(args.all_namespaces),
        kubeconfig=args.kubeconfig,
        liveness_endpoint=f"http://0.0.0.0:{args.health_port}/healthz" if args.health_port else None,
        retry_interval=args.retry_interval,
        backup_retention_s=args.backup_retention,
        scan_share_window_s=args.scan_share_window,
        default_engine=Engine(args.default_engine),
        kafka_concurrency=args.kafka_concurrency,
        peering=None if args.standalone else args.peering,
        peering_priority=args.peering_priority,
        peering_lifetime_s=args.peering_lifetime,
        user=args.user,
        approvals_verified=args.approvals_verified,
    )
    if args.metrics_port:
        try:
            metrics.serve(args.metrics_port)
        except OSError as exc:
            raise UserError(f"--metrics-port {args.metrics_port}: {exc.strerror}") from None
    try:
        asyncio.run(run_operator(options))
    except kubernetes.config.ConfigException as exc:
        raise UserError(f"no Kubernetes configuration: {exc} (run in a pod, set KUBECONFIG or pass --kubeconfig)") from None
    return 0
