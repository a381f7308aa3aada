"""A group's state, rebuilt from the live (compacted, non-tombstone) facts of its group records.

Mirrors how Kafka's GroupMetadataManager replays the records on load:

- classic (`replay(GroupMetadataKey, GroupMetadataValue)`): protocol type ("" without members means none:
  a simple group; "" with members is a present, empty protocol type, `ClassicGroup.add`),
  state Empty iff the record has no members, else Stable (rebalancing states are never persisted),
  currentStateTimestamp (-1 means unknown), subscriptions from the members' consumer protocol;
- KIP-848 consumer groups (`getOrMaybeCreatePersistedConsumerGroup`: any of record types 3-8 or 16 makes
  one): members are the member ids of live type-5 and type-8 records, subscriptions are their
  SubscribedTopicNames plus the resolved topics of type-16 records, and the state follows
  `ConsumerGroup.maybeUpdateGroupState` (Empty, Assigning, Reconciling, Stable); an Empty one's
  `current_state_timestamp` is when it became Empty, read from its records' timestamps (`emptied_at`);
- streams groups (types 17-24): members are the member ids of live type-19 and type-22 records, the
  source topics those of the live topology record (type 23, `StreamsTopology.sourceTopicMap`); an Empty
  one's `current_state_timestamp` is read from its records' timestamps as for KIP-848 groups;
- share groups are recognised by their record types (9-15); only whether they have members can be read;
- offsets without any group record belong to a simple group (`OffsetMetadataManager.replay` creates one).

If KIP-848 records and a classic GroupMetadata record are both live (Kafka writes a group conversion as
one atomic batch, so this should not happen), the KIP-848 records win.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_offsets_model.rules import GroupType, GroupView

from .facts import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_REGULAR_EXPRESSION,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    GROUP_METADATA,
    GROUP_METADATA_HISTORY,
    KIP848_TYPES,
    SHARE_MEMBER_TYPES,
    SHARE_TYPES,
    STREAMS_GROUP_TOPOLOGY,
    STREAMS_MEMBER_TYPES,
    STREAMS_TYPES,
    Fact,
)

MEMBER_STATE_STABLE = 0  # modern/MemberState.STABLE
UNKNOWN_STATE = "Unknown"


def simple_group(group_id: str) -> GroupView:
    return GroupView(group_id, GroupType.CLASSIC, "Empty", "", None, frozenset())


def rebuild_group(group_id: str, facts: Iterable[Fact]) -> GroupView:
    """`facts`: the group's live non-offset facts (no tombstones, no offset commits), with its
    GroupMetadata history (GROUP_METADATA_HISTORY), which alone makes no group."""
    by_type: dict[int, list[Fact]] = {}
    history: list[Fact] = []
    for fact in facts:
        if fact.type == GROUP_METADATA_HISTORY:
            history.append(fact)
        else:
            by_type.setdefault(fact.type, []).append(fact)
    if not by_type:
        return simple_group(group_id)
    types = by_type.keys()
    if types & KIP848_TYPES:
        return _consumer_group(group_id, by_type)
    if types & STREAMS_TYPES:
        return _streams_group(group_id, by_type)
    if types & SHARE_TYPES:
        has_members = bool(types & SHARE_MEMBER_TYPES)
        return GroupView(
            group_id, GroupType.SHARE, UNKNOWN_STATE if has_members else "Empty", "share", None, None
        )
    if GROUP_METADATA in by_type:
        meta = by_type[GROUP_METADATA][-1]
        protocol_type = meta.protocol_type or ""
        if not protocol_type and not meta.member_count:
            # GroupMetadataManager.replay loads protocolType "" as absent: a simple group.
            return GroupView(group_id, GroupType.CLASSIC, "Empty", "", meta.state_timestamp, frozenset())
        if not protocol_type:
            # With members, ClassicGroup.add sets the group's protocol type to the first member's, "":
            # present, so not a simple group, and neither Empty nor "consumer": Kafka's
            # offsetExpirationCondition is empty and computeSubscribedTopics unknown.
            return GroupView(group_id, GroupType.CLASSIC, "Stable", "", meta.state_timestamp, None)
        subscribed = None if meta.topics is None else frozenset(meta.topics)
        if subscribed is None:
            subscribed, uncertain = _doubt_behind_unknown(meta, history)
        else:
            uncertain = _same_generation_doubt(meta, subscribed, history)
        return GroupView(
            group_id,
            GroupType.CLASSIC,
            "Empty" if not meta.member_count else "Stable",
            protocol_type,
            meta.state_timestamp,
            subscribed,
            uncertain_topics=uncertain,
        )
    return simple_group(group_id)


def _same_generation_doubt(
    meta: Fact, subscribed: frozenset[str] | None, history: Iterable[Fact]
) -> frozenset[str] | None:
    """Topics whose subscription the broker may see otherwise than the newest GroupMetadata record says.

    Kafka computes a classic group's subscribed topics when a generation starts
    (`ClassicGroup.initNextGeneration` -> `computeSubscribedTopics`). A static member that re-joins with
    another subscription but the same protocol (`GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin`,
    Stable group) is stored in a new GroupMetadata record of the same generation, and the broker keeps the
    old subscriptions until the next generation, or until a coordinator reloads the group (`GroupMetadataManager.replay`
    recomputes them from the newest record). So when the log still holds several records of the newest
    generation with different subscriptions, any of them may be the broker's: the topics on which they
    disagree are doubtful (returned), and None when one of them has unknown subscriptions (then every
    topic outside the newest subscriptions is). Empty set: no doubt (the usual case).
    """
    if subscribed is None or meta.generation is None:
        return frozenset()
    same = _same_generation(meta, history)
    doubtful: set[str] = set()
    for record in same:
        if record.topics is None:
            return None
        doubtful.update(subscribed.symmetric_difference(record.topics))
    return frozenset(doubtful)


def _same_generation(meta: Fact, history: Iterable[Fact]) -> list[Fact]:
    return [h for h in history if h.generation == meta.generation and (h.protocol_type or "") == meta.protocol_type]


def _doubt_behind_unknown(
    meta: Fact, history: Iterable[Fact]
) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """(subscribed, uncertain_topics) of a group whose newest GroupMetadata record's subscriptions do not
    parse. A broker that reloaded the group cannot parse them either (no expiration condition), but one
    that has not still holds the subscriptions of an older record of the same generation
    (`_same_generation_doubt`): the topics every such readable record subscribes are kept by all of
    them, every other topic may expire (uncertain None: every topic outside the subscribed ones).
    Without such a record: unknown, no doubt (None, empty set)."""
    if meta.generation is None:
        return None, frozenset()
    known = [frozenset(h.topics) for h in _same_generation(meta, history) if h.topics is not None]
    if not known:
        return None, frozenset()
    return frozenset.intersection(*known), None


def _consumer_group(group_id: str, by_type: dict[int, list[Fact]]) -> GroupView:
    member_meta = {f.member: f for f in by_type.get(CONSUMER_GROUP_MEMBER_METADATA, ())}
    assignments = {f.member: f for f in by_type.get(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, ())}
    members = member_meta.keys() | assignments.keys()
    resolved = {f.member: f.topics or () for f in by_type.get(CONSUMER_GROUP_REGULAR_EXPRESSION, ())}
    subscribed: set[str] = set()
    for meta in member_meta.values():
        subscribed.update(meta.topics or ())
    for topics in resolved.values():
        subscribed.update(topics)
    unresolved = any(m.regex is not None and m.regex not in resolved for m in member_meta.values())

    group_epoch = _last_epoch(by_type.get(CONSUMER_GROUP_METADATA), 0)
    assignment_epoch = _last_epoch(by_type.get(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA), 0)
    if not members:
        state = "Empty"
    elif group_epoch > assignment_epoch:
        state = "Assigning"
    elif all(_reconciled(assignments.get(m), assignment_epoch) for m in members):
        state = "Stable"
    else:
        state = "Reconciling"
    emptied = (
        emptied_at(f for t, facts in by_type.items() if t in KIP848_TYPES for f in facts) if state == "Empty" else None
    )
    return GroupView(group_id, GroupType.CONSUMER, state, "consumer", emptied, frozenset(subscribed), unresolved)


def emptied_at(facts: Iterable[Fact]) -> int | None:
    """When an Empty KIP-848 group lost its last member: the newest timestamp of its live records.

    Kafka keeps no "emptied at" for these groups, but removing a member
    (`GroupMetadataManager.consumerGroupFenceMember` -> `removeMember`) writes the member's tombstones and
    a ConsumerGroupMetadata record with the bumped group epoch in one batch, at one timestamp; the epoch
    record stays live (it is the group's only copy of the epoch) until the group is deleted. So the newest
    live record of the group is at least as new as the last member's removal; a later record (an epoch
    bumped again while Empty) only makes the answer later, which delays a proposal, never hastens one.
    None when no record has a timestamp: the policy then counts from the commit, as the broker does.
    """
    times = [f.record_timestamp for f in facts if f.record_timestamp is not None]
    return max(times) if times else None


def _streams_group(group_id: str, by_type: dict[int, list[Fact]]) -> GroupView:
    """StreamsGroup (Kafka 4.1+): members come from live member-metadata (19) and current-assignment (22)
    records, as GroupMetadataManager's streams replay adds them; the group is Empty without members.
    Non-empty, it is subscribed to its topology's source topics (`StreamsGroup.isSubscribedToTopic`), to
    nothing without a topology record, and unknown when the topology does not decode. Source topic regexes
    are not in `sourceTopicMap`, so the broker expires offsets of the topics they match; the policy treats
    such a group's unsubscribed topics as unknown (`unresolved_regex`), as for a KIP-848 regex."""
    if not by_type.keys() & STREAMS_MEMBER_TYPES:
        emptied = emptied_at(f for t, facts in by_type.items() if t in STREAMS_TYPES for f in facts)
        return GroupView(group_id, GroupType.STREAMS, "Empty", "streams", emptied, frozenset())
    topology = by_type.get(STREAMS_GROUP_TOPOLOGY)
    if not topology:
        return GroupView(group_id, GroupType.STREAMS, UNKNOWN_STATE, "streams", None, frozenset())
    last = topology[-1]
    subscribed = None if last.topics is None else frozenset(last.topics)
    return GroupView(
        group_id, GroupType.STREAMS, UNKNOWN_STATE, "streams", None, subscribed, last.regex is not None
    )


def _last_epoch(facts: list[Fact] | None, default: int) -> int:
    if not facts or facts[-1].epoch is None:
        return default
    return facts[-1].epoch


def _reconciled(assignment: Fact | None, assignment_epoch: int) -> bool:
    """ModernGroupMember.isReconciledTo; a member without an assignment record has epoch 0 and is STABLE."""
    epoch = 0 if assignment is None or assignment.epoch is None else assignment.epoch
    state = (
        MEMBER_STATE_STABLE
        if assignment is None or assignment.member_state is None
        else assignment.member_state
    )
    return state == MEMBER_STATE_STABLE and epoch == assignment_epoch
