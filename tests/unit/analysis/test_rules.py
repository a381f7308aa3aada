"""The broker's expiry rules per group kind and state, and the policy verdict's precedence."""

from __future__ import annotations

import pytest

from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.rules import (
    CANDIDATE_REASONS,
    Decision,
    GroupType,
    GroupView,
    OffsetReason,
    OffsetView,
    broker_expires_at,
    decide,
)

# Every reason that keeps an offset: with CANDIDATE_REASONS, the closed set of OffsetReason.
KEPT_REASONS = (
    OffsetReason.PROTECTED,
    OffsetReason.EXCLUDED,
    OffsetReason.ACTIVE_SUBSCRIPTION,
    OffsetReason.WITHIN_RETENTION,
    OffsetReason.UNKNOWN_SUBSCRIPTION,
    OffsetReason.SHARE_GROUP,
)

H = 3_600_000
D = 24 * H
RETENTION = 7 * D
T0 = 1_700_000_000_000

EMPTY_CLASSIC = GroupView("g", GroupType.CLASSIC, "Empty", "consumer", current_state_timestamp=T0 + 5 * D)
EMPTY_CLASSIC_OLD = GroupView("g", GroupType.CLASSIC, "Empty", "consumer", current_state_timestamp=None)
SIMPLE = GroupView("g", GroupType.CLASSIC, "Empty", "")
STABLE = GroupView("g", GroupType.CLASSIC, "Stable", "consumer", T0, frozenset({"orders"}))
STABLE_UNKNOWN = GroupView("g", GroupType.CLASSIC, "Stable", "consumer", T0, None)
STABLE_CONNECT = GroupView("g", GroupType.CLASSIC, "Stable", "connect", T0, None)
EMPTY_CONNECT = GroupView("g", GroupType.CLASSIC, "Empty", "connect", T0 + D, None)
KIP848 = GroupView("g", GroupType.CONSUMER, "Stable", "consumer", None, frozenset({"orders", "rx-1"}))
KIP848_EMPTY = GroupView("g", GroupType.CONSUMER, "Empty", "consumer", None, frozenset())
KIP848_UNRESOLVED = GroupView(
    "g", GroupType.CONSUMER, "Stable", "consumer", None, frozenset({"orders"}), True
)
STREAMS_EMPTY = GroupView("g", GroupType.STREAMS, "Empty", "streams", None, frozenset())
STREAMS_LIVE = GroupView("g", GroupType.STREAMS, "Unknown", "streams", None, frozenset({"orders", "app-rep"}))
STREAMS_UNDECODED = GroupView("g", GroupType.STREAMS, "Unknown", "streams", None, None)
STREAMS_REGEX = GroupView("g", GroupType.STREAMS, "Unknown", "streams", None, frozenset({"orders"}), True)
SHARE = GroupView("g", GroupType.SHARE, "Empty", "share", None, None)


def offset(topic: str = "orders", commit: int = T0, expire: int | None = None) -> OffsetView:
    return OffsetView(topic, 0, 42, commit, expire)


@pytest.mark.parametrize(
    ("group", "off", "expected"),
    [
        # Empty classic group: base is the time it became Empty, for every offset, old or new.
        (EMPTY_CLASSIC, offset(commit=T0), T0 + 5 * D + RETENTION),
        (EMPTY_CLASSIC, offset(commit=T0 + 6 * D), T0 + 5 * D + RETENTION),
        # GroupMetadataValue v0/v1 had no currentStateTimestamp: base is the commit.
        (EMPTY_CLASSIC_OLD, offset(commit=T0 + D), T0 + D + RETENTION),
        (EMPTY_CONNECT, offset(), T0 + D + RETENTION),
        (SIMPLE, offset(commit=T0 + 2 * D), T0 + 2 * D + RETENTION),
        # KIP-496: a Stable consumer group keeps subscribed topics, unsubscribed expire from the commit.
        (STABLE, offset("orders"), None),
        (STABLE, offset("payments", commit=T0 + H), T0 + H + RETENTION),
        # Unknown subscriptions and other protocols: no expiration condition at all.
        (STABLE_UNKNOWN, offset("payments"), None),
        (STABLE_CONNECT, offset("payments"), None),
        # KIP-848: commit-time base in every state, subscribed names and resolved regexes kept.
        (KIP848, offset("orders"), None),
        (KIP848, offset("rx-1"), None),
        (KIP848, offset("payments"), T0 + RETENTION),
        (KIP848_EMPTY, offset("orders"), T0 + RETENTION),
        (KIP848_UNRESOLVED, offset("payments"), T0 + RETENTION),
        (STREAMS_EMPTY, offset(), T0 + RETENTION),
        # Streams (KIP-1071): commit-time base; a live group keeps its topology's source topics.
        (STREAMS_LIVE, offset("orders"), None),
        (STREAMS_LIVE, offset("app-rep"), None),
        (STREAMS_LIVE, offset("payments", commit=T0 + H), T0 + H + RETENTION),
        # An undecodable topology: the broker decodes it and expires topics outside it by commit time.
        (STREAMS_UNDECODED, offset(), T0 + RETENTION),
        (STREAMS_REGEX, offset("audit-1"), T0 + RETENTION),  # regexes are not in sourceTopicMap
        (SHARE, offset(), None),
        # An explicit v1 expireTimestamp wins over the base, but not over a subscription.
        (EMPTY_CLASSIC, offset(expire=T0 + D), T0 + D),
        (SIMPLE, offset(expire=T0 + 30 * D), T0 + 30 * D),
        (STABLE, offset("orders", expire=T0 + D), None),
        (STABLE_CONNECT, offset("x", expire=T0 + D), None),
    ],
)
def test_broker_expires_at(group: GroupView, off: OffsetView, expected: int | None) -> None:
    assert broker_expires_at(group, off, RETENTION) == expected


ALL_RULES = parse_policy(
    {
        "rules": {
            "emptyGroupRetention": "1d",
            "unsubscribedTopicRetention": "2d",
            "standaloneRetention": "3d",
            "deletedTopics": "Delete",
        }
    }
)


@pytest.mark.parametrize(
    ("group", "off", "now", "expected"),
    [
        (EMPTY_CLASSIC, offset(), T0 + 6 * D - 1, (False, OffsetReason.WITHIN_RETENTION)),
        (EMPTY_CLASSIC, offset(), T0 + 6 * D, (True, OffsetReason.EMPTY_GROUP)),
        (EMPTY_CLASSIC_OLD, offset(commit=T0), T0 + D, (True, OffsetReason.EMPTY_GROUP)),
        (KIP848_EMPTY, offset(), T0 + D, (True, OffsetReason.EMPTY_GROUP)),
        (STREAMS_EMPTY, offset(), T0 + D, (True, OffsetReason.EMPTY_GROUP)),
        (SIMPLE, offset(), T0 + 3 * D - 1, (False, OffsetReason.WITHIN_RETENTION)),
        (SIMPLE, offset(), T0 + 3 * D, (True, OffsetReason.STANDALONE)),
        (STABLE, offset("payments"), T0 + 2 * D, (True, OffsetReason.UNSUBSCRIBED_TOPIC)),
        (STABLE, offset("payments"), T0 + 2 * D - 1, (False, OffsetReason.WITHIN_RETENTION)),
        (KIP848, offset("payments"), T0 + 2 * D, (True, OffsetReason.UNSUBSCRIBED_TOPIC)),
        (STABLE, offset("orders"), T0 + 100 * D, (False, OffsetReason.ACTIVE_SUBSCRIPTION)),
        (KIP848, offset("rx-1"), T0 + 100 * D, (False, OffsetReason.ACTIVE_SUBSCRIPTION)),
        (STABLE_UNKNOWN, offset("payments"), T0 + 100 * D, (False, OffsetReason.UNKNOWN_SUBSCRIPTION)),
        (STABLE_CONNECT, offset("payments"), T0 + 100 * D, (False, OffsetReason.UNKNOWN_SUBSCRIPTION)),
        (KIP848_UNRESOLVED, offset("payments"), T0 + 100 * D, (False, OffsetReason.UNKNOWN_SUBSCRIPTION)),
        (KIP848_UNRESOLVED, offset("orders"), T0 + 100 * D, (False, OffsetReason.ACTIVE_SUBSCRIPTION)),
        (STREAMS_LIVE, offset("orders"), T0 + 100 * D, (False, OffsetReason.ACTIVE_SUBSCRIPTION)),
        (STREAMS_LIVE, offset("payments"), T0 + 2 * D, (True, OffsetReason.UNSUBSCRIBED_TOPIC)),
        (STREAMS_UNDECODED, offset(), T0 + 100 * D, (False, OffsetReason.UNKNOWN_SUBSCRIPTION)),
        (STREAMS_REGEX, offset("audit-1"), T0 + 100 * D, (False, OffsetReason.UNKNOWN_SUBSCRIPTION)),
        (SHARE, offset(), T0 + 100 * D, (False, OffsetReason.SHARE_GROUP)),
        # expireTimestamp replaces the policy's retention, as it replaces the broker's.
        (SIMPLE, offset(expire=T0 + H), T0 + H, (True, OffsetReason.EXPIRE_TIMESTAMP)),
        (SIMPLE, offset(expire=T0 + 30 * D), T0 + 10 * D, (False, OffsetReason.WITHIN_RETENTION)),
        (EMPTY_CLASSIC, offset(expire=T0 + H), T0 + H, (True, OffsetReason.EXPIRE_TIMESTAMP)),
    ],
)
def test_policy_rules(group: GroupView, off: OffsetView, now: int, expected: tuple[bool, OffsetReason]) -> None:
    decision = decide(group, off, ALL_RULES, now_ms=now, retention_ms=RETENTION, existing_topics=None)
    assert (decision.candidate, decision.reason) == expected
    assert decision.broker_expires_at == broker_expires_at(group, off, RETENTION)


def test_unset_rule_means_no_candidate_of_that_shape() -> None:
    policy = parse_policy({"rules": {"standaloneRetention": "1d"}})
    far = T0 + 1000 * D
    for group, off in ((EMPTY_CLASSIC, offset()), (STABLE, offset("payments")), (SIMPLE, offset(expire=T0))):
        got = decide(group, off, policy, now_ms=far, retention_ms=RETENTION, existing_topics=None)
        assert (got.candidate, got.reason) == (
            (True, OffsetReason.EXPIRE_TIMESTAMP) if group is SIMPLE else (False, OffsetReason.WITHIN_RETENTION)
        )
    no_rules = parse_policy({})
    got = decide(
        SIMPLE, offset(expire=T0), no_rules, now_ms=far, retention_ms=RETENTION, existing_topics=None
    )
    assert got == Decision(T0, False, OffsetReason.WITHIN_RETENTION)


def test_precedence() -> None:
    topics = {"orders"}
    everything = parse_policy(
        {
            "groups": {"include": ["g*"], "exclude": ["gx"]},
            "rules": {
                "emptyGroupRetention": "0s",
                "standaloneRetention": "0s",
                "unsubscribedTopicRetention": "0s",
                "deletedTopics": "Delete",
            },
            "protect": {"groups": ["gp*"]},
        }
    )

    def reason(group: GroupView, topic: str, existing: set[str] | None = topics) -> OffsetReason:
        return decide(
            group, offset(topic), everything, now_ms=T0, retention_ms=RETENTION, existing_topics=existing
        ).reason

    # Protected beats Excluded beats everything else.
    assert reason(GroupView("gpx", GroupType.CLASSIC, "Empty", ""), "gone") is OffsetReason.PROTECTED
    assert reason(GroupView("gx", GroupType.CLASSIC, "Empty", ""), "gone") is OffsetReason.EXCLUDED
    assert reason(GroupView("other", GroupType.CLASSIC, "Empty", ""), "gone") is OffsetReason.EXCLUDED
    # A live subscription or an unknown one beats DeletedTopic: never touch what a member may use.
    assert reason(STABLE, "orders", existing=set()) is OffsetReason.ACTIVE_SUBSCRIPTION
    assert reason(STABLE_CONNECT, "gone") is OffsetReason.UNKNOWN_SUBSCRIPTION
    # DeletedTopic beats the retention rules; it needs the topic list and the Delete setting.
    assert reason(SIMPLE, "gone") is OffsetReason.DELETED_TOPIC
    assert reason(STABLE, "gone") is OffsetReason.DELETED_TOPIC
    assert reason(SIMPLE, "gone", existing=None) is OffsetReason.STANDALONE
    assert reason(SIMPLE, "orders") is OffsetReason.STANDALONE
    keep = parse_policy({"rules": {"deletedTopics": "Keep"}})
    got = decide(SIMPLE, offset("gone"), keep, now_ms=T0, retention_ms=RETENTION, existing_topics=topics)
    assert (got.candidate, got.reason) == (False, OffsetReason.WITHIN_RETENTION)


def test_reason_sets_are_the_issues_closed_sets() -> None:
    assert {r.value for r in CANDIDATE_REASONS} == {
        "EmptyGroup",
        "UnsubscribedTopic",
        "Standalone",
        "ExpireTimestamp",
        "DeletedTopic",
        "StaleGroup",
    }
    assert {r.value for r in KEPT_REASONS} == {
        "Protected",
        "Excluded",
        "ActiveSubscription",
        "WithinRetention",
        "UnknownSubscription",
        "ShareGroup",
    }
    assert set(CANDIDATE_REASONS) | set(KEPT_REASONS) == set(OffsetReason)
