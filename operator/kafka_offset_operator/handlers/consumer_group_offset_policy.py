"""ConsumerGroupOffsetPolicy: one Kopf daemon per policy, running the policy's worker
(reconcilers/policy_worker.py) until the policy is deleted or the operator stops; either sets `stopped`, which
also cancels a running analysis."""

from __future__ import annotations

from typing import Any

import kopf

from ..context import OperatorContext
from ..model.api import GROUP, POLICIES, VERSION
from ..reconcilers.policy_worker import PolicyRunner


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    runner = PolicyRunner(ctx)

    @kopf.daemon(GROUP, VERSION, POLICIES, id="policy", registry=registry, cancellation_timeout=60.0)
    async def policy(namespace: str | None, name: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
        if namespace is not None:  # the CRD is namespaced
            await runner.serve(namespace, name, stopped)
