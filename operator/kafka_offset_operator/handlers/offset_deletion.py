"""OffsetDeletion: one Kopf timer per object that still has work (`deletion_steps.needs_work`).

It fires as soon as the object needs something (created, approved, restore requested) and again every
`retry_interval` seconds while the work is unfinished (Kafka down, group busy, Secret missing); each firing
is one visit of reconcilers/offset_deletion.py. Deleting the object cancels what has not been sent to Kafka.
"""

from __future__ import annotations

import kopf

from ..context import OperatorContext
from ..decisions.deletion_steps import needs_work
from ..model.api import DELETIONS
from ..reconcilers.offset_deletion import DeletionReconciler
from .visits import register_visits


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    register_visits(registry, ctx, DELETIONS, "offsetdeletion", DeletionReconciler(ctx), needs_work)
