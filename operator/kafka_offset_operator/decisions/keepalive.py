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
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..model.offsets import GroupInfo
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
