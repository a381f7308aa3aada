"""`reset`: move a consumer group's committed offsets, as `kafka-consumer-groups.sh --reset-offsets` does, with a
backup first (docs/offset-reset.md).

Targets: --to-earliest, --to-latest, --to-current (the committed offset; the log end offset where there is
none), --to-datetime (RFC 3339, or Kafka's YYYY-MM-DDTHH:mm:SS.sss without a zone: UTC, as Kafka reads it),
--by-duration (back from now, e.g. 1h30m), --shift-by N, --to-offset N, --from-file FILE (the CSV Kafka's tool
and --export write: topic,partition,offset, or group,topic,partition,offset), --from-backup NAMESPACE/NAME (a
backup of the backup store: the undo of a deletion or of another reset), --from-group GROUP (copy another
group's committed offsets). Scope: --all-topics (every partition the group has an offset for; with
--from-file/--from-backup/--from-group every partition of the source) or --topic TOPIC[:P,P] (repeatable);
--from-file without a scope takes the whole file. New offsets are clamped to each partition's log as Kafka's tool
clamps them.

Security: --command-config FILE, the properties file Kafka's tools take (SASL PLAIN/SCRAM, PEM TLS).

A dry run unless --execute (--dry-run says so explicitly, as with Kafka's tool): the plan is printed (GROUP
TOPIC PARTITION CURRENT NEW) and nothing changes. With --execute, the group's current offsets are written to
the backup store first (a ConfigMap, read with the kubeconfig), then committed with an admin OffsetCommit,
which Kafka accepts only while the group has no members: stop its consumers first.
"""

from __future__ import annotations

import argparse
import getpass
import socket
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..model.api import BACKUPS_SELECTOR
from . import kafka_connection, protection

if TYPE_CHECKING:  # imported where used: `--help` and bad arguments load no Kafka or Kubernetes client
    from ..adapters.kube import Kube
    from ..decisions.reset_plan import ResetPlan, ResetScope, ResetTarget
    from ..decisions.reset_steps import CommitPlan
    from ..model.backups import BackupRecord
    from ..model.connection import ConnectionSettings
    from ..model.offsets import TP, Committed

# The flags behind each field of a target and a scope, for one-line errors naming what the user typed.
_TARGET_FLAGS = {"earliest": "--to-earliest", "latest": "--to-latest", "datetime": "--to-datetime",
                 "duration": "--by-duration", "shiftBy": "--shift-by", "offset": "--to-offset",
                 "fromBackup": "--from-backup", "fromGroup": "--from-group", "current": "--to-current",
                 "fromFile": "--from-file"}
DEFAULT_RETENTION = "30d"  # as the operator's backups (OperatorOptions.backup_retention_s)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reset",
        help="reset a group's committed offsets (dry run unless --execute; a backup first)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]", help="the Kafka cluster")
    p.add_argument("--group", required=True, help="the consumer group to reset")
    scope = p.add_mutually_exclusive_group()  # required, except with --from-file (parse_args)
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has an offset for (or the source has)")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                       help="a topic, optionally with partitions; repeatable")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the log start offset")
    target.add_argument("--to-latest", action="store_true", help="the log end offset")
    target.add_argument("--to-current", action="store_true",
                        help="the committed offset as it is (the log end offset where the group has none)")
    target.add_argument("--to-datetime", metavar="DATETIME",
                        help="the first offset at or after this time: RFC 3339 (2026-01-31T12:00:00Z), or Kafka's "
                        "tool's YYYY-MM-DDTHH:mm:SS.sss without a zone, read as UTC as Kafka reads it")
    target.add_argument("--by-duration", metavar="DURATION", help="the first offset at or after this long ago (1h30m)")
    target.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (negative: back)")
    target.add_argument("--to-offset", type=int, metavar="N",
                        help="offset N, clamped to each partition's log as Kafka's tool clamps it (below the log "
                        "start offset, a negative N too: the log start offset)")
    target.add_argument("--from-backup", metavar="NAMESPACE/NAME", help="the offsets of a backup (an undo)")
    target.add_argument("--from-group", metavar="GROUP", help="another group's committed offsets")
    target.add_argument("--from-file", type=Path, metavar="FILE",
                        help="the offsets of a CSV file as Kafka's tool --export writes it (topic,partition,offset; "
                        "or group,topic,partition,offset)")
    kafka_connection.add_arguments(p)
    run_mode = p.add_mutually_exclusive_group()  # Kafka's tool: --dry-run (the default) or --execute
    run_mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default; as Kafka's tool)")
    run_mode.add_argument("--execute", action="store_true",
                          help="write the backup and commit (without it, only print the plan)")
    protection.add_argument(p)
    p.add_argument("--export", type=Path, metavar="FILE",
                   help="also write the plan as Kafka's tool exports it (CSV: topic,partition,offset)")
    p.add_argument("--overwrite-newer", action="store_true",
                   help="commit also over a partition the group committed again after the plan was read (the same "
                   "offset included: someone uses it); without it such a partition is skipped")
    p.add_argument("--kubeconfig", type=Path, metavar="PATH",
                   help="for the backup store (default: KUBECONFIG or in-cluster)")
    p.add_argument("--backup-namespace", metavar="NAMESPACE",
                   help="where --execute writes its backup (default: the kubeconfig context's namespace)")
    p.add_argument("--backup-retention", default=DEFAULT_RETENTION, metavar="DURATION",
                   help=f"how long the backup store keeps the backup (default {DEFAULT_RETENTION})")
    p.set_defaults(run=run)


# -- the arguments, all checked before any call


def _target_raw(args: argparse.Namespace) -> dict[str, Any]:
    return {"earliest": args.to_earliest or None, "latest": args.to_latest or None, "datetime": args.to_datetime,
            "duration": args.by_duration, "shiftBy": args.shift_by, "offset": args.to_offset,
            "fromBackup": args.from_backup, "fromGroup": args.from_group, "current": args.to_current or None,
            "fromFile": None if args.from_file is None else str(args.from_file)}


def _scope_raw(args: argparse.Namespace) -> dict[str, Any]:
    if args.all_topics or (args.topic is None and args.from_file is not None):  # Kafka's tool: the whole file
        return {"allTopics": True}
    if args.topic is None:
        raise UserError("one of the arguments --all-topics --topic is required (with --from-file, leave both out for the whole file)")
    topics: list[dict[str, Any]] = []
    for arg in args.topic:
        name, colon, parts = str(arg).partition(":")
        if not colon:
            topics.append({"name": name})
            continue
        numbers = []
        for part in parts.split(","):
            if not part.strip().isdigit():
                raise UserError(f"--topic: {part!r} in {arg!r} is not a partition number (TOPIC or TOPIC:0,1)")
            numbers.append(int(part))
        topics.append({"name": name, "partitions": numbers})
    return {"topics": topics}


def parse_args(args: argparse.Namespace) -> tuple[ResetTarget, ResetScope, int]:
    """(target, scope, backup retention in ms), or UserError naming the flag."""
    from kafka_offsets_model.durations import parse_duration_ms
    from kafka_offsets_model.errors import SpecError

    from ..decisions.reset_plan import TargetKind, check_group, parse_scope, parse_target

    try:
        check_group(args.group, "--group")
        target = parse_target(_target_raw(args), "target", tuple(TargetKind), kafka_forms=True)
        scope = parse_scope(_scope_raw(args), "scope")
    except SpecError as exc:
        field = exc.field
        flag = (_TARGET_FLAGS.get(field.removeprefix("target."), "--target") if field.startswith("target")
                else "--topic" if field.startswith("scope") else field)
        raise UserError(f"{flag}: {exc.problem}") from None
    try:
        retention = parse_duration_ms(args.backup_retention)
    except ValueError as exc:
        raise UserError(f"--backup-retention: {exc}") from None
    if retention < 60_000:
        raise UserError(f"--backup-retention: {args.backup_retention!r} is shorter than a minute")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UserError(f"--kubeconfig: {args.kubeconfig} is not a file")
    if args.export is not None:
        if args.export.is_dir():
            raise UserError(f"--export: {args.export} is a directory; give the path of a file to write")
        if not args.export.absolute().parent.is_dir():
            raise UserError(f"--export: the directory {args.export.absolute().parent} does not exist")
    for server in str(args.bootstrap_server).split(","):
        host, colon, port = server.strip().rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"--bootstrap-server: {server!r} is not HOST:PORT")
    return target, scope, retention


# -- running it


def run(args: argparse.Namespace) -> int:
    target, scope, retention_ms = parse_args(args)
    from ..decisions.reset_plan import TargetKind

    # Every file is read and checked before any call: the offsets of --from-file, the --command-config.
    from_file = _read_reset_file(args.from_file, args.group) if target.kind is TargetKind.FROM_FILE else None
    settings = kafka_connection.connection(args, args.bootstrap_server)
    # The backup store is reached before Kafka: a kubeconfig that does not work is found before any Kafka call.
    kube = _kube(args) if args.execute or target.kind is TargetKind.FROM_BACKUP else None
    try:
        backup = _read_backup(kube, args, target) if kube is not None and target.kind is TargetKind.FROM_BACKUP else None
        source = backup.offsets if backup is not None else from_file
        return _reset(args, settings, target, scope, retention_ms, kube, backup, source)
    finally:
        if kube is not None:
            kube.close()


def _read_reset_file(path: Path, group: str) -> dict[TP, Committed]:
    """The offsets --from-file gives `group`, every line checked before anything else happens."""
    from ..decisions.reset_file import ResetFileError, parse_reset_file

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--from-file: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UserError(f"--from-file: {path} is not UTF-8 text (a CSV of topic,partition,offset)") from None
    try:
        return parse_reset_file(text, group)
    except ResetFileError as exc:
        raise UserError(f"--from-file {path}: {exc}") from None


def _reset(args: argparse.Namespace, settings: ConnectionSettings, target: ResetTarget, scope: ResetScope,
           retention_ms: int, kube: Kube | None, backup: BackupRecord | None,
           source: Mapping[TP, Committed] | None) -> int:
    from ..adapters.kafka_admin import KafkaAdmin
    from ..decisions.fresh_verdict import rederive
    from ..decisions.reset_plan import (
        FROM_SOURCE,
        ResetRefused,
        check_source,
        plan_csv,
        plan_table,
        uncommitted_partitions,
    )
    from ..decisions.reset_steps import plan_commit, skip_changed
    from ..model.offsets import OUTCOME_UNKNOWN, KafkaFailure
    from ..reconcilers.fresh_facts import log_position, read_facts
    from ..reconcilers.reset_reads import read_plan

    servers = args.bootstrap_server
    stored: BackupRecord | None = None
    try:
        with KafkaAdmin(settings, timeout_ms=10_000) as admin:
            cluster_id = admin.cluster_id()
            # the group's state first, its offsets after: a commit made before an Empty answer is in the plan (and
            # the backup); one made after it is caught by the re-read right before the commit
            group = admin.describe_group(args.group)
            # where the group's __consumer_offsets partition ends before its offsets are read: right before the
            # commit, its records since then tell what the group committed meanwhile (decisions/fresh_verdict.py)
            position = log_position(admin, args.group, 10_000) if args.execute else None
            try:
                check_source(args.group, target, cluster_id, backup.group if backup else None,
                             backup.cluster_id if backup else None)
                added = uncommitted_partitions(backup.extra) if backup is not None else []  # an undo: stays
                plan = read_plan(admin, args.group, target, scope, int(time.time() * 1000), source, added)
            except ResetRefused as exc:
                raise UserError(str(exc)) from None
            members = ", ".join(f"{m.client_id}@{m.client_host}" for m in group.members) or group.state
            print(f"reset of group {args.group} ({group.state}) on cluster {cluster_id or servers} to "
                  f"{target.describe()}")
            for line in plan_table(plan):
                print(line)
            if args.export is not None:
                _export(args.export, plan_csv(plan))
            if plan.refusal is not None:
                raise UserError(f"nothing reset: {plan.refusal}")
            if not plan.to_commit:
                where = "the source" if target.kind in FROM_SOURCE else f"group {args.group}"
                print(f"nothing to reset: {where} has no offsets in the scope")
                return 0
            if not args.execute:
                print(f"dry run: {len(plan.to_commit)} offsets would be committed ({plan.changes} of them change); "
                      "add --execute to commit them")
                if group.active:
                    print(f"note: group {args.group} has members ({members}): --execute is refused until its "
                          "consumers are stopped")
                return 0
            if group.active:
                raise UserError(f"group {args.group} has members ({members}): Kafka accepts an admin OffsetCommit "
                                "only while a group has none; stop its consumers first")
            assert kube is not None
            protection.check(kube, args, cluster_id, args.group)  # before the backup: nothing changes
            stored = _write_backup(kube, args, admin.settings.bootstrap_servers, cluster_id, plan, retention_ms)
            print(f"backup {stored.requested_by.namespace}/{stored.name} written ({stored.partitions} offsets as "
                  "they were)")
            # right before the commit: only partitions still as planned (and backed up), as an OffsetReset does
            current = admin.committed_offsets(args.group)
            todo = plan_commit(plan.before, plan.to_commit, current, started=False)
            if todo.to_commit and position is not None:
                facts = read_facts(admin, args.group, group, None, {"offsetsLog": position}, 10_000,
                                   "the plan was read")
                verdict = rederive(todo.to_commit, facts, {}, proposed=False)
                if verdict.partitions and args.overwrite_newer:
                    print(f"WARNING: --overwrite-newer: committing over {len(verdict.partitions)} partitions the "
                          "group committed again after the plan was read (someone uses them): "
                          + "; ".join(f"{t}-{p}: {w}" for (t, p), w in sorted(verdict.partitions.items())))
                else:
                    todo = skip_changed(todo, verdict, plan.before, current)
            answers = admin.commit_offsets(args.group, todo.to_commit) if todo.to_commit else {}
    except KafkaFailure as exc:
        if stored is not None and exc.code in OUTCOME_UNKNOWN:
            raise UserError(f"the OffsetCommit was sent but its answer was lost ({exc.code}): Kafka may or may not "
                            f"have applied it; backup {stored.requested_by.namespace}/{stored.name} holds the offsets "
                            "before") from None
        raise UserError(f"Kafka at {servers}: {exc.code}: {exc.message}") from None
    return _results(args, plan, todo, answers, f"{stored.requested_by.namespace}/{stored.name}")


def _kube(args: argparse.Namespace) -> Kube:
    from ..adapters.kube import Kube, load_config

    try:
        return Kube(load_config(args.kubeconfig))
    except Exception as exc:  # the kubernetes client's configuration errors share no base class
        raise UserError(f"--kubeconfig: no Kubernetes configuration for the backup store: {exc}") from None


def _read_backup(kube: Kube, args: argparse.Namespace, target: ResetTarget) -> BackupRecord:
    from ..adapters.backup_store import BackupStore
    from ..adapters.kube import KubeError, NotFound, current_namespace
    from ..model.backups import BackupError

    assert target.backup is not None
    namespace = target.backup_namespace or current_namespace(args.kubeconfig)
    try:
        return BackupStore(kube).read(namespace, target.backup)
    except NotFound:
        raise UserError(f"--from-backup: no backup {namespace}/{target.backup} (kubectl get configmaps -n "
                        f"{namespace} -l {BACKUPS_SELECTOR})") from None
    except BackupError as exc:
        raise UserError(f"--from-backup: {namespace}/{target.backup} is not a backup of kafka-offset-operator: "
                        f"{exc}") from None
    except KubeError as exc:
        raise UserError(f"--from-backup: {exc}") from None


def _write_backup(kube: Kube, args: argparse.Namespace, servers: str, cluster_id: str | None, plan: ResetPlan,
                  retention_ms: int) -> BackupRecord:
    """The group's offsets as they are, for every partition the reset commits (a partition without an offset
    has nothing to keep: the backup lists it under extra.uncommitted), stored and read back first."""
    from ..adapters.backup_store import BackupNotStored, BackupStore, backup_name
    from ..adapters.kube import KubeError, current_namespace
    from ..decisions.reset_steps import uncommitted
    from ..model.backups import Action, BackupRecord, Requester
    from ..model.times import iso

    namespace = args.backup_namespace or current_namespace(args.kubeconfig)
    uid = str(uuid.uuid4())
    now_ms = int(time.time() * 1000)
    record = BackupRecord(
        name=backup_name("reset", args.group, Action.RESET, uid),
        action=Action.RESET, cluster_id=cluster_id, bootstrap_servers=servers, group=args.group,
        offsets=plan.before,
        requested_by=Requester("ResetCommand", namespace, _who(), uid,
                               f"kafka-offset-operator reset --execute: {plan.target.describe()}"),
        taken_at=iso(now_ms), expires_at=iso(now_ms + retention_ms),
        extra={"target": plan.target.describe(), "uncommitted": uncommitted(plan)})
    try:
        return BackupStore(kube).write(record)
    except (KubeError, BackupNotStored) as exc:
        raise UserError(f"no backup could be written, nothing changed: {exc}") from None


def _results(args: argparse.Namespace, plan: ResetPlan, todo: CommitPlan, answers: Mapping[TP, str | None],
             backup: str) -> int:
    """Kafka's answer for each partition committed; a partition committed by someone else since the plan was
    read (found at another offset right before the commit) was not sent, and says so."""
    from ..decisions.reset_plan import format_table

    table = [["GROUP", "TOPIC", "PARTITION", "BEFORE", "AFTER", "RESULT"]]
    failed = 0
    for r in plan.rows:
        if r.new is None:
            continue
        if r.tp in todo.to_commit:
            error = answers.get(r.tp, "NO_ANSWER")
            failed += error is not None
            result = "committed" if error is None else f"failed: {error}"
        else:
            result = "skipped: " + next((str(x.get("message")) for x in todo.results
                                         if (x.get("topic"), x.get("partition")) == r.tp), "not sent")
        table.append([args.group, r.topic, str(r.partition), "-" if r.current is None else str(r.current),
                      str(r.new), result])
    for line in format_table(table):
        print(line)
    skipped = len(plan.to_commit) - len(todo.to_commit)
    print(f"committed {len(todo.to_commit) - failed} offsets of group {args.group}"
          + (f"; {failed} failed" if failed else "")
          + (f"; {skipped} skipped: committed by someone else since the plan was read (the same offset "
             "included), left as they are (--overwrite-newer commits over them)" if skipped else ""))
    fresh = [f"{r.topic}-{r.partition}" for r in plan.rows if r.new is not None and r.current is None]
    if len(fresh) < len(plan.to_commit):
        config = f" --command-config {args.command_config}" if args.command_config is not None else ""
        print(f"undo: kafka-offset-operator reset --bootstrap-server {args.bootstrap_server}{config} --group "
              f"{args.group} --all-topics --from-backup {backup} --execute")
    if fresh:
        shown = ", ".join(fresh[:5]) + (", ..." if len(fresh) > 5 else "")
        print(f"the group had no offset before for {len(fresh)} of them ({shown}): an undo leaves those as they "
              "are now")
    return 1 if failed else 0


def _export(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise UserError(f"--export: {exc.strerror or exc}") from None


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
