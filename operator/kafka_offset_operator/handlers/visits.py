"""The Kopf handlers an OffsetDeletion and an OffsetReset both have: one timer per object that still has work
(the kind's `needs_work`), which fires as soon as the object needs something and again every
`retry_interval` seconds while the work is unfinished, each firing one visit of the kind's reconciler; and a
delete handler that cancels what has not been sent to Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import kopf

from ..context import OperatorContext
from ..decisions.conditions import generation_of
from ..model.api import GROUP, VERSION


class Visited(Protocol):
    """A kind's reconciler, as the handlers call it."""

    def reconcile(self, namespace: str, name: str, stop: kopf.DaemonStopped | None = None) -> None: ...

    def cancel(self, namespace: str, name: str) -> None: ...


NeedsWork = Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None, int | None], bool]


def register_visits(registry: kopf.OperatorRegistry, ctx: OperatorContext, plural: str, timer_id: str,
                    reconciler: Visited, needs_work: NeedsWork) -> None:
    @kopf.timer(GROUP, VERSION, plural, id=timer_id, registry=registry,
                interval=ctx.options.retry_interval, backoff=ctx.options.retry_interval,
                when=lambda body, spec, status, **_: needs_work(spec, status, generation_of(body)))
    def visit(namespace: str | None, name: str, **kwargs: Any) -> None:
        # Kopf gives timers the daemon's `stopped` flag (TimerFn does not declare it): set when the operator
        # exits or pauses for a peer (docs/operator.md), after which no change of offsets starts here.
        stopped: kopf.DaemonStopped | None = kwargs.get("stopped")
        if namespace is not None:  # the CRDs are namespaced
            reconciler.reconcile(namespace, name, stopped)

    @kopf.on.delete(GROUP, VERSION, plural, id="cancel", registry=registry)
    def cancel(namespace: str | None, name: str, **_: Any) -> None:
        """Kopf's finalizer holds the object until this returns: a step in flight finishes first, and nothing
        starts after (see the reconciler's cancel)."""
        if namespace is not None:
            reconciler.cancel(namespace, name)
