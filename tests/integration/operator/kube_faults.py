"""What the Kubernetes fault tests share: the writes an OffsetDeletion makes, as emulator criteria (one per
Kubernetes-visible step), and the end-state checks on Kafka and on the backup store."""

from __future__ import annotations

import base64
import collections
from collections.abc import Callable
from typing import Any

import kmock
from operator_harness import GROUP_VERSION, NAMESPACE, Kube

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.model.backups import BACKUP_KEY, BackupRecord, decode
from offset_expiry.codec import decode_record

BACKUP_LABEL = "kafkaoffsets.dev/backup"
MAIN = kmock.K8sCriteria(subresource=None)  # the object itself, not its status


def _body_has(*parts: bytes) -> Callable[[kmock.Request], bool]:
    return lambda r: all(p in r.body for p in parts)


def status_write(**fields: Any) -> tuple[Any, ...]:
    """A status patch of an OffsetDeletion that sets `fields` (Ellipsis: any value)."""
    return "patch offsetdeletions", kmock.subresource("status"), kmock.data({"status": fields})


# The Kubernetes-visible steps of an approved OffsetDeletion, in the order they happen, each as the criteria of
# its write (with the deletion's name added by the test).
DELETION_STEPS: dict[str, tuple[Any, ...]] = {
    "finalizer-added": ("patch offsetdeletions", MAIN, _body_has(b'"add"', b'"/metadata/finalizers"')),
    "backup-configmap-created": ("create configmaps", kmock.data({"metadata": {"labels": {BACKUP_LABEL: "true"}}})),
    "status-backed-up-target-frozen": status_write(phase="Running", target=..., backup=...),
    "status-delete-started": status_write(deleteStartTime=...),
    "status-succeeded": status_write(phase="Succeeded"),
    "finalizer-removed-on-delete": ("patch offsetdeletions", MAIN, _body_has(b'"remove"', b'"/metadata/finalizers"')),
}


def step_criteria(step: str, name: str) -> tuple[Any, ...]:
    """The criteria of `step`'s write for the OffsetDeletion `name` (its backup: the one it asked for)."""
    if step == "backup-configmap-created":
        return (*DELETION_STEPS[step], kmock.data({"metadata": {"labels": {"kafkaoffsets.dev/source-name": name}}}))
    return (*DELETION_STEPS[step], kmock.name(name))


def deletion(name: str, bootstrap: str, group: str, *, approved: bool = True) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"kafka": {"bootstrapServers": bootstrap}, "group": group, "topics": [{"name": "orders"}],
                     "approved": approved}}


def offset_tombstones(bootstrap: str, group: str) -> collections.Counter[tuple[str, int]]:
    """How many times each partition's committed offset of `group` was deleted: the OffsetCommit tombstones in
    `__consumer_offsets` (an OffsetDelete writes one per partition it deletes; Kafka keeps them all until
    compaction, which the sandbox does not run)."""
    counts: collections.Counter[tuple[str, int]] = collections.Counter()
    with OffsetsTopicReader(bootstrap) as reader:
        for rec in reader.records([reader.partition_for(group)], from_beginning=True, follow=False):
            if rec.value is not None:
                continue
            decoded = decode_record(rec.key, None)
            key = decoded["key"]
            if decoded["type"] == "OffsetCommit" and key.get("group") == group:
                counts[(key["topic"], key["partition"])] += 1
    return counts


def backups(kube: Kube, source: str) -> list[BackupRecord]:
    """The stored backups a resource asked for (the backup store's ConfigMaps, decoded)."""
    found = []
    for cm in kube.list("v1", "configmaps"):
        labels = cm["metadata"].get("labels") or {}
        if labels.get(BACKUP_LABEL) == "true" and labels.get("kafkaoffsets.dev/source-name") == source:
            found.append(decode(base64.b64decode(cm["binaryData"][BACKUP_KEY])))
    return found


def assert_deleted_once_with_a_backup(bootstrap: str, kube: Kube, source: str, group: str,
                                      before: dict[tuple[str, int], int]) -> None:
    """Nothing deleted twice, nothing deleted without a stored backup holding its offset from before."""
    tombstones = offset_tombstones(bootstrap, group)
    assert set(tombstones) == set(before), tombstones
    assert all(n == 1 for n in tombstones.values()), f"deleted more than once: {tombstones}"
    stored = [b for b in backups(kube, source) if b.group == group]
    assert len(stored) == 1, stored  # one backup per change, however many visits and processes
    assert {tp: c.offset for tp, c in stored[0].offsets.items()} == before
