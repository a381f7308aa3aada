"""Keep-alive's rebase backups in the backup store (reconcilers.keepalive.BackupStore).

A rebase deletes a protected group and commits its offsets back, so its backup is written to the backup
store (unowned: it outlives the policy) before DeleteGroups, as a record `Taken`; once the offsets are back
the record is marked `Done` and stays until it expires. A record still `Taken` when a run starts is an
interrupted rebase, which the run finishes.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ..model.api import BACKUP_ACTION_LABEL, POLICY_KIND, SOURCE_KIND_LABEL, SOURCE_NAME_LABEL
from ..model.backups import Action, BackupRecord, Requester
from ..model.offsets import TP, Committed
from ..model.times import iso_of
from .backup_store import BackupStore, backup_name, label_value

TAKEN, DONE = "Taken", "Done"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


class RebaseBackups:
    def __init__(self, store: BackupStore, policy_body: Mapping[str, Any], cluster_id: str | None,
                 bootstrap_servers: str, retention_s: float, user: str | None = None) -> None:
        meta = policy_body["metadata"]
        self.store = store
        self.namespace = meta["namespace"]
        self.policy = meta["name"]
        self.uid = str(meta.get("uid") or "")
        self.cluster_id = cluster_id
        self.bootstrap_servers = bootstrap_servers
        self.retention = datetime.timedelta(seconds=retention_s)
        self.user = user  # the operator: it asks, and (mode Auto) approves, a rebase it does itself

    def _taken(self) -> list[BackupRecord]:
        labels = {SOURCE_KIND_LABEL: POLICY_KIND, SOURCE_NAME_LABEL: label_value(self.policy),
                  BACKUP_ACTION_LABEL: Action.REBASE.value}
        return [r for r in self.store.find(self.namespace, labels)
                if r.state == TAKEN and r.requested_by.uid == self.uid]

    def load_all(self) -> dict[str, dict[TP, Committed]]:
        return {r.group: dict(r.offsets) for r in self._taken()}

    def save(self, group: str, offsets: Mapping[TP, Committed]) -> str:
        now = _now()
        stored = self.store.write(BackupRecord(
            name=backup_name("cgop", self.policy, Action.REBASE, f"{self.uid}/{group}/{iso_of(now)}"),
            action=Action.REBASE, cluster_id=self.cluster_id, bootstrap_servers=self.bootstrap_servers,
            group=group, offsets=dict(offsets),
            requested_by=Requester(POLICY_KIND, self.namespace, self.policy, self.uid,
                                   "keep-alive rebase of a protected group (mode Auto)", self.user, self.user),
            taken_at=iso_of(now), expires_at=iso_of(now + self.retention), state=TAKEN))
        return stored.name

    def backup_name(self, group: str) -> str | None:
        return next((r.name for r in self._taken() if r.group == group), None)

    def drop(self, group: str) -> None:
        for record in self._taken():
            if record.group == group:
                self.store.mark(self.namespace, record, DONE)
