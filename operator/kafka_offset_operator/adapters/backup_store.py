"""The backup store: one ConfigMap per change of offsets, in the namespace of the resource that asked,
owned by nothing, so it outlives that resource and its policy (docs/safety.md).

    kubectl get configmaps -l <model.api.BACKUPS_SELECTOR> [-l <SOURCE_NAME_LABEL>=NAME]   (docs/safety.md)

A backup is written and read back before the first Kafka call that changes offsets (`write`). Writing is
idempotent per change: the name is derived from the change, and a backup already stored under it (a
retry after a crash, when offsets may already be gone) is kept, never overwritten, because it holds the
state before the change. The operator deletes backups `retention` after they were taken (`expire`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from ..model.api import (
    BACKUP_ACTION_LABEL,
    BACKUP_LABEL,
    GROUP,
    MANAGED_BY,
    SOURCE_KIND_LABEL,
    SOURCE_NAME_LABEL,
)
from ..model.backups import BACKUP_KEY, Action, BackupError, BackupRecord, decode, encode
from . import metrics
from .kube import Kube, KubeError, NotFound

log = logging.getLogger(__name__)

SELECTOR = {**MANAGED_BY, BACKUP_LABEL: "true"}
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9._-]")


class BackupNotStored(RuntimeError):
    """The backup could not be written and read back: no change of offsets may start."""


def backup_name(kind: str, source: str, action: Action, key: str) -> str:
    """A ConfigMap name for one change: readable (kind, source name, action) and unique (`key`: the source's
    uid for a one-off change, or the uid plus group and time for a repeated one)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    stem = re.sub(r"[^a-z0-9.-]", "-", f"{kind}-{source}".lower())[:200].strip("-.")
    return f"offset-backup-{stem}-{action.value.lower()}-{digest}"


def label_value(text: str) -> str:
    """`text` as a label value (a name cut to 63 characters; the backup holds it whole)."""
    return _LABEL_VALUE.sub("-", text)[:63].strip("-._")


@contextlib.contextmanager
def _counted(operation: str) -> Iterator[None]:
    """Count a failure of the store (the API refused or lost a backup) for the BackupStoreErrors alert."""
    try:
        yield
    except (KubeError, BackupNotStored):
        metrics.backup_store_error(operation)
        raise


class BackupStore:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def write(self, record: BackupRecord) -> BackupRecord:
        """Store `record` (or keep the one already stored for this change) and read it back. Returns what is
        stored: the caller must act on that, not on what it meant to write."""
        with _counted("write"):
            return self._write(record)

    def _write(self, record: BackupRecord) -> BackupRecord:
        namespace = record.requested_by.namespace
        who = record.requested_by
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": record.name,
                "namespace": namespace,
                "labels": {**SELECTOR, BACKUP_ACTION_LABEL: record.action.value, SOURCE_KIND_LABEL: who.kind,
                           SOURCE_NAME_LABEL: label_value(who.name)},
                "annotations": {f"{GROUP}/group": record.group, f"{GROUP}/cluster-id": record.cluster_id or "",
                                f"{GROUP}/taken-at": record.taken_at, f"{GROUP}/expires-at": record.expires_at,
                                f"{GROUP}/requested-by": f"{who.kind}/{who.name} ({who.reason})"},
            },
            "binaryData": {BACKUP_KEY: base64.b64encode(encode(record)).decode()},
        }
        created = self.kube.create_configmap(namespace, body)
        try:
            stored = self.read(namespace, record.name)
        except (NotFound, BackupError) as exc:
            raise BackupNotStored(f"backup {namespace}/{record.name} cannot be read back: {exc}") from None
        if created and stored != record:
            raise BackupNotStored(f"backup {namespace}/{record.name} reads back different from what was written")
        if not created and (stored.requested_by.uid, stored.action) != (who.uid, record.action):
            raise BackupNotStored(f"ConfigMap {namespace}/{record.name} exists and is not this change's backup")
        return stored

    def read(self, namespace: str, name: str) -> BackupRecord:
        cm = self.kube.get_configmap(namespace, name)
        data = (cm.get("binaryData") or {}).get(BACKUP_KEY)
        if data is None:
            raise BackupError(f"ConfigMap {namespace}/{name} holds no {BACKUP_KEY}")
        return decode(base64.b64decode(data))

    def mark(self, namespace: str, record: BackupRecord, state: str) -> BackupRecord:
        """Record the change's progress in its backup (a rebase is Done once its offsets are back)."""
        return self.update(namespace, replace(record, state=state))

    def update(self, namespace: str, updated: BackupRecord) -> BackupRecord:
        """Replace a stored record's document (its name and labels stay): a keep-alive pass's intent record
        grows by one group before each re-commit."""
        with _counted("write"):
            self.kube.patch_configmap(namespace, updated.name,
                                      {"binaryData": {BACKUP_KEY: base64.b64encode(encode(updated)).decode()}})
        return updated

    def find(self, namespace: str | None, labels: Mapping[str, str] | None = None) -> list[BackupRecord]:
        out = []
        for cm in self.kube.list_configmaps(namespace, {**SELECTOR, **(labels or {})}):
            data = (cm.get("binaryData") or {}).get(BACKUP_KEY)
            try:
                out.append(decode(base64.b64decode(data or "")))
            except BackupError as exc:
                meta = cm.get("metadata") or {}
                log.warning("skipping ConfigMap %s/%s: %s", meta.get("namespace"), meta.get("name"), exc)
        return sorted(out, key=lambda r: (r.taken_at, r.name))

    def expire(self, namespace: str | None, now: str) -> list[str]:
        """Delete backups whose expiry has passed (RFC 3339 strings of one format compare as times)."""
        with _counted("expire"):
            return self._expire(namespace, now)

    def _expire(self, namespace: str | None, now: str) -> list[str]:
        gone = []
        for cm in self.kube.list_configmaps(namespace, SELECTOR):
            meta: Mapping[str, Any] = cm.get("metadata") or {}
            expires = (meta.get("annotations") or {}).get(f"{GROUP}/expires-at")
            if expires and expires <= now and self.kube.delete_configmap(meta["namespace"], meta["name"]):
                gone.append(f"{meta['namespace']}/{meta['name']}")
        return gone
