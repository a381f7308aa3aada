"""Backups of committed offsets as data.

Every change of offsets (an OffsetDeletion's delete or restore, keep-alive's rebase, a reset) first writes a
`BackupRecord` to the backup store (adapters/backup_store.py): one unowned ConfigMap per change, so it
outlives the resource that asked for it. The record says which cluster and group, each partition's
offset, leader epoch and metadata, and who asked, when and why; `restore` needs nothing else.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..model.offsets import TP, Committed

BACKUP_KEY = "backup.json.gz"
FORMAT = 1  # the document's version: a reader refuses what it does not know


class Action(StrEnum):
    """The change a backup was taken before."""

    DELETE = "Delete"  # an OffsetDeletion's OffsetDelete
    RESTORE = "Restore"  # a restore's admin OffsetCommit (the backup holds what was committed before it)
    REBASE = "Rebase"  # keep-alive's DeleteGroups + admin OffsetCommit of a protected group
    RESET = "Reset"  # an offset reset's admin OffsetCommit (the `reset` command, an OffsetReset)
    RECOMMIT = "Recommit"  # keep-alive's admin OffsetCommit of unchanged offsets: an intent, nothing to restore


@dataclass(frozen=True)
class Requester:
    """Who asked for the change: the resource (kind, namespace, name, uid) and why; and the people, as the
    resource's spec.requestedBy and spec.approvedBy name them (verified by the API server where the install
    ships its admission policy; decisions/approval.py)."""

    kind: str
    namespace: str
    name: str
    uid: str
    reason: str
    requested_by: str | None = None
    approved_by: str | None = None

    @property
    def people(self) -> str:
        """` (approved by alice, requested by bob)` for Events and messages; empty when neither is named."""
        parts = [f"approved by {self.approved_by}"] if self.approved_by else []
        parts += [f"requested by {self.requested_by}"] if self.requested_by else []
        return f" ({', '.join(parts)})" if parts else ""


@dataclass(frozen=True)
class BackupRecord:
    name: str  # the store's key (a ConfigMap name in the requester's namespace)
    action: Action
    cluster_id: str | None  # from Kafka's Metadata; None only if the cluster does not report one
    bootstrap_servers: str
    group: str
    offsets: Mapping[TP, Committed]
    requested_by: Requester
    taken_at: str  # RFC 3339
    expires_at: str  # RFC 3339: the store deletes it after this
    state: str = "Taken"  # Taken | Done (a rebase in progress stays Taken until its offsets are back)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True)
class RecommitIntent:
    """One group of a keep-alive pass's intent record (Action.RECOMMIT): the unchanged offsets it is about
    to re-commit and where the group's `__consumer_offsets` partition ended before (`offsets_log`), so a
    later run can look for the commit's records. `record`: the ConfigMap holding it."""

    record: str
    group: str
    offsets: Mapping[TP, Committed]
    offsets_log: Mapping[str, int] | None
    state: str = "Taken"  # Taken until the commit's answer (and its audit line); then Done


INTENTS_KEY = "recommits"  # BackupRecord.extra[INTENTS_KEY]: the pass's groups, in order


def intents_of(record: BackupRecord) -> list[RecommitIntent]:
    """The groups of an intent record (an empty list for any other record)."""
    out = []
    for entry in record.extra.get(INTENTS_KEY) or []:
        log = entry.get("offsetsLog")
        out.append(RecommitIntent(record.name, str(entry["group"]), parse_backup(entry.get("offsets") or []),
                                  {k: int(v) for k, v in log.items()} if log else None,
                                  str(entry.get("state", "Taken"))))
    return out


def intent_entries(intents: Sequence[RecommitIntent]) -> list[dict[str, Any]]:
    """The intents as the record's extra stores them."""
    return [{"group": i.group, "state": i.state, "offsetsLog": dict(i.offsets_log) if i.offsets_log else None,
             "offsets": backup_entries(i.offsets)} for i in intents]


class BackupError(ValueError):
    """A stored backup that cannot be read (foreign, truncated, a newer format)."""


def backup_entries(offsets: Mapping[TP, Committed]) -> list[dict[str, Any]]:
    return [
        {"topic": t, "partition": p, "offset": c.offset, "leaderEpoch": c.leader_epoch, "metadata": c.metadata}
        for (t, p), c in sorted(offsets.items())
    ]


def parse_backup(entries: Sequence[Mapping[str, Any]]) -> dict[TP, Committed]:
    return {
        (e["topic"], int(e["partition"])): Committed(int(e["offset"]), int(e.get("leaderEpoch", -1)), e.get("metadata") or "")
        for e in entries
    }


def to_document(record: BackupRecord) -> dict[str, Any]:
    who = record.requested_by
    return {
        "format": FORMAT,
        "name": record.name,
        "action": record.action.value,
        "cluster": {"id": record.cluster_id, "bootstrapServers": record.bootstrap_servers},
        "group": record.group,
        "requestedBy": {"kind": who.kind, "namespace": who.namespace, "name": who.name, "uid": who.uid,
                        "reason": who.reason, "user": who.requested_by},
        "approvedBy": who.approved_by,
        "takenAt": record.taken_at,
        "expiresAt": record.expires_at,
        "state": record.state,
        "extra": dict(record.extra),
        "offsets": backup_entries(record.offsets),
    }


def from_document(doc: Mapping[str, Any]) -> BackupRecord:
    try:
        if doc.get("format") != FORMAT:
            raise BackupError(f"backup format {doc.get('format')!r} is not {FORMAT}")
        who = doc["requestedBy"]
        return BackupRecord(
            name=str(doc["name"]),
            action=Action(doc["action"]),
            cluster_id=doc["cluster"].get("id"),
            bootstrap_servers=str(doc["cluster"]["bootstrapServers"]),
            group=str(doc["group"]),
            offsets=parse_backup(doc["offsets"]),
            requested_by=Requester(str(who["kind"]), str(who["namespace"]), str(who["name"]), str(who["uid"]),
                                   str(who.get("reason", "")), _user(who.get("user")), _user(doc.get("approvedBy"))),
            taken_at=str(doc["takenAt"]),
            expires_at=str(doc["expiresAt"]),
            state=str(doc.get("state", "Taken")),
            extra=dict(doc.get("extra") or {}),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, BackupError):
            raise
        raise BackupError(f"not a backup of kafka-offset-operator: {exc!s}") from None


def _user(value: Any) -> str | None:
    """A user name recorded in a backup (absent in backups written before they were recorded)."""
    return str(value) if value else None


def encode(record: BackupRecord) -> bytes:
    """gzip'd JSON: a ConfigMap holds 1 MiB, and offsets compress about tenfold."""
    return gzip.compress(json.dumps(to_document(record), separators=(",", ":")).encode(), mtime=0)


def decode(data: bytes) -> BackupRecord:
    try:
        doc = json.loads(gzip.decompress(data))
    except (OSError, EOFError, ValueError) as exc:
        raise BackupError(f"not a gzip'd JSON backup: {exc!s}") from None
    if not isinstance(doc, Mapping):
        raise BackupError("not a JSON object")
    return from_document(doc)
