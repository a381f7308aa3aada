"""The verdict re-derived from facts read right before Kafka is changed (docs/safety.md, issue 18).

Kafka keeps an offset alive from its NEWEST commit, also when the same value is committed again (a simple
group's and a KIP-848 or streams group's offsets expire from their commit timestamp:
ClassicGroup.offsetExpirationCondition, OffsetMetadataManager.cleanupExpiredOffsets; docs/kafka-semantics.md).
So comparing offset VALUES between the scan and the change misses a group that was stale at the scan and is
alive again: it re-committed its unchanged position, its members came back, its subscription now includes
the topic. Right before OffsetDelete or DeleteGroups the operator therefore reads the group's records in its
own `__consumer_offsets` partition written since the baseline (the scan's end offset of that partition, or
where it ended when the backup was read), and the group's state now, and this module says what must not
be touched and why. Pure: the adapters read, this decides.

What counts as changed:
- a commit record for a partition to change, the same offset included (a re-commit), or its tombstone;
- for a whole-group change (DeleteGroups), a commit record for any partition of the group;
- for a policy's proposal (the verdict depended on the group's state), any group record since the scan:
  classic GroupMetadata (type 2: a rebalance, members joined or left, the group emptied), KIP-848 records
  (3-8, 16: epoch, members, subscriptions, regular expressions, assignments) and streams records (17-24);
- the group's state now (DescribeGroups for classic groups, ConsumerGroupDescribe / StreamsGroupDescribe
  for KIP-848 and streams groups): members back where the verdict needed an empty group, a live member
  subscribing to the topic of an UnsubscribedTopic verdict (by name, or by a regular expression Kafka may
  not have resolved yet), a subscription that cannot be read, a simple group that is no longer simple.
A hand-written deletion (no scan) is re-checked for commits only: the person asked for those partitions
whatever the group's state, and Kafka's OffsetDelete itself refuses a topic a live member subscribes to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka_offsets_model.rules import OffsetReason

from ..model.group_log import GroupRecord, RecordKind
from ..model.offsets import TP, GroupInfo, ModernGroup
from ..model.times import iso


@dataclass(frozen=True)
class FreshFacts:
    """What was read right before the change."""

    partition: int  # the group's __consumer_offsets partition
    since: int  # the records start at this offset of it
    since_what: str  # what that baseline is, for people: "the scan (2026-...)", "the backup (...)"
    records: Sequence[GroupRecord] = ()
    live: GroupInfo | None = None  # DescribeGroups now (classic groups; KIP-848 and streams groups show Dead)
    modern: ModernGroup | None = None  # ConsumerGroupDescribe / StreamsGroupDescribe now (those groups)


@dataclass(frozen=True)
class FreshVerdict:
    """What must not be touched: the whole group (`group`: why), or single partitions (why each)."""

    group: str | None = None
    partitions: Mapping[TP, str] = field(default_factory=dict)

    def why(self, tp: TP) -> str | None:
        return self.group if self.group is not None else self.partitions.get(tp)


# Verdicts whose premise is a group without members (whole-group ones included).
_NEEDS_EMPTY = frozenset({OffsetReason.EMPTY_GROUP, OffsetReason.STANDALONE, OffsetReason.STALE_GROUP, OffsetReason.DELETED_TOPIC})


def rederive(partitions: Iterable[TP], facts: FreshFacts, reasons: Mapping[TP, str], *, proposed: bool,
             whole_group: bool = False) -> FreshVerdict:
    """The verdict for `partitions` from `facts`. `reasons`: the scan's rule per partition (a policy's
    proposal; empty for a hand-written deletion); `proposed`: made by a policy's scan, so the verdict
    depended on the group's state; `whole_group`: DeleteGroups, which removes every offset of the group."""
    wanted = set(partitions)
    where = f"__consumer_offsets-{facts.partition}"
    latest: dict[TP, GroupRecord] = {}
    group_record: GroupRecord | None = None
    for record in facts.records:
        if record.kind in (RecordKind.COMMIT, RecordKind.OFFSET_TOMBSTONE) and record.tp is not None:
            if whole_group or record.tp in wanted:
                latest[record.tp] = record
        elif proposed:
            group_record = record  # the newest one is what the group looks like now
    if whole_group and latest:
        tp, record = max(latest.items(), key=lambda item: item[1].position)
        return FreshVerdict(group=f"{_commit_text(tp, record, where)} since {facts.since_what}: the group is in use")
    if group_record is not None:
        return FreshVerdict(group=(f"the group's records were rewritten at {iso(group_record.timestamp)} "
                              f"({group_record.type_name} at {where} offset {group_record.position}) since "
                              f"{facts.since_what}: members, subscriptions or state changed"))
    live_problem = _live_problem(facts.live, reasons, proposed) or _modern_problem(facts.modern, reasons, proposed)
    if live_problem is not None:
        return FreshVerdict(group=live_problem)
    out: dict[TP, str] = {}
    for tp in sorted(wanted):
        found = latest.get(tp)
        if found is not None:
            out[tp] = f"{_commit_text(tp, found, where)} since {facts.since_what}"
            continue
        why = (_subscription_problem(tp, facts.live, reasons.get(tp), proposed)
               or _modern_subscription(tp, facts.modern, reasons.get(tp), proposed))
        if why is not None:
            out[tp] = why
    return FreshVerdict(partitions=out)


def _commit_text(tp: TP, record: GroupRecord, where: str) -> str:
    if record.kind is RecordKind.OFFSET_TOMBSTONE:
        return f"{tp[0]}-{tp[1]}'s offset was deleted at {iso(record.timestamp)} ({where} offset {record.position})"
    when = record.commit_timestamp if record.commit_timestamp is not None else record.timestamp
    return (f"{tp[0]}-{tp[1]} was committed again at {iso(when)} (offset {record.offset}, {where} offset "
            f"{record.position}); Kafka keeps an offset alive from its newest commit, the same value included")


def _live_problem(live: GroupInfo | None, reasons: Mapping[TP, str], proposed: bool) -> str | None:
    if live is None or not proposed:
        return None
    needs_empty = any(r in _NEEDS_EMPTY for r in reasons.values())
    if needs_empty and live.active:
        return (f"the group has {len(live.members)} member(s) now (state {live.state}): the verdict needed an "
                "empty group")
    if OffsetReason.STANDALONE in reasons.values() and live.protocol_type:
        return f"the group is no longer a simple group (protocol type {live.protocol_type!r} now)"
    return None


def _subscription_problem(tp: TP, live: GroupInfo | None, reason: str | None, proposed: bool) -> str | None:
    if live is None or not proposed or reason != OffsetReason.UNSUBSCRIBED_TOPIC or not live.exists:
        return None
    if live.state in ("PreparingRebalance", "CompletingRebalance"):
        return f"the group is rebalancing now (state {live.state}): its subscriptions cannot be read"
    subscribed = live.subscribed_topics if live.active else frozenset()
    if subscribed is None:
        return "a live member's subscription cannot be read now"
    if tp[0] in subscribed:
        return f"a live member subscribes to {tp[0]} now"
    return None


def _modern_problem(group: ModernGroup | None, reasons: Mapping[TP, str], proposed: bool) -> str | None:
    if group is None or not proposed or not group.members:
        return None
    if any(r in _NEEDS_EMPTY for r in reasons.values()):
        api = "ConsumerGroupDescribe" if group.kind == "consumer" else "StreamsGroupDescribe"
        return (f"the group has {len(group.members)} member(s) now ({api}: state {group.state}): the verdict "
                "needed an empty group")
    return None


def _modern_subscription(tp: TP, group: ModernGroup | None, reason: str | None, proposed: bool) -> str | None:
    """A KIP-848 member subscribing to the topic by name, or by a regular expression that matches it (resolved
    by Kafka or not yet: OffsetDelete only knows resolved ones, ModernGroup.isSubscribedToTopic); a streams
    group's topology reading it."""
    if group is None or not proposed or reason != OffsetReason.UNSUBSCRIBED_TOPIC or not group.members:
        return None
    topic = tp[0]
    if topic in group.source_topics:
        return f"the streams group's topology reads {topic} now (StreamsGroupDescribe)"
    for member in group.members:
        if topic in member.topics:
            return f"member {member.client_id}@{member.client_host} subscribes to {topic} now (ConsumerGroupDescribe)"
        if member.regex is not None and _matches(member.regex, topic):
            return (f"member {member.client_id}@{member.client_host} subscribes by regular expression "
                    f"{member.regex!r}, which matches {topic} (ConsumerGroupDescribe; resolved by Kafka or not yet)")
    return None


def _matches(regex: str, topic: str) -> bool:
    """Kafka matches a KIP-848 subscription's RE2J pattern against whole topic names; a pattern Python
    cannot read counts as matching (the safe side)."""
    try:
        return re.fullmatch(regex, topic) is not None
    except re.error:
        return True


def baseline(scan_end: int | None, backup_end: int | None) -> int | None:
    """Where to read the group's records from: the earliest of the scan's end and the backup's end."""
    known = [p for p in (scan_end, backup_end) if p is not None]
    return min(known) if known else None


# -- keep-alive (reconcilers/keepalive.py): its verdict is "this protected group's offsets are about to expire"


def rebase_premise_gone(facts: FreshFacts) -> str | None:
    """Why a rebase (DeleteGroups, then the backup re-committed) is not needed now, or None. A classic group
    record since the scan means the group went through a state transition (a rebalance, members joining or
    leaving): an Empty group's expiry counts from its currentStateTimestamp, which that record moved, so the
    scan's expiry no longer holds; the next run decides from a new scan. Commits alone never move it (an
    admin OffsetCommit does not: ClassicGroup.offsetExpirationCondition), so they do not count here."""
    records = [r for r in facts.records if r.kind is RecordKind.CLASSIC]
    if not records:
        return None
    last = records[-1]
    return (f"the group's metadata was rewritten at {iso(last.timestamp)} (__consumer_offsets-{facts.partition} "
            f"offset {last.position}) since {facts.since_what}: its expiry moved; the next run decides again")


def recommitted_since(facts: FreshFacts) -> dict[TP, str]:
    """Partitions the group committed itself since the scan (the same offset included): their expiry
    restarted from that commit, and re-committing them would only race the consumer that did."""
    out: dict[TP, str] = {}
    for record in facts.records:
        if record.kind is RecordKind.COMMIT and record.tp is not None:
            when = record.commit_timestamp if record.commit_timestamp is not None else record.timestamp
            out[record.tp] = f"committed at {iso(when)} since {facts.since_what}"
    return out
