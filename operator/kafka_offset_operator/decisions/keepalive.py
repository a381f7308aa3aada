"""Keep-alive for protected groups (spec.protect.keepAlive): which groups need what, and when. Plain
functions; keepalive_actions.py carries them out against Kafka. The design and its trade-offs are in
docs/keep-alive.md.

What postpones the broker's expiry depends on the group kind (ClassicGroup.offsetExpirationCondition,
ConsumerGroup.offsetExpirationCondition in Kafka 4.x):

- a simple (standalone) classic group and a KIP-848 group expire each offset `retention` after its commit
  time, so an admin OffsetCommit of the same offsets (RECOMMIT) restarts the clock;
- an Empty classic group with a protocol type expires ALL offsets `retention` after the group became
  Empty (currentStateTimestamp), and an admin OffsetCommit never moves that timestamp. Such a group is
  REBASEd: its offsets are backed up, the group is deleted (DeleteGroups) and the backup committed back
  with an admin OffsetCommit, which creates a simple group (GroupMetadataManager.getOrMaybeCreateClassicGroup)
  whose offsets expire by commit time; from then on it is RECOMMITted. When its consumers come back, their
  JoinGroup turns it into a consumer group again and they resume from the kept offsets.
- a group with members cannot be helped: Kafka refuses admin commits while a group has members
  (UNKNOWN_MEMBER_ID), and only topics it no longer subscribes to can expire then (BLOCKED, reported).

Timing: a group is handled once its earliest brokerExpiresAt is within `lead` of now, `lead` being half the
broker retention, or two schedule intervals when runs are rarer, so that at least one run falls between
"due" and the expiry.

Keep-alive writes to Kafka (OffsetCommit, DeleteGroups), so it acts only in the modes that act, Approve and
Auto; a DryRun policy plans the same way and reports the plan (`preview`), writing nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ..model.group_log import GroupRecord, RecordKind
from ..model.offsets import TP, Committed, GroupInfo
from ..model.report import ScannedOffset


class Method(StrEnum):
    RECOMMIT = "Recommit"
    REBASE = "Rebase"


@dataclass(frozen=True)
class ProtectedGroup:
    """A protected group's offsets as the scan saw them."""

    group: str
    group_type: str
    group_state: str
    protocol_type: str
    offsets: tuple[ScannedOffset, ...]

    @property
    def earliest_expiry(self) -> int | None:
        expiries = [o.broker_expires_at for o in self.offsets if o.broker_expires_at is not None]
        return min(expiries) if expiries else None


@dataclass(frozen=True)
class KeepAlivePlan:
    group: str
    method: Method | None  # None: nothing to do now (or nothing that can be done: see blocked)
    blocked: str | None = None  # why it cannot be kept alive now

    @property
    def acts(self) -> bool:
        return self.method is not None


def protected_groups(rows: Iterable[ScannedOffset]) -> list[ProtectedGroup]:
    by_group: dict[str, list[ScannedOffset]] = defaultdict(list)
    for row in rows:
        by_group[row.group].append(row)
    out = []
    for group in sorted(by_group):
        first = by_group[group][0]
        out.append(ProtectedGroup(group, first.group_type, first.group_state, first.protocol_type,
                                  tuple(by_group[group])))
    return out


def lead_ms(retention_ms: int, interval_ms: int) -> int:
    """How long before the broker's expiry a group is handled (see the module docstring)."""
    return min(retention_ms, max(retention_ms // 2, 2 * interval_ms))


def plan_group(group: ProtectedGroup, live: GroupInfo, now_ms: int, lead: int) -> KeepAlivePlan:
    """What to do for one protected group, from the scan (when it expires) and the live group (what it is
    now: a commit or a rebase must see the group as it is, not as it was)."""
    name = group.group
    earliest = group.earliest_expiry
    if earliest is None:
        return KeepAlivePlan(name, None)  # the broker does not expire it in its current state
    if earliest - lead > now_ms:
        return KeepAlivePlan(name, None)
    if group.group_type == "consumer":
        # Invisible to DescribeGroups; Kafka answers UNKNOWN_MEMBER_ID if it has members.
        return KeepAlivePlan(name, Method.RECOMMIT)
    if group.group_type != "classic":
        return KeepAlivePlan(name, None, blocked=f"a {group.group_type} group cannot be kept alive")
    if not live.exists:
        return KeepAlivePlan(name, None, blocked="the group no longer exists")
    if live.active:
        return KeepAlivePlan(name, None, blocked=(
            "it has members, and Kafka accepts an admin OffsetCommit only while a group has none; only "
            "topics it no longer subscribes to can expire meanwhile"))
    if not live.protocol_type:
        return KeepAlivePlan(name, Method.RECOMMIT)
    return KeepAlivePlan(name, Method.REBASE)


def needs_live_view(group: ProtectedGroup, now_ms: int, lead: int) -> bool:
    """Whether planning this group needs a DescribeGroups (only groups that are due)."""
    earliest = group.earliest_expiry
    return earliest is not None and earliest - lead <= now_ms


def preview(method: Method, offsets: int) -> str:
    """What a DryRun policy says instead of acting (the keep-alive line of its Ready condition)."""
    if method is Method.REBASE:
        return (f"would rebase as a simple group (DeleteGroups, then re-commit its {offsets} offsets), so that "
                "its offsets expire by commit time; DryRun writes nothing to Kafka")
    return f"would re-commit {offsets} offsets (expiry restarts from then); DryRun writes nothing to Kafka"


@dataclass(frozen=True)
class RecommitFinding:
    """What Kafka's records say about a re-commit whose intent was recorded and whose outcome was not (the
    process died in between): `found`, the recorded offsets whose commit record follows the intent;
    `unknown`, why it cannot be told (then nothing is claimed either way)."""

    found: Mapping[TP, Committed] = field(default_factory=dict)
    unknown: str | None = None


def recommit_finding(intended: Mapping[TP, Committed], records: Sequence[GroupRecord] | None,
                     unreadable: str | None = None) -> RecommitFinding:
    """Whether an interrupted re-commit of unchanged offsets reached Kafka. OffsetFetch cannot tell (the
    offsets are the same before and after; it returns no commit time), but every applied OffsetCommit
    appends one record per partition to the group's `__consumer_offsets` partition
    (OffsetMetadataManager.commitOffset), with its commit timestamp. So: `records`, the group's records since
    where that partition ended BEFORE the intent was stored; a commit record of a partition with the
    recorded offset is the commit's trace. What it cannot prove: that this process's
    request wrote it and not another client committing the same offset meanwhile (a simple group's own
    consumer); for the audit trail both mean the same: that offset's expiry restarted then. No such record:
    the request was not applied (a pass decides afresh). `unreadable` (the partition count changed, the
    records since were removed): unknown."""
    if unreadable is not None or records is None:
        return RecommitFinding(unknown=unreadable or "the group's records since the intent cannot be read")
    found: dict[TP, Committed] = {}
    for record in records:
        tp = record.tp
        if record.kind is RecordKind.COMMIT and tp is not None and tp in intended and record.offset == intended[tp].offset:
            found[tp] = intended[tp]
    return RecommitFinding(found=found)
