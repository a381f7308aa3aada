"""Which committed offsets the broker may expire, and from which base time (KIP-211 / KIP-496).

Pure rules, after apache/kafka OffsetExpirationConditionImpl.isOffsetExpired,
ClassicGroup.offsetExpirationCondition, ConsumerGroup.offsetExpirationCondition and
StreamsGroup.offsetExpirationCondition (Kafka 4.x; streams groups 4.1+). Share groups never get here: the
cleanup skips them (Group.shouldExpire, see OffsetManager.cleanup).
"""

from __future__ import annotations

from collections.abc import Callable

from .classic import ClassicGroup, GroupState
from .modern import ConsumerGroup
from .offsets import OffsetAndMetadata

BaseTimestamp = Callable[[OffsetAndMetadata], int]


def commit_timestamp(offset: OffsetAndMetadata) -> int:
    return offset.commit_timestamp


def is_offset_expired(offset: OffsetAndMetadata, now_ms: int, retention_ms: int, base: BaseTimestamp) -> bool:
    """An explicit expireTimestamp (OffsetCommit v2-v4 retention) wins; otherwise retention counts
    from the base, inclusively (`now - base >= retention`)."""
    if offset.expire_timestamp is not None:
        return now_ms >= offset.expire_timestamp
    return now_ms - base(offset) >= retention_ms


def expiration_base(group: ClassicGroup | ConsumerGroup) -> BaseTimestamp | None:
    """The base timestamp to expire a group's offsets from, or None when nothing may expire."""
    if isinstance(group, ConsumerGroup):  # KIP-848 and streams groups alike: always the commit time
        return commit_timestamp
    if group.protocol_type is None:
        return commit_timestamp  # simple (standalone) group
    if group.state is GroupState.EMPTY:
        state_ts = group.current_state_timestamp
        if state_ts is None:  # GroupMetadataValue v0/v1 had no currentStateTimestamp
            return commit_timestamp
        return lambda _offset: state_ts
    if (
        group.uses_consumer_protocol()
        and group.subscribed_topics is not None
        and group.state is GroupState.STABLE
    ):
        return commit_timestamp
    return None
