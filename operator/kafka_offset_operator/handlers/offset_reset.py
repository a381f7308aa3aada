"""OffsetReset: one Kopf timer per object that still has work (`reset_steps.needs_work`), as for an
OffsetDeletion: it fires as soon as the object needs something (created, its spec changed, approved) and
again every `retry_interval` seconds while the work is unfinished (Kafka down, the group has members, a
Secret missing); each firing is one visit of reconcilers/offset_reset.py. Deleting the object cancels a
commit not yet sent.
"""

from __future__ import annotations

import kopf

from ..context import OperatorContext
from ..decisions.reset_steps import needs_work
from ..model.api import RESETS
from ..reconcilers.offset_reset import ResetReconciler
from .visits import register_visits


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    register_visits(registry, ctx, RESETS, "offsetreset", ResetReconciler(ctx), needs_work)
