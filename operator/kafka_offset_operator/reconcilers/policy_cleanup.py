"""A ConsumerGroupOffsetPolicy's child objects: its OffsetDeletions, tidied when the policy is deleted and
trimmed after each run (decisions/proposals.py decides which; this module lists, deletes and releases).

The policy's OffsetDeletions carry no ownerReference to it (decisions/proposals.py says why): when the
policy is deleted, its deletion handler first waits for a visit under way to end (policy_scheduler.py), then
`on_policy_deleted` deletes the children that never started and leaves the others. Each delete carries the
resourceVersion it was read at, so a child that changed since (approved and started, say) is kept.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from ..adapters.kube import Conflict, Kube, KubeError, NotFound
from ..decisions import proposals
from ..decisions.policy_spec import PolicySpec
from ..model.api import DELETIONS, GROUP, POLICY_LABEL, VERSION

log = logging.getLogger(__name__)

# Lists and deletes of one history trim: a child changed since its list is judged again on the next list.
_TRIM_ATTEMPTS = 3


class ChildCleanup:
    """Deletes and releases a policy's OffsetDeletions, each only as it was read."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def on_policy_deleted(self, body: Mapping[str, Any]) -> None:
        """Delete the policy's OffsetDeletions that never started; release the rest from an ownerReference
        an older operator set, so garbage collection does not take them with the policy. A Kubernetes error
        is raised: Kopf retries, and the policy stays (behind its finalizer) until this has succeeded."""
        meta = body["metadata"]
        plan = proposals.on_policy_deleted(self._children(body), body)
        deleted, kept = self._apply(meta["namespace"], plan)
        log.info("policy %s/%s deleted: deleted %d unstarted OffsetDeletions%s; started and finished ones stay",
                 meta["namespace"], meta["name"], len(deleted), f" ({', '.join(deleted)})" if deleted else "")
        if kept:
            log.info("policy %s/%s: kept %s: changed since read (approved and started, say)", meta["namespace"],
                     meta["name"], ", ".join(kept))

    def trim_history(self, body: Mapping[str, Any], spec: PolicySpec) -> None:
        """After a run: the oldest finished OffsetDeletions beyond the limit go (their backups stay). Best
        effort: a Kubernetes error here is logged and the next run tries again."""
        meta = body["metadata"]
        deleted: list[str] = []
        try:
            # A child that changed between the list and the delete (Kopf's own finalizer or annotation on
            # it, say) is kept by the precondition; it is judged again on a fresh list, a few times at most.
            for _ in range(_TRIM_ATTEMPTS):
                plan = proposals.history_overflow(self._children(body), body, spec.finished_deletions_limit)
                gone, kept = self._apply(meta["namespace"], plan)
                deleted += gone
                if not kept:
                    break
        except KubeError as exc:
            log.warning("policy %s/%s: history not trimmed: %s", meta["namespace"], meta["name"], exc)
            return
        if deleted:
            log.info("policy %s/%s: deleted %d finished OffsetDeletions beyond spec.history.finishedDeletionsLimit "
                     "(%d): %s", meta["namespace"], meta["name"], len(deleted), spec.finished_deletions_limit,
                     ", ".join(deleted))

    def _children(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """OffsetDeletions labelled with the policy's name; proposals.belongs_to then checks the uid."""
        meta = body["metadata"]
        return self.kube.list_objects(GROUP, VERSION, DELETIONS, meta["namespace"], {POLICY_LABEL: meta["name"]})

    def _apply(self, namespace: str, plan: proposals.Cleanup) -> tuple[list[str], list[str]]:
        """Deletes (each only as it was read) and releases; returns what was deleted, and what changed since
        it was read and so was kept."""
        deleted: list[str] = []
        kept: list[str] = []
        for child, version in plan.delete:
            try:
                self.kube.delete_object(GROUP, VERSION, DELETIONS, namespace, child, resource_version=version)
            except Conflict:
                kept.append(child)
                continue
            deleted.append(child)
        for child, patch in plan.release:
            with contextlib.suppress(NotFound):
                self.kube.patch_object(GROUP, VERSION, DELETIONS, namespace, child, patch)
        return deleted, kept
