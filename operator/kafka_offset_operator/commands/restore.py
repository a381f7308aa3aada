"""`restore`: commit a stored backup's offsets back into its group, from the backup alone (docs/safety.md).

The backup comes from the backup store (`--backup NAMESPACE/NAME`, read with the kubeconfig) or from a
file (`--file`, the ConfigMap's `backup.json.gz` or its JSON). The cluster and group are the backup's;
nothing of the OffsetDeletion or the policy that made it is needed (a secured cluster: --command-config,
the properties file Kafka's tools take). A dry run unless --execute: the plan
is printed first. Kafka's rule holds: an admin OffsetCommit is accepted only while the group has no
members, and only partitions without a committed offset are restored (a newer commit is never
overwritten). Nor is a newer commit that is gone again: a partition the group committed after the backup
was taken (its records in __consumer_offsets since then tell, the same offset included) and whose offset was
deleted or expired since is skipped, as restoring would move the group back to an older position
(--overwrite-newer restores it anyway, with a warning).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import kafka_connection, protection


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "restore",
        help="commit a stored backup's offsets back (dry run unless --execute)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--backup", metavar="NAMESPACE/NAME", help="a backup of the backup store (a ConfigMap)")
    source.add_argument("--file", type=Path, metavar="PATH", help="a backup file (backup.json.gz, or its JSON)")
    p.add_argument("--kubeconfig", type=Path, metavar="PATH", help="for --backup (default: KUBECONFIG or in-cluster)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="reach the cluster here instead of the backup's address (the cluster id must still match)")
    kafka_connection.add_arguments(p)
    p.add_argument("--execute", action="store_true", help="commit the offsets (without it, only print the plan)")
    protection.add_argument(p)
    p.add_argument("--overwrite-newer", action="store_true",
                   help="restore also partitions the group committed after the backup was taken (their newer "
                   "offset is gone again): moves the group back; without it they are skipped")
    p.set_defaults(run=run)


def _read(args: argparse.Namespace) -> Any:
    from ..model.api import BACKUPS_SELECTOR
    from ..model.backups import BackupError, decode, from_document

    try:
        if args.file is not None:
            data = args.file.read_bytes()
            return decode(data) if data[:2] == b"\x1f\x8b" else from_document(json.loads(data))
        namespace, _, name = str(args.backup).partition("/")
        if not namespace or not name:
            raise UserError(f"--backup wants NAMESPACE/NAME, got {args.backup!r}")
        from ..adapters.backup_store import BackupStore
        from ..adapters.kube import Kube, KubeError, NotFound, load_config

        kube = Kube(load_config(args.kubeconfig))
        try:
            return BackupStore(kube).read(namespace, name)
        except NotFound:
            raise UserError(f"--backup: no backup {namespace}/{name} (kubectl get configmaps -n {namespace} "
                            f"-l {BACKUPS_SELECTOR})") from None
        except KubeError as exc:
            raise UserError(f"--backup: {exc}") from None
        finally:
            kube.close()
    except OSError as exc:
        raise UserError(f"--file: {exc.strerror or exc}") from None
    except (BackupError, ValueError) as exc:
        raise UserError(f"not a backup of kafka-offset-operator: {exc}") from None


def run(args: argparse.Namespace) -> int:
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UserError(f"--kubeconfig: {args.kubeconfig} is not a file")
    record = _read(args)
    if record.action == "Recommit":  # model.backups.Action.RECOMMIT: keep-alive's intent record
        raise UserError(f"{record.name} records keep-alive re-commits of unchanged offsets (an intent: only "
                        "their commit times changed): there is nothing to restore")
    from ..adapters.kafka_admin import KafkaAdmin
    from ..decisions.deletion_steps import RestorePlan, plan_restore
    from ..decisions.fresh_verdict import recommitted_since
    from ..model.offsets import TP, KafkaFailure
    from ..reconcilers.fresh_facts import read_facts

    servers = args.bootstrap_server or record.bootstrap_servers
    settings = kafka_connection.connection(args, servers)  # before any Kafka call
    print(f"backup {record.name}: {record.action} of group {record.group} on cluster {record.cluster_id} "
          f"({record.partitions} partitions, taken {record.taken_at} for {record.requested_by.kind}/"
          f"{record.requested_by.name})")
    try:
        with KafkaAdmin(settings, timeout_ms=10_000) as admin:
            found = admin.cluster_id()
            if record.cluster_id and found != record.cluster_id:
                raise UserError(f"{servers} is cluster {found}, not the backup's cluster {record.cluster_id}")
            group = admin.describe_group(record.group)
            if group.active:
                members = ", ".join(f"{m.client_id}@{m.client_host}" for m in group.members) or group.state
                raise UserError(f"group {record.group} has members ({members}): Kafka accepts an admin "
                                "OffsetCommit only while a group has none; stop its consumers first")
            current = admin.committed_offsets(record.group)
            plan = plan_restore(record.offsets, sorted(record.offsets), current)
            newer: dict[TP, str] = {}
            if plan.to_commit:  # the group's commits since the backup was taken (decisions/fresh_verdict.py)
                facts = read_facts(admin, record.group, group, None, _since_backup(record), 10_000,
                                   f"the backup was taken ({record.taken_at})")
                newer = {tp: why for tp, why in recommitted_since(facts).items() if tp in plan.to_commit}
            if newer and args.overwrite_newer:
                print(f"WARNING: --overwrite-newer: restoring {len(newer)} partitions the group committed after "
                      "the backup was taken, moving it back: " + "; ".join(
                          f"{t}-{p}: {w}" for (t, p), w in sorted(newer.items())))
            elif newer:
                plan = RestorePlan({tp: c for tp, c in plan.to_commit.items() if tp not in newer}, plan.results)
            if args.execute and plan.to_commit:
                _check_protection(args, found, record.group)
            answers = admin.commit_offsets(record.group, plan.to_commit) if args.execute and plan.to_commit else {}
    except KafkaFailure as exc:
        raise UserError(f"Kafka at {servers}: {exc.code}: {exc.message}") from None
    rows = [(t, p, str(c.offset), "-" if (t, p) not in current else str(current[(t, p)].offset),
             ("committed" if answers.get((t, p), "x") is None else f"failed: {answers[(t, p)]}") if args.execute
             else "would commit") for (t, p), c in sorted(plan.to_commit.items())]
    rows += [(r["topic"], r["partition"], str(record.offsets[(r["topic"], r["partition"])].offset),
              str(current[(r["topic"], r["partition"])].offset),
              "already restored" if r["status"] == "Restored" else "skipped: committed since")
             for r in plan.results]
    if not args.overwrite_newer:
        rows += [(t, p, str(record.offsets[(t, p)].offset), "-", f"skipped: newer than the backup: {why}")
                 for (t, p), why in sorted(newer.items())]
    _table(["TOPIC", "PARTITION", "BACKUP", "NOW", "ACTION"], rows)
    skipped = "" if args.overwrite_newer or not newer else (
        f"; {len(newer)} skipped: the group committed them after the backup was taken (--overwrite-newer restores "
        "them anyway)")
    if not args.execute:
        print(f"dry run: {len(plan.to_commit)} offsets would be committed{skipped}; add --execute to commit them")
        return 0
    failed = sum(1 for e in answers.values() if e is not None)
    print(f"committed {len(answers) - failed} offsets of group {record.group}" + (f"; {failed} failed" if failed else "")
          + skipped)
    return 1 if failed else 0


def _check_protection(args: argparse.Namespace, cluster_id: str | None, group: str) -> None:
    """The policies, read with the kubeconfig (--backup's, or KUBECONFIG / in-cluster with --file)."""
    from ..adapters.kube import Kube, load_config

    if protection.ignored(args, group):
        return
    try:
        kube = Kube(load_config(args.kubeconfig))
    except Exception as exc:  # the kubernetes client's configuration errors share no base class
        raise UserError(f"--kubeconfig: no Kubernetes configuration to read the ConsumerGroupOffsetPolicies that "
                        f"may protect group {group}: {exc} ({protection.FLAG} skips the check)") from None
    try:
        protection.check(kube, args, cluster_id, group)
    finally:
        kube.close()
def _since_backup(record: Any) -> dict[str, Any]:
    """Where the group's records after the backup start: the position of its __consumer_offsets partition
    recorded with the backup (`extra.offsetsLog`, read before the backup's OffsetFetch), else the first record
    at or after the second after `takenAt` (whole seconds: a record of that second may be from before the
    backup, and restoring is the undo people rely on, so that second counts as before)."""
    log = record.extra.get("offsetsLog")
    if isinstance(log, dict) and isinstance(log.get("partition"), int) and isinstance(log.get("offset"), int):
        return {"offsetsLog": log, "takenAt": record.taken_at}
    from ..model.times import iso, parse_iso

    taken = parse_iso(record.taken_at)
    return {"takenAt": iso(taken + 1000) if taken is not None else record.taken_at}


def _table(header: list[str], rows: list[tuple[Any, ...]]) -> None:
    text = [[str(v) for v in row] for row in [tuple(header), *sorted(rows)]]
    widths = [max(len(r[i]) for r in text) for i in range(len(header))]
    for row in text:
        sys.stdout.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
