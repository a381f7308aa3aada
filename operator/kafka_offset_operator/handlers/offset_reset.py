"""OffsetReset: one Kopf timer per object that still has work (`reset_steps.needs_work`), as for an
OffsetDeletion: it fires as soon as the object needs something (created, its spec changed, approved) and
again every `retry_interval` seconds while the work is unfinished (Kafka down, the group has members, a
Secret missing); each firing is one visit of reconcilers/offset_reset.py. Deleting the object cancels a
commit not yet sent.
"""

from __future__ import annotations

from typing import Any

import kopf

from ..context import OperatorContext
from ..decisions.reset_steps import needs_work
from ..model.api import GROUP, RESETS, VERSION
from ..reconcilers.offset_reset import ResetReconciler


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    reconciler = ResetReconciler(ctx)

    @kopf.timer(GROUP, VERSION, RESETS, id="offsetreset", registry=registry,
                interval=ctx.options.retry_interval, backoff=ctx.options.retry_interval,
                when=lambda spec, status, meta, **_: needs_work(spec, status, meta.get("generation")))
    def visit(namespace: str | None, name: str, **kwargs: Any) -> None:
        # Kopf's `stopped` flag (see handlers/offset_deletion.py): no commit starts after it is set.
        stopped: kopf.DaemonStopped | None = kwargs.get("stopped")
        if namespace is not None:  # the CRD is namespaced
            reconciler.reconcile(namespace, name, stopped)

    @kopf.on.delete(GROUP, VERSION, RESETS, id="cancel", registry=registry)
    def cancel(namespace: str | None, name: str, **_: Any) -> None:
        """Kopf's finalizer holds the object until this returns: a step in flight finishes first."""
        if namespace is not None:
            reconciler.cancel(namespace, name)
