"""The backup store's housekeeping: from the operator's start to its stop, backups past their expiry are
deleted every `backup_sweep_interval_s` in the namespaces the operator serves (docs/safety.md)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from ..adapters.backup_store import BackupStore
from ..adapters.kube import KubeError
from ..context import OperatorContext, OperatorOptions
from ..model.times import now_iso

log = logging.getLogger(__name__)


def register(registry: kopf.OperatorRegistry, ctx: OperatorContext) -> None:
    store = BackupStore(ctx.kube)
    tasks: list[asyncio.Task[None]] = []

    @kopf.on.startup(registry=registry)
    async def start_sweeping(**_: Any) -> None:
        tasks.append(asyncio.create_task(sweep_forever(store, ctx.options)))

    @kopf.on.cleanup(registry=registry)
    async def stop_sweeping(**_: Any) -> None:
        for task in tasks:
            task.cancel()


async def sweep_forever(store: BackupStore, options: OperatorOptions) -> None:
    namespaces: list[str | None] = [None] if options.clusterwide else list(options.namespaces)
    while True:
        now = now_iso()
        for namespace in namespaces:
            try:
                gone = await asyncio.to_thread(store.expire, namespace, now)
            except KubeError as exc:  # the next sweep tries again
                log.warning("cannot expire backups in %s: %s", namespace or "all namespaces", exc)
                continue
            for name in gone:
                log.info("backup %s expired and was deleted", name)
        await asyncio.sleep(options.backup_sweep_interval_s)
