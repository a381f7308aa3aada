"""When a ConsumerGroupOffsetPolicy's visit runs: handlers/consumer_group_offset_policy.py runs one
`PolicyScheduler.serve` per policy as a Kopf daemon, and its deletion handler calls `quiesce` then `deleted`.

The loop wakes every few seconds (or when stopped), re-reads the policy and, when a run is due (a new spec
generation, or spec.schedule.interval since the last run, or the backoff after a failure:
decisions/schedule.py), runs one visit (policy_visit.py) in a thread, off the event loop. A deleted policy
(or a stopping operator) sets the daemon's `stopped` flag, which cancels a running analysis.

Each visit is marked as under way, so the deletion handler can wait for it before it tidies the policy's
OffsetDeletions (policy_cleanup.py): no proposal is made after the cleanup looked.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.rules import CANDIDATE_REASONS

from ..adapters import metrics
from ..adapters.kube import KubeError
from ..context import OperatorContext
from ..decisions import schedule
from ..decisions.conditions import generation_of
from ..decisions.connection_spec import connection_from_spec
from ..decisions.policy_spec import parse_policy_spec
from ..model.times import parse_iso
from .policy_cleanup import ChildCleanup
from .policy_visit import ParsedSpec, PolicyVisit, now_ms

log = logging.getLogger(__name__)

# Visits under way at once when runs share scans (either engine): each waits in its own thread for its report,
# so this bounds how many policies one scan can serve in one go (the others join the next scan).
SHARED_VISITS = 128


class PolicyScheduler:
    """Every policy's daemon loop in this operator, the analysis slot they share, and the visits under way."""

    def __init__(self, ctx: OperatorContext) -> None:
        self.kube = ctx.kube
        self.default_engine = ctx.options.default_engine
        self.tick_s = max(0.2, min(5.0, ctx.options.retry_interval))
        self.cleanup = ChildCleanup(ctx.kube)
        self.visit = PolicyVisit(ctx, self.cleanup, poll_s=min(2.0, self.tick_s))
        # One analysis at a time in this operator when scans are not shared. Shared runs do not take it: the
        # engines queue them themselves (Local: one scan at a time in the operator; SparkApplication: one
        # application per batch, in the cluster), and policies of one cluster due together must be in the
        # engine's queue together to share a scan (issue 12).
        self.slot = asyncio.Lock()
        self.sharing = ctx.options.scan_share_window_s is not None
        self.visits = ThreadPoolExecutor(SHARED_VISITS, thread_name_prefix="policy-visit") if self.sharing else None
        self.visiting: dict[tuple[str, str], asyncio.Event] = {}  # a visit under way; set when it ends

    def close(self) -> None:
        """The operator stops: no new visit threads (those under way end on their `stopped` flag)."""
        if self.visits is not None:
            self.visits.shutdown(wait=False)

    async def serve(self, namespace: str, name: str, stopped: kopf.DaemonStopped) -> None:
        """The policy's daemon: a visit whenever one is due, until the policy is deleted or `stopped`."""
        try:
            while not stopped:
                try:
                    body = await asyncio.to_thread(self.visit.read, namespace, name)
                except KubeError as exc:  # transient: the daemon must outlive an API server hiccup
                    log.warning("cannot read policy %s/%s: %s", namespace, name, exc)
                    await stopped.wait(timeout=self.tick_s)
                    continue
                if body is None or body["metadata"].get("deletionTimestamp"):
                    return
                status = body.get("status") or {}
                if schedule.due(generation_of(body), status, now_ms()):
                    parsed, runnable = await asyncio.to_thread(self._can_run, body)
                    if runnable:
                        async with self._slot():
                            await self._visit_marked(namespace, name, stopped, parsed)
                    else:  # no analysis can start: say why at once, not behind other policies' runs
                        await self._visit_marked(namespace, name, stopped, parsed)
                    continue  # re-read: the status now says when the next run is due
                wait = schedule.wait_ms(parse_iso(status.get("nextRunTime")), now_ms(), int(self.tick_s * 1000))
                await stopped.wait(timeout=max(0.05, wait / 1000))
        finally:
            self.visit.forget(namespace, name)
            if stopped:
                metrics.forget_policy(namespace, name, list(CANDIDATE_REASONS))

    async def quiesce(self, namespace: str, name: str) -> None:
        """Wait until no visit of this policy is under way (the deleted policy's daemon is told to stop at
        the same time, which cancels its analysis and the proposals not yet made)."""
        done = self.visiting.get((namespace, name))
        if done is not None:
            await done.wait()

    def deleted(self, body: Mapping[str, Any]) -> None:
        """The policy's deletion, once `quiesce` has returned (a Kopf deletion handler, in a thread)."""
        self.cleanup.on_policy_deleted(body)

    def _slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The operator-wide slot, unless runs share their scans (either engine; `_can_run` has parsed the
        spec, so it names its engine)."""
        if self.sharing:
            return contextlib.nullcontext()
        return self.slot

    def _can_run(self, body: Mapping[str, Any]) -> tuple[ParsedSpec, bool]:
        """The spec's parse (or why it does not parse), which the visit then uses instead of parsing the spec
        again; and whether the visit may start an analysis (its spec and Secrets are usable). One that cannot
        (an invalid spec, a missing Secret) needs no slot, so its condition is written at once even while
        other policies' analyses (or their waits for an unreachable Kafka) hold it."""
        namespace = body["metadata"]["namespace"]
        raw = body.get("spec")
        try:
            spec = parse_policy_spec(raw, self.default_engine)
        except SpecError as exc:
            return ParsedSpec(raw, exc), False
        try:
            connection_from_spec(spec.kafka, lambda secret: self.kube.secret_data(namespace, secret))
        except (SpecError, KubeError):
            return ParsedSpec(raw, spec), False
        return ParsedSpec(raw, spec), True

    async def _visit_marked(self, namespace: str, name: str, stopped: kopf.DaemonStopped,
                            parsed: ParsedSpec | None) -> None:
        """One visit, marked as under way so that the deletion handler can wait for it (`quiesce`). The mark
        is set before the visit re-reads the policy, so a visit that could have missed the deletionTimestamp
        is always waited for, and one that starts later sees it and does nothing."""
        key = (namespace, name)
        done = self.visiting[key] = asyncio.Event()
        loop = asyncio.get_running_loop()

        def ended() -> None:
            if self.visiting.get(key) is done:
                del self.visiting[key]
            done.set()

        def run() -> None:
            # The end is signalled by the thread itself: a daemon cancelled by Kopf (cancellation_timeout)
            # stops awaiting, but the visit's thread runs on until it sees `stopped`.
            try:
                self.visit.visit(namespace, name, stopped, parsed)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is gone: the operator has stopped
                    loop.call_soon_threadsafe(ended)

        if self.visits is None:
            await asyncio.to_thread(run)
        else:
            # In a copy of the daemon's context (as asyncio.to_thread does): Kopf finds its event queue and
            # settings there, so kopf.event() from the visit's thread reaches its poster on the loop.
            await loop.run_in_executor(self.visits, contextvars.copy_context().run, run)
