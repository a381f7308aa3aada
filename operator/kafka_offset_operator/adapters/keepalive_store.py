"""Keep-alive's rebase backups in the backup store (reconcilers.keepalive.RebaseBackupStore).

A rebase deletes a protected group and commits its offsets back, so its backup is written to the backup
store (unowned: it outlives the policy) before DeleteGroups, as a record `Taken`; once the offsets are back
the record is marked `Done` and stays until it expires. A record still `Taken` when a run starts is an
interrupted rebase, which the run finishes.

A re-commit of unchanged offsets needs no backup (nothing is lost), but a crash after its OffsetCommit reached
Kafka and before its audit line would leave no line: `RecommitIntents` writes, before each re-commit, the
group's offsets and where its `__consumer_offsets` partition ended into ONE record per pass (action
`Recommit`, created before the pass's first re-commit and grown by one group before each further one), and
marks the group Done after the commit's answer and its line. A group still `Taken` when a run starts is
resolved from Kafka's records (reconcilers/keepalive.resume_recommits).
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..model.api import BACKUP_ACTION_LABEL, POLICY_KIND, SOURCE_KIND_LABEL, SOURCE_NAME_LABEL
from ..model.backups import (
    INTENTS_KEY,
    Action,
    BackupRecord,
    RecommitIntent,
    Requester,
    intent_entries,
    intents_of,
)
from ..model.offsets import TP, Committed
from ..model.times import iso_of
from .backup_store import BackupStore, backup_name, label_value

TAKEN, DONE = "Taken", "Done"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


class _PolicyRecords:
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
        self.user = user  # the operator: it asks, and (mode Auto) approves, what it does itself

    def _taken_of(self, action: Action) -> list[BackupRecord]:
        labels = {SOURCE_KIND_LABEL: POLICY_KIND, SOURCE_NAME_LABEL: label_value(self.policy),
                  BACKUP_ACTION_LABEL: action.value}
        return [r for r in self.store.find(self.namespace, labels)
                if r.state == TAKEN and r.requested_by.uid == self.uid]


class RecommitIntents(_PolicyRecords):
    """reconcilers.keepalive.IntentStore in the backup store: one unowned record per pass (see the module)."""

    def __init__(self, store: BackupStore, policy_body: Mapping[str, Any], cluster_id: str | None,
                 bootstrap_servers: str, retention_s: float, user: str | None = None) -> None:
        super().__init__(store, policy_body, cluster_id, bootstrap_servers, retention_s, user)
        self._records: dict[str, BackupRecord] = {}  # by name: earlier passes' records read, this pass's own
        self._own: str | None = None

    def pending(self) -> list[RecommitIntent]:
        out = []
        for record in self._taken_of(Action.RECOMMIT):
            self._records[record.name] = record
            out += [i for i in intents_of(record) if i.state == TAKEN]
        return out

    def intend(self, group: str, offsets: Mapping[TP, Committed], offsets_log: Mapping[str, int] | None) -> str:
        intent = RecommitIntent("", group, dict(offsets), offsets_log)
        if self._own is None:
            now = _now()
            record = self.store.write(BackupRecord(
                # A pass of its own: two passes in one second (a restart, a second replica) must not share a
                # record, or the later one would replace the earlier one's settled intent for the same group.
                name=backup_name("cgop", self.policy, Action.RECOMMIT, f"{self.uid}/{iso_of(now)}/{secrets.token_hex(4)}"),
                action=Action.RECOMMIT, cluster_id=self.cluster_id, bootstrap_servers=self.bootstrap_servers,
                group=group, offsets={},
                requested_by=Requester(POLICY_KIND, self.namespace, self.policy, self.uid,
                                       "keep-alive re-commit of unchanged offsets (intent)", self.user),
                taken_at=iso_of(now), expires_at=iso_of(now + self.retention), state=TAKEN,
                extra={INTENTS_KEY: intent_entries([intent])}))
            self._own = record.name
            self._records[record.name] = record
            if [i.group for i in intents_of(record)] != [group]:  # the name was stored already (a retried write): grow it
                self._update(record, [*[i for i in intents_of(record) if i.group != group], intent])
            return record.name
        record = self._records[self._own]
        self._update(record, [*[i for i in intents_of(record) if i.group != group], intent])
        return self._own

    def settle(self, record_name: str, group: str) -> None:
        record = self._records.get(record_name)
        if record is None:
            return
        self._update(record, [RecommitIntent(i.record, i.group, i.offsets, i.offsets_log, DONE)
                              if i.group == group else i for i in intents_of(record)])

    def _update(self, record: BackupRecord, intents: list[RecommitIntent]) -> None:
        state = DONE if intents and all(i.state == DONE for i in intents) else TAKEN
        extra = {**record.extra, INTENTS_KEY: intent_entries(intents)}
        self._records[record.name] = self.store.update(self.namespace, replace(record, extra=extra, state=state))


class RebaseBackups(_PolicyRecords):
    """reconcilers.keepalive.RebaseBackupStore in the backup store: one unowned record per rebase."""

    def _taken(self) -> list[BackupRecord]:
        return self._taken_of(Action.REBASE)

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
