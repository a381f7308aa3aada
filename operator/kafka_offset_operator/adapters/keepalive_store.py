"""Where keep-alive keeps a rebase's backup while the rebase is under way: a ConfigMap owned by the policy."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from typing import Any

from ..model.api import MANAGED_BY, POLICY_LABEL
from ..model.backups import backup_entries, parse_backup
from ..model.offsets import TP, Committed
from .kube import Kube, NotFound, owner_reference

KEEPALIVE_KEY = "backups.json.gz"


class ConfigMapStore:
    """reconcilers.keepalive.BackupStore in a ConfigMap owned by the policy (`<policy>-keepalive`), so a rebase's
    backup survives an operator restart: one binaryData key, gzip'd JSON {group: [offsets]}."""

    def __init__(self, kube: Kube, policy_body: Mapping[str, Any]) -> None:
        meta = policy_body["metadata"]
        self.kube = kube
        self.namespace = meta["namespace"]
        self.name = f"{meta['name'][:240]}-keepalive"
        self.owner = owner_reference(policy_body)
        self.labels = {**MANAGED_BY, POLICY_LABEL: meta["name"]}

    def load_all(self) -> dict[str, dict[TP, Committed]]:
        try:
            data = self.kube.get_configmap_binary(self.namespace, self.name, KEEPALIVE_KEY)
        except NotFound:
            return {}
        return {group: parse_backup(entries) for group, entries in json.loads(gzip.decompress(data)).items()}

    def _write(self, backups: Mapping[str, Mapping[TP, Committed]]) -> None:
        if not backups:
            self.kube.delete_configmap(self.namespace, self.name)
            return
        doc = {group: backup_entries(offsets) for group, offsets in sorted(backups.items())}
        self.kube.put_configmap_binary(self.namespace, self.name, KEEPALIVE_KEY,
                                       gzip.compress(json.dumps(doc).encode(), mtime=0), self.owner, self.labels)

    def save(self, group: str, offsets: Mapping[TP, Committed]) -> None:
        backups: dict[str, Mapping[TP, Committed]] = dict(self.load_all())
        backups[group] = offsets
        self._write(backups)

    def drop(self, group: str) -> None:
        backups = self.load_all()
        if backups.pop(group, None) is not None:
            self._write(backups)
