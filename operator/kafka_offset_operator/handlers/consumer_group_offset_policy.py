"""ConsumerGroupOffsetPolicy: one Kopf daemon per policy, running the policy's worker
(reconcilers/policy_scheduler.py) until the policy is deleted or the operator stops; either sets `stopped`, which
also cancels a running analysis.

A deletion handler tidies up after a deleted policy: it deletes the policy's OffsetDeletions that never
started and leaves every other one (they carry no ownerReference, so garbage collection does not take them).
Kopf keeps its finalizer on the policy (it has one for the daemon already) until the handler has succeeded;
the handler first waits for a visit of the policy under way to end, so no proposal is made after it looked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from ..adapters.kube import KubeError
from ..context import OperatorContext
from ..model.api import GROUP, POLICIES, VERSION
from ..reconcilers.policy_scheduler import PolicyScheduler


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    runner = PolicyScheduler(ctx)

    @kopf.daemon(GROUP, VERSION, POLICIES, id="policy", registry=registry, cancellation_timeout=60.0)
    async def policy(namespace: str | None, name: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
        if namespace is not None:  # the CRD is namespaced
            await runner.serve(namespace, name, stopped)

    @kopf.on.cleanup(registry=registry)
    def stop_visits(**_: Any) -> None:
        runner.close()

    @kopf.on.delete(GROUP, VERSION, POLICIES, id="policy-children", registry=registry)
    async def policy_deleted(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> None:
        if namespace is None:
            return
        await runner.quiesce(namespace, name)
        try:
            await asyncio.to_thread(runner.deleted, dict(body))
        except KubeError as exc:  # the policy stays behind Kopf's finalizer until this succeeds
            raise kopf.TemporaryError(f"cannot tidy up the policy's OffsetDeletions: {exc}",
                                      delay=ctx.options.retry_interval) from exc
