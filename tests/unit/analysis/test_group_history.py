"""GroupMetadata history (issue 11 item 6): which older records of a classic group are kept, read cheaply."""

from __future__ import annotations

import pytest

from kafka_offsets_model.codec import encode_value
from kafka_offsets_model.rules import OffsetView, Shape, broker_expires_at, shape_of
from offset_expiry.facts import (
    GROUP_METADATA,
    GROUP_METADATA_HISTORY,
    Fact,
    group_metadata_generation,
    same_generation_history,
)
from offset_expiry.groups import rebuild_group


def value(generation: int, version: int = 3, protocol_type: str = "consumer") -> bytes:
    return encode_value(
        "GroupMetadata",
        {
            "protocolType": protocol_type,
            "generation": generation,
            "protocol": None,
            "leader": None,
            "currentStateTimestamp": 0,
            "members": [],
        },
        version,
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_the_generation_is_read_without_decoding_the_members(version: int) -> None:
    assert group_metadata_generation(value(7, version)) == 7
    assert group_metadata_generation(value(7, version, protocol_type="")) == 7


def test_unreadable_values_and_tombstones_have_no_generation() -> None:
    assert group_metadata_generation(None) is None
    assert group_metadata_generation(b"\x00") is None
    assert group_metadata_generation(value(7)[:5]) is None


def test_only_older_records_of_the_newest_generation_are_history() -> None:
    versions = [(10, value(3)), (11, value(4)), (12, value(4)), (13, None), (14, value(1)), (15, value(4))]
    assert same_generation_history(versions[:3]) == [1]  # the newest (12) is history where it is decoded
    assert same_generation_history(versions[:4]) == []  # deleted: nothing
    assert same_generation_history([versions[2], versions[1]]) == [1]  # by offset, not by position
    assert same_generation_history(versions) == [1, 2]  # generations restart after a deletion: conservative
    assert same_generation_history([(1, value(4))]) == []


def _meta(generation: int, topics: tuple[str, ...] | None) -> Fact:
    return Fact(GROUP_METADATA, "g", protocol_type="consumer", member_count=1, topics=topics, generation=generation)


def test_unparseable_newest_subscriptions_leave_the_older_records_doubt() -> None:
    # The newest record of generation 7 does not parse; a broker that has not reloaded the group still
    # holds an older record's subscriptions: their common topics are kept, every other may expire.
    newest = _meta(7, None)
    older = [
        _meta(7, ("orders", "payments"))._replace(type=GROUP_METADATA_HISTORY),
        _meta(7, ("orders",))._replace(type=GROUP_METADATA_HISTORY),
        _meta(7, None)._replace(type=GROUP_METADATA_HISTORY),
        _meta(6, ("audit",))._replace(type=GROUP_METADATA_HISTORY),
    ]
    group = rebuild_group("g", [*older, newest])
    assert (group.subscribed_topics, group.uncertain_topics) == (frozenset({"orders"}), None)
    assert shape_of(group, "orders") is Shape.SUBSCRIBED
    assert shape_of(group, "payments") is Shape.MAYBE_SUBSCRIBED
    assert broker_expires_at(group, OffsetView("payments", 0, 1, 1_000), 500) == 1_500
    # Without a readable record of its generation the group's subscriptions stay unknown: no condition.
    alone = rebuild_group("g", [older[2], older[3], newest])
    assert (alone.subscribed_topics, alone.uncertain_topics) == (None, frozenset())
    assert shape_of(alone, "payments") is Shape.NO_CONDITION
