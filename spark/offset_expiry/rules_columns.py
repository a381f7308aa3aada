"""rules.py's per-offset decision as Spark column expressions, so millions of offsets are decided in the
JVM instead of one Python call each.

This is the same logic as rules.shape_of, base_timestamp, broker_expires_at and verdict, written with
`F.when` in the same order; rules.py stays the statement of the rules (and what the reference runs),
and the record-for-record agreement tests (tests/integration/spark/test_pipeline_vs_reference.py) hold
the two to each other. A change to a rule changes both.

The group-level parts that need Python (the policy's glob patterns: protected, selected) are computed
once per group (pipeline.group_rows_for, in pipeline.assemble_for) and arrive as the boolean columns
`group_protected` and `group_selected`.

Input columns (pipeline.assemble_for gives every offset its group's row, a simple group's included: a
classic group with protocol type "", so no group column below is null unless it says so): topic,
commit_timestamp, expire_timestamp, group_type, group_state, group_protocol_type, group_state_timestamp
(null: unknown), group_subscribed (null: unknown),
group_unresolved_regex, group_uncertain (null: every unsubscribed topic), group_newest_commit,
group_protected, group_selected, topic_exists (null: topics unknown).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from kafka_offsets_model.policy import DeletedTopics, Policy
from kafka_offsets_model.rules import (
    CANDIDATE_REASONS,
    CONSUMER_PROTOCOL,
    RULE_REASON,
    GroupType,
    OffsetReason,
    Shape,
    rule_retention,
)


def _lit(value: object) -> Column:
    return F.lit(value)


def shape_column() -> Column:
    """rules.shape_of."""
    gtype = F.col("group_type")
    state = F.col("group_state")
    protocol = F.col("group_protocol_type")
    subscribed = F.col("group_subscribed")
    topic_subscribed = subscribed.isNotNull() & F.array_contains(subscribed, F.col("topic"))
    uncertain = F.col("group_uncertain")  # rules.GroupView.uncertain_topics (null: every unsubscribed topic)
    maybe = F.when(uncertain.isNull(), ~topic_subscribed).otherwise(
        F.coalesce(F.array_contains(uncertain, F.col("topic")), F.lit(False))
    )
    classic = (
        F.when((protocol == "") & (state == "Empty"), _lit(Shape.STANDALONE.value))  # GroupView.is_simple
        .when(state == "Empty", _lit(Shape.EMPTY_GROUP.value))
        .when(
            (protocol == CONSUMER_PROTOCOL) & (state == "Stable") & subscribed.isNotNull(),
            F.when(maybe, _lit(Shape.MAYBE_SUBSCRIBED.value))
            .when(topic_subscribed, _lit(Shape.SUBSCRIBED.value))
            .otherwise(_lit(Shape.UNSUBSCRIBED.value)),
        )
        .otherwise(_lit(Shape.NO_CONDITION.value))
    )
    consumer = (
        F.when(topic_subscribed, _lit(Shape.SUBSCRIBED.value))
        .when(state == "Empty", _lit(Shape.EMPTY_GROUP.value))
        .otherwise(_lit(Shape.UNSUBSCRIBED.value))
    )
    streams = (
        F.when(state == "Empty", _lit(Shape.EMPTY_GROUP.value))
        .when(subscribed.isNull(), _lit(Shape.MAYBE_SUBSCRIBED.value))  # an undecodable topology
        .when(topic_subscribed, _lit(Shape.SUBSCRIBED.value))
        .otherwise(_lit(Shape.UNSUBSCRIBED.value))
    )
    return (
        F.when(gtype == GroupType.CLASSIC.value, classic)
        .when(gtype == GroupType.CONSUMER.value, consumer)
        .when(gtype == GroupType.STREAMS.value, streams)
        .otherwise(_lit(Shape.NO_CONDITION.value))
    )


def policy_base_column(shape: Column, commit: Column | None = None) -> Column:
    """rules.policy_base_timestamp (`commit`: the offset's commit timestamp unless given)."""
    state_ts = F.col("group_state_timestamp")
    use_state = (shape == Shape.EMPTY_GROUP.value) & state_ts.isNotNull()
    return F.when(use_state, state_ts).otherwise(F.col("commit_timestamp") if commit is None else commit)


def base_column(shape: Column) -> Column:
    """rules.base_timestamp."""
    state_ts = F.col("group_state_timestamp")
    use_state = (
        (shape == Shape.EMPTY_GROUP.value) & (F.col("group_type") == GroupType.CLASSIC.value) & state_ts.isNotNull()
    )
    return F.when(use_state, state_ts).otherwise(F.col("commit_timestamp"))


def stale_column(policy: Policy, now_ms: int) -> Column:
    """rules.is_stale (with rules.stale_since)."""
    empty_for = policy.rules.stale_group_ms
    if empty_for is None:
        return F.lit(False)
    gtype = F.col("group_type")
    newest = F.col("group_newest_commit")
    simple = (gtype == GroupType.CLASSIC.value) & (F.col("group_protocol_type") == "")
    since = (
        F.when(newest.isNull(), F.lit(None).cast("long"))
        .when(simple, newest)
        .otherwise(policy_base_column(F.lit(Shape.EMPTY_GROUP.value), newest))
    )
    empty = F.col("group_state") == "Empty"
    return F.coalesce(empty & since.isNotNull() & (F.lit(now_ms) - since >= F.lit(empty_for)), F.lit(False))


def broker_expires_column(shape: Column, retention_ms: int) -> Column:
    """rules.broker_expires_at."""
    expire = F.col("expire_timestamp")
    return (
        F.when(shape.isin(Shape.SUBSCRIBED.value, Shape.NO_CONDITION.value), F.lit(None).cast("long"))
        .when(expire.isNotNull(), expire)
        .otherwise(base_column(shape) + F.lit(retention_ms))
    )


def verdict_columns(policy: Policy, now_ms: int, shape: Column) -> tuple[Column, Column]:
    """rules.verdict: (candidate, reason)."""
    rules = policy.rules
    expire = F.col("expire_timestamp")
    unresolved = F.col("group_unresolved_regex")
    deleted = (
        (F.col("topic_exists") == F.lit(False))
        if rules.deleted_topics is DeletedTopics.DELETE
        else F.lit(False)
    )
    now = F.lit(now_ms)

    def by_rule(s: Shape) -> Column:
        ms = rule_retention(policy, s)
        if ms is None:
            return _lit(OffsetReason.WITHIN_RETENTION.value)
        return (
            F.when(expire.isNotNull(), F.when(now >= expire, _lit(OffsetReason.EXPIRE_TIMESTAMP.value)))
            .when(now - policy_base_column(shape) >= F.lit(ms), _lit(RULE_REASON[s].value))
            .otherwise(_lit(OffsetReason.WITHIN_RETENTION.value))
        )

    reason = (
        F.when(F.col("group_protected"), _lit(OffsetReason.PROTECTED.value))
        .when(~F.col("group_selected"), _lit(OffsetReason.EXCLUDED.value))
        .when(F.col("group_type") == GroupType.SHARE.value, _lit(OffsetReason.SHARE_GROUP.value))
        .when(shape == Shape.SUBSCRIBED.value, _lit(OffsetReason.ACTIVE_SUBSCRIPTION.value))
        .when(
            (shape == Shape.NO_CONDITION.value)
            | (shape == Shape.MAYBE_SUBSCRIBED.value)
            | ((shape == Shape.UNSUBSCRIBED.value) & unresolved),
            _lit(OffsetReason.UNKNOWN_SUBSCRIPTION.value),
        )
        .when(stale_column(policy, now_ms), _lit(OffsetReason.STALE_GROUP.value))
        .when(deleted, _lit(OffsetReason.DELETED_TOPIC.value))
        .when(shape == Shape.EMPTY_GROUP.value, by_rule(Shape.EMPTY_GROUP))
        .when(shape == Shape.STANDALONE.value, by_rule(Shape.STANDALONE))
        .otherwise(by_rule(Shape.UNSUBSCRIBED))
    )
    reason = F.coalesce(reason, _lit(OffsetReason.WITHIN_RETENTION.value))
    return reason.isin(*[r.value for r in CANDIDATE_REASONS]), reason
