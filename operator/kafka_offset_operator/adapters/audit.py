"""The audit trail: one INFO line per change of offsets in Kafka (and per refusal or cancellation), on the
logger `kafka_offset_operator.audit`, with the resource, the group, every partition's offset before and
after, Kafka's answer and the backup it can be restored from. `run --log-format json` makes it one JSON
object per line."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..model.offsets import TP, Committed

log = logging.getLogger("kafka_offset_operator.audit")
SHOWN = 100  # partitions listed per line; the backup has them all


def _offsets(offsets: Mapping[TP, Committed] | None) -> str:
    if offsets is None:
        return "none"
    items = sorted(offsets.items())
    text = ",".join(f"{t}:{p}={c.offset}" for (t, p), c in items[:SHOWN])
    return text + (f",...(+{len(items) - SHOWN})" if len(items) > SHOWN else "")


def changed(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
            after: Mapping[TP, Committed] | None, answers: Mapping[TP, str | None], top_error: str | None,
            backup: str | None) -> None:
    """After a Kafka call that changed (or tried to change) offsets; with who approved and who asked, as the
    resource's spec names them (verified by the install's admission policy)."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    ok = sum(1 for error in answers.values() if error is None) if top_error is None else 0
    errors = sorted({e for e in answers.values() if e}) or ([top_error] if top_error else [])
    log.info("%s %s %s/%s group=%s partitions=%d ok=%d errors=%s before=[%s] after=[%s] backup=%s approvedBy=%s "
             "requestedBy=%s", call, body.get("kind", ""), meta.get("namespace"), meta.get("name"), group,
             len(before if before is not None else after or {}), ok, ",".join(errors) or "none", _offsets(before),
             _offsets(after), backup or "none", spec.get("approvedBy") or "none", spec.get("requestedBy") or "none")
