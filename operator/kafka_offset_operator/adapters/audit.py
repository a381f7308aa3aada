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


CONFIRMED = "confirmed=after-restart"  # the mark of a line written when a resumed visit found the change done


def changed(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
            after: Mapping[TP, Committed] | None, answers: Mapping[TP, str | None], top_error: str | None,
            backup: str | None) -> None:
    """After a Kafka call that changed (or tried to change) offsets; with who approved and who asked, as the
    resource's spec names them (verified by the install's admission policy)."""
    _line(call, body, group, before, after, answers, top_error, backup, "")


def confirmed(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
              after: Mapping[TP, Committed] | None, backup: str | None) -> None:
    """A change an earlier attempt sent (its start is in the status) that a resumed visit found done in Kafka.
    The process that sent it may have died before its own line: this one makes the trail at-least-once (a
    reader may see the same change twice, the second marked `confirmed=after-restart`, never not at all)."""
    if before or after:
        tps = before if before is not None else after or {}
        _line(call, body, group, before, after, {tp: None for tp in tps}, None, backup, " " + CONFIRMED)


UNKNOWN = "outcome=unknown-after-restart"  # a resumed visit could not tell whether the change was applied


def unknown(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
            after: Mapping[TP, Committed] | None, backup: str | None, why: str) -> None:
    """A change an earlier process may have sent before it died, which a resumed visit cannot confirm or
    rule out: the trail says so rather than nothing (ok=0, the reason in `errors`)."""
    tps = before if before is not None else after or {}
    _line(call, body, group, before, after, {tp: None for tp in tps}, "UNKNOWN", backup,
          f" {UNKNOWN} ({why})")


def _line(call: str, body: Mapping[str, Any], group: str, before: Mapping[TP, Committed] | None,
          after: Mapping[TP, Committed] | None, answers: Mapping[TP, str | None], top_error: str | None,
          backup: str | None, mark: str) -> None:
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    ok = sum(1 for error in answers.values() if error is None) if top_error is None else 0
    errors = sorted({e for e in answers.values() if e}) or ([top_error] if top_error else [])
    log.info("%s %s %s/%s group=%s partitions=%d ok=%d errors=%s before=[%s] after=[%s] backup=%s approvedBy=%s "
             "requestedBy=%s%s", call, body.get("kind", ""), meta.get("namespace"), meta.get("name"), group,
             len(before if before is not None else after or {}), ok, ",".join(errors) or "none", _offsets(before),
             _offsets(after), backup or "none", spec.get("approvedBy") or "none", spec.get("requestedBy") or "none",
             mark)
