"""A backup of committed offsets as data: the entries an OffsetDeletion's status holds, and the gzip'd JSON a
ConfigMap holds when the backup is too large for a status. Keep-alive's rebase backups use the same entries."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..model.offsets import TP, Committed

BACKUP_KEY = "offsets.json.gz"


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


def encode_backup(offsets: Mapping[TP, Committed]) -> bytes:
    """A ConfigMap value for a large backup: gzip'd JSON, the same entries as in the status."""
    return gzip.compress(json.dumps(backup_entries(offsets), separators=(",", ":")).encode(), mtime=0)


def decode_backup(data: bytes) -> dict[TP, Committed]:
    return parse_backup(json.loads(gzip.decompress(data)))
