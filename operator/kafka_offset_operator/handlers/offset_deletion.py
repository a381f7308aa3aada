"""OffsetDeletion: one Kopf timer per object that still has work (`deletion_steps.needs_work`).

It fires as soon as the object needs something (created, approved, restore requested) and again every
`retry_interval` seconds while the work is unfinished (Kafka down, group busy, Secret missing); each firing
is one visit of reconcilers/offset_deletion.py. Deleting the object cancels what has not been sent to Kafka.
"""

from __future__ import annotations

from typing import Any

import kopf

from ..context import OperatorContext
from ..decisions.deletion_steps import needs_work
from ..model.api import DELETIONS, GROUP, VERSION
from ..reconcilers.offset_deletion import DeletionReconciler


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    reconciler = DeletionReconciler(ctx)

    @kopf.timer(GROUP, VERSION, DELETIONS, id="offsetdeletion", registry=registry,
                interval=ctx.options.retry_interval, backoff=ctx.options.retry_interval,
                when=lambda spec, status, meta, **_: needs_work(spec, status, meta.get("generation")))
    def visit(namespace: str | None, name: str, **kwargs: Any) -> None:
        # Kopf gives timers the daemon's `stopped` flag (TimerFn does not declare it): set when the operator
        # exits or pauses for a peer (docs/operator.md), after which no change of offsets starts here.
        stopped: kopf.DaemonStopped | None = kwargs.get("stopped")
        if namespace is not None:  # the CRD is namespaced
            reconciler.reconcile(namespace, name, stopped)

    @kopf.on.delete(GROUP, VERSION, DELETIONS, id="cancel", registry=registry)
    def cancel(namespace: str | None, name: str, **_: Any) -> None:
        """Kopf's finalizer holds the object until this returns: a step in flight finishes first, and nothing
        starts after (see DeletionReconciler.cancel)."""
        if namespace is not None:
            reconciler.cancel(namespace, name)
