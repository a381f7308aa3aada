"""When the broker will expire a committed offset, and whether a policy makes it a deletion candidate.

Pure functions over small values: the statement of the rules. The reference implementation (the tests'
oracle) calls `decide`; the Spark pipeline runs the same functions as column expressions
(offset_expiry/rules_columns.py) and is compared with the reference record for record.

Broker rules (Apache Kafka 4.x group coordinator, group-coordinator/src/main/java/org/apache/kafka/
coordinator/group/):

- `OffsetMetadataManager.cleanupExpiredOffsets`: a group without an expiration condition expires
  nothing; otherwise an offset of a topic the group is subscribed to (`Group.isSubscribedToTopic`) never
  expires, and any other offset expires when `OffsetExpirationConditionImpl.isOffsetExpired` says so.
- `OffsetExpirationConditionImpl.isOffsetExpired`: an explicit expireTimestamp (OffsetCommitValue v1)
  wins: expired iff `now >= expireTimestamp`; otherwise expired iff `now - base >= offsets.retention.ms`.
  So the offset expires at `expireTimestamp`, or at `base + retention`.
- `classic/ClassicGroup.offsetExpirationCondition`: with a protocol type (a record's protocolType "" counts
  as one when the record has members: `ClassicGroup.add` copies the first member's) and Empty, base =
  currentStateTimestamp if known, else the commit timestamp; Stable, protocol type "consumer" and known
  subscriptions, base = commit timestamp; no protocol type (a simple group), base = commit timestamp;
  any other classic group (rebalancing, other protocol types, unparseable subscriptions): no condition.
- `classic/ClassicGroup.isSubscribedToTopic`: the topic is in the members' subscribed topics; when they
  are unknown, a "consumer" group counts as subscribed to everything and any other group to nothing.
- `modern/consumer/ConsumerGroup.offsetExpirationCondition`: always, base = commit timestamp;
  `modern/ModernGroup.isSubscribedToTopic`: members' SubscribedTopicNames and the topics of the group's
  resolved regular expressions (`ConsumerGroup.updateResolvedRegularExpression`).
- `streams/StreamsGroup.offsetExpirationCondition`: always, base = commit timestamp;
  `StreamsGroup.isSubscribedToTopic`: false while Empty (or Dead), else the topology's source topics
  (`StreamsTopology.sourceTopicMap`: SourceTopics and RepartitionSourceTopics; nothing without a topology
  record). A topology that does not decode makes the group "unknown".
- Share groups never expire offsets (`ShareGroup.shouldExpire` is false, so
  `GroupCoordinatorShard.cleanupGroupMetadata` skips them; offsets.retention.minutes does not apply).

Policy verdict, first match wins:

1. Protected: the group matches `protect.groups`. Protected groups are never candidates.
2. Excluded: the group is not selected by `groups.include` / `groups.exclude`.
2a. ShareGroup: a share group (KIP-932); the broker never expires its offsets through
   offsets.retention.minutes, and the policy proposes none.
3. ActiveSubscription: a member subscribes to the topic (the broker would not expire it either).
4. UnknownSubscription: the topic cannot tell whether a member depends on the offset (a classic group
   that is neither Empty, simple nor a Stable "consumer" group with parseable subscriptions; a topic on
   which records of the group's newest generation disagree (a static member re-joined with another
   subscription: the broker may hold either, Shape.MAYBE_SUBSCRIBED, reported as expiring by commit
   time); a KIP-848 group with a subscription regex that has no resolution record yet; a non-empty
   streams group whose topology does not decode, or whose topology has source topic regexes). Nothing is
   proposed where we cannot see the truth.
5. StaleGroup (candidate): `rules.staleGroups.emptyFor` is set, the group is Empty (a simple group
   always is) and has been so for at least emptyFor (`stale_since`). A group-level verdict: every offset of
   a stale group gets it, and the operator proposes deleting the whole group (DeleteGroups) only when
   every offset the group has live is in the proposal (decisions/proposals.py).
6. DeletedTopic (candidate): the topic no longer exists and `rules.deletedTopics` is Delete. OffsetDelete
   cannot remove such an offset (KafkaApis.handleOffsetDeleteRequest answers UNKNOWN_TOPIC_OR_PARTITION
   for a topic missing from the metadata cache before the coordinator sees it), so the operator proposes
   DeleteGroups where these are all an Empty group has left, and only reports them otherwise.
7. The retention rule of the offset's shape, applied like the broker's rule with the policy's own
   retention: Empty groups -> `emptyGroupRetention` (reason EmptyGroup), counted from when the group
   became Empty for every kind of group (`policy_base_timestamp`; KIP-848 and streams groups:
   groups.emptied_at, although the broker counts theirs from the commit), simple groups ->
   `standaloneRetention` (Standalone), unsubscribed topics of active groups ->
   `unsubscribedTopicRetention` (UnsubscribedTopic). As in the broker, an explicit expireTimestamp
   replaces the retention: the offset is a candidate once `now >= expireTimestamp` (ExpireTimestamp).
8. WithinRetention: the rule has not fired yet, or the policy has no rule for that shape.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum, StrEnum

from .policy import DeletedTopics, Policy

CONSUMER_PROTOCOL = "consumer"


class GroupType(StrEnum):
    """Kafka's group types, as ListGroups names them."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    STREAMS = "streams"
    SHARE = "share"


class OffsetReason(StrEnum):
    """Why the rules make an offset a deletion candidate or keep it (a report's reason per partition); the
    operator's condition and Event reasons are another enum, kafka_offset_operator.model.reasons.Reason."""

    # candidates
    EMPTY_GROUP = "EmptyGroup"
    UNSUBSCRIBED_TOPIC = "UnsubscribedTopic"
    STANDALONE = "Standalone"
    EXPIRE_TIMESTAMP = "ExpireTimestamp"
    DELETED_TOPIC = "DeletedTopic"
    STALE_GROUP = "StaleGroup"
    # kept
    PROTECTED = "Protected"
    EXCLUDED = "Excluded"
    ACTIVE_SUBSCRIPTION = "ActiveSubscription"
    WITHIN_RETENTION = "WithinRetention"
    UNKNOWN_SUBSCRIPTION = "UnknownSubscription"
    SHARE_GROUP = "ShareGroup"


CANDIDATE_REASONS = (
    OffsetReason.EMPTY_GROUP,
    OffsetReason.UNSUBSCRIBED_TOPIC,
    OffsetReason.STANDALONE,
    OffsetReason.EXPIRE_TIMESTAMP,
    OffsetReason.DELETED_TOPIC,
    OffsetReason.STALE_GROUP,
)


@dataclass(frozen=True)
class GroupView:
    """What the analysis knows of a group, rebuilt from `__consumer_offsets`.

    `subscribed_topics` is None when the subscriptions are unknown (see ClassicGroup.isSubscribedToTopic).
    `uncertain_topics`: of a Stable classic "consumer" group whose log holds records of one generation with
    different subscriptions (a static member re-joined with another one, groups._same_generation_doubt):
    the topics the broker may count as subscribed or not; None: every topic outside `subscribed_topics`.
    `current_state_timestamp`: a classic group's currentStateTimestamp; for an Empty KIP-848 group, when
    it became Empty as read from its records' timestamps (groups.emptied_at); else None.
    `unresolved_regex` marks a KIP-848 group whose member regex has no resolution record yet: the broker
    treats the regex as matching nothing, the policy treats the group's unsubscribed topics as unknown.
    `newest_commit_timestamp` is the newest commit of any of the group's live offsets (None when the
    analysis did not compute it): the start of a simple or KIP-848 group's "empty since" (`stale_since`).
    """

    group_id: str
    type: GroupType
    state: str
    protocol_type: str = ""
    current_state_timestamp: int | None = None
    subscribed_topics: frozenset[str] | None = frozenset()
    unresolved_regex: bool = False
    newest_commit_timestamp: int | None = None
    uncertain_topics: frozenset[str] | None = frozenset()

    @property
    def is_simple(self) -> bool:
        """No protocol type (ClassicGroup.protocolType() empty): only a classic group without members.
        A GroupMetadata record with protocolType "" and members is loaded with the members' "" as a
        present protocol type (ClassicGroup.add), so that group is not simple; groups.py marks it Stable."""
        return self.type is GroupType.CLASSIC and not self.protocol_type and self.is_empty

    @property
    def is_empty(self) -> bool:
        return self.state == "Empty"


@dataclass(frozen=True)
class OffsetView:
    topic: str
    partition: int
    offset: int
    commit_timestamp: int
    expire_timestamp: int | None = None


@dataclass(frozen=True)
class Decision:
    broker_expires_at: int | None
    candidate: bool
    reason: OffsetReason


class Shape(Enum):
    """How the broker treats one topic of one group."""

    EMPTY_GROUP = "EmptyGroup"  # every offset expires; base: the group's state timestamp or the commit
    STANDALONE = "Standalone"  # simple group; base: the commit
    UNSUBSCRIBED = "UnsubscribedTopic"  # active group, topic nobody subscribes to; base: the commit
    SUBSCRIBED = "Subscribed"  # never expires while subscribed
    MAYBE_SUBSCRIBED = "MaybeSubscribed"  # the broker may or may not count it subscribed: may expire, by commit
    NO_CONDITION = "NoCondition"  # the group expires nothing in its state, or we cannot tell


def shape_of(group: GroupView, topic: str) -> Shape:
    """The broker's view: which expiration condition (if any) applies to this group's offsets of `topic`."""
    if group.type is GroupType.CLASSIC:
        if group.is_simple:
            return Shape.STANDALONE
        if group.is_empty:
            # An Empty group's subscribed set is empty (ClassicGroup.computeSubscribedTopics).
            return Shape.EMPTY_GROUP
        if (
            group.protocol_type == CONSUMER_PROTOCOL
            and group.state == "Stable"
            and group.subscribed_topics is not None
        ):
            uncertain = group.uncertain_topics
            if topic in (uncertain or ()) or (uncertain is None and topic not in group.subscribed_topics):
                return Shape.MAYBE_SUBSCRIBED
            return Shape.SUBSCRIBED if topic in group.subscribed_topics else Shape.UNSUBSCRIBED
        return Shape.NO_CONDITION
    if group.type is GroupType.CONSUMER:
        if group.subscribed_topics is not None and topic in group.subscribed_topics:
            return Shape.SUBSCRIBED
        return Shape.EMPTY_GROUP if group.is_empty else Shape.UNSUBSCRIBED
    if group.type is GroupType.STREAMS:
        if group.is_empty:
            return Shape.EMPTY_GROUP
        if group.subscribed_topics is None:
            # The topology record does not decode here, but the broker decodes it and expires, by commit
            # time, every topic outside its source topics: any topic may or may not be one of them.
            return Shape.MAYBE_SUBSCRIBED
        return Shape.SUBSCRIBED if topic in group.subscribed_topics else Shape.UNSUBSCRIBED
    return Shape.NO_CONDITION


def policy_base_timestamp(group: GroupView, shape: Shape, offset: OffsetView) -> int:
    """Where the policy's retention starts. `emptyGroupRetention` promises "this long after the group became
    Empty", for every kind of group: classic groups say when (currentStateTimestamp, as the broker uses it);
    for KIP-848 groups it is read from the records' timestamps (groups.emptied_at), although the broker
    itself counts their retention from the commit. Without a known time, the commit time. Every other rule
    counts from the commit, as the broker does."""
    if shape is Shape.EMPTY_GROUP and group.current_state_timestamp is not None:
        return group.current_state_timestamp
    return offset.commit_timestamp


def base_timestamp(group: GroupView, shape: Shape, offset: OffsetView) -> int:
    """Where the broker's retention period starts (the baseTimestamp of OffsetExpirationConditionImpl)."""
    if (
        shape is Shape.EMPTY_GROUP
        and group.type is GroupType.CLASSIC
        and group.current_state_timestamp is not None
    ):
        return group.current_state_timestamp
    return offset.commit_timestamp


def broker_expires_at(group: GroupView, offset: OffsetView, retention_ms: int) -> int | None:
    """The first time at which the broker's cleanup would delete the offset, if the group stays as it is.

    The broker acts at its next cleanup run at or after this time (offsets.retention.check.interval.ms).
    A time in the past means the offset is already due.
    """
    shape = shape_of(group, offset.topic)
    if shape in (Shape.SUBSCRIBED, Shape.NO_CONDITION):
        return None
    if offset.expire_timestamp is not None:
        return offset.expire_timestamp
    return base_timestamp(group, shape, offset) + retention_ms


def stale_since(group: GroupView) -> int | None:
    """Since when an Empty group counts as Empty for `rules.staleGroups`: where its emptyGroupRetention
    starts (`policy_base_timestamp`: when the group became Empty, for classic, KIP-848 and streams groups
    alike), the group's newest commit where that time is unknown, and a simple group's newest commit (it
    is Empty all its life). So a group is stale once every one of its offsets is at least emptyFor past the
    base its emptyGroupRetention uses. None: nothing to count from."""
    newest = group.newest_commit_timestamp
    if newest is None:
        return None
    if group.is_simple:
        return newest
    return policy_base_timestamp(group, Shape.EMPTY_GROUP, OffsetView("", 0, 0, newest))


def is_stale(group: GroupView, policy: Policy, now_ms: int) -> bool:
    """`rules.staleGroups`: the group is Empty and has been for at least emptyFor."""
    empty_for = policy.rules.stale_group_ms
    if empty_for is None or not group.is_empty:
        return False
    since = stale_since(group)
    return since is not None and now_ms - since >= empty_for


RULE_REASON = {  # the reason each shape's own retention rule gives (rules_columns uses it too)
    Shape.EMPTY_GROUP: OffsetReason.EMPTY_GROUP,
    Shape.STANDALONE: OffsetReason.STANDALONE,
    Shape.UNSUBSCRIBED: OffsetReason.UNSUBSCRIBED_TOPIC,
}


def rule_retention(policy: Policy, shape: Shape) -> int | None:
    """The policy's retention for an offset of this shape (EmptyGroup, Standalone, else UnsubscribedTopic)."""
    if shape is Shape.EMPTY_GROUP:
        return policy.rules.empty_group_retention_ms
    if shape is Shape.STANDALONE:
        return policy.rules.standalone_retention_ms
    return policy.rules.unsubscribed_topic_retention_ms


def verdict(
    group: GroupView, offset: OffsetView, policy: Policy, now_ms: int, topic_exists: bool | None
) -> tuple[bool, OffsetReason]:
    """The policy's answer for one offset; `topic_exists` is None when the cluster's topics are unknown."""
    if policy.protect.protects(group.group_id):
        return False, OffsetReason.PROTECTED
    if not policy.groups.selects(group.group_id):
        return False, OffsetReason.EXCLUDED
    if group.type is GroupType.SHARE:
        return False, OffsetReason.SHARE_GROUP
    shape = shape_of(group, offset.topic)
    if shape is Shape.SUBSCRIBED:
        return False, OffsetReason.ACTIVE_SUBSCRIPTION
    if (
        shape in (Shape.NO_CONDITION, Shape.MAYBE_SUBSCRIBED)
        or (shape is Shape.UNSUBSCRIBED and group.unresolved_regex)
    ):
        return False, OffsetReason.UNKNOWN_SUBSCRIPTION
    if is_stale(group, policy, now_ms):
        return True, OffsetReason.STALE_GROUP
    if topic_exists is False and policy.rules.deleted_topics is DeletedTopics.DELETE:
        return True, OffsetReason.DELETED_TOPIC
    retention = rule_retention(policy, shape)
    if retention is None:
        return False, OffsetReason.WITHIN_RETENTION
    if offset.expire_timestamp is not None:
        if now_ms >= offset.expire_timestamp:
            return True, OffsetReason.EXPIRE_TIMESTAMP
        return False, OffsetReason.WITHIN_RETENTION
    if now_ms - policy_base_timestamp(group, shape, offset) >= retention:
        return True, RULE_REASON[shape]
    return False, OffsetReason.WITHIN_RETENTION


def decide(
    group: GroupView,
    offset: OffsetView,
    policy: Policy,
    *,
    now_ms: int,
    retention_ms: int,
    existing_topics: Collection[str] | None,
) -> Decision:
    """The one per-offset decision both implementations make."""
    topic_exists = None if existing_topics is None else offset.topic in existing_topics
    candidate, reason = verdict(group, offset, policy, now_ms, topic_exists)
    return Decision(broker_expires_at(group, offset, retention_ms), candidate, reason)
