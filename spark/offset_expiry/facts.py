"""One `__consumer_offsets` record reduced to the flat facts the analysis needs.

A Fact is a row with a fixed set of nullable columns, so the Spark pipeline can carry it in Arrow and the
reference can keep it in a dict; both build it with `fact_from_record`, so both read the bytes alike.

`logical_key` is what Kafka's replay keys its in-memory state by: key types 0 and 1 are the same offset
(GroupCoordinatorShard.replay maps both to OffsetCommitKey), every other type is keyed by its own fields.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

from kafka_offsets_model.codec import (
    CodecError,
    decode_key,
    decode_record,
    streams_source_topics,
    subscription_topics,
)
from kafka_offsets_model.codec.wire import Reader

OFFSET_COMMIT = 1
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16
STREAMS_GROUP_TOPOLOGY = 23
# Not a record type: every GroupMetadata record still in the log (the newest included), kept as history so a
# static member that re-joined with another subscription in the same generation shows (groups.py).
GROUP_METADATA_HISTORY = 102
KIP848_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})
SHARE_TYPES = frozenset(range(9, 16))
SHARE_MEMBER_TYPES = frozenset({10, 14})
STREAMS_TYPES = frozenset(range(17, 25))
STREAMS_MEMBER_TYPES = frozenset({19, 22})

_MEMBER_KEY_TYPES = frozenset({5, 7, 8, 10, 13, 14, 19, 21, 22})


class Fact(NamedTuple):
    """The analysis' view of one decoded record. Columns that do not apply to the type are None.

    - type: the record type (0 normalised to 1); group: the group id.
    - topic/partition: offset commits. member: the member id of per-member records, or the regular
      expression of a type-16 record.
    - committed_offset, commit_timestamp, expire_timestamp (None for Kafka's -1 sentinel): offset commits.
    - protocol_type, state_timestamp (None for -1), member_count: classic group metadata.
    - topics: classic group metadata: the union of the members' subscribed topics (None = unknown);
      type 5: the member's SubscribedTopicNames; type 16: the regex's resolved Topics; type 23 (streams
      topology): its source topics, `StreamsTopology.sourceTopicMap` (SourceTopics and
      RepartitionSourceTopics of every subtopology), None when the topology value does not decode.
    - regex: type 5's SubscribedTopicRegex; type 23: the subtopologies' SourceTopicRegex, one per line
      (None without any). epoch: type 3 Epoch, type 6 AssignmentEpoch, type 8
      MemberEpoch. member_state: type 8 State.
    - record_timestamp: the record's own timestamp (None when unknown or -1), set by the readers, not by
      `fact_from_record`: when a KIP-848 group became Empty is only in the timestamps of its records.
    - generation: classic group metadata's generation.
    """

    type: int
    group: str
    topic: str | None = None
    partition: int | None = None
    member: str | None = None
    tombstone: bool = False
    committed_offset: int | None = None
    commit_timestamp: int | None = None
    expire_timestamp: int | None = None
    protocol_type: str | None = None
    state_timestamp: int | None = None
    member_count: int | None = None
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    epoch: int | None = None
    member_state: int | None = None
    record_timestamp: int | None = None
    generation: int | None = None

    def logical_key(self) -> tuple[int, str, str | None, int | None, str | None]:
        return (self.type, self.group, self.topic, self.partition, self.member)


def fact_from_record(key: bytes, value: bytes | None) -> Fact:
    """Raises CodecError for bytes that are not a record Kafka could have written.

    One exception: a streams topology whose value does not decode (a newer schema than this code knows)
    gives a topology fact with unknown topics, so its group's source topics are unknown rather than
    absent: dropping the record would make every offset of a live streams group look unsubscribed.
    """
    fast = _fast_offset_commit(key, value)
    if fast is not None:
        return fast
    try:
        return _fact_from_decoded(decode_record(key, value))
    except CodecError:
        topology = _undecodable_topology(key, value)
        if topology is None:
            raise
        return topology


def _undecodable_topology(key: bytes, value: bytes | None) -> Fact | None:
    if value is None:
        return None
    try:
        _rtype, type_id, key_fields = decode_key(key)
    except CodecError:
        return None
    if type_id != STREAMS_GROUP_TOPOLOGY:
        return None
    return Fact(STREAMS_GROUP_TOPOLOGY, key_fields["GroupId"])


def _sentinel(value: Any) -> int | None:
    return None if value is None or value == -1 else int(value)


def _fact_from_decoded(record: dict[str, Any]) -> Fact:
    type_id = int(record["keyVersion"])
    key = record["key"]
    value = record["value"]
    if type_id in (0, 1):
        base = Fact(OFFSET_COMMIT, key["group"], topic=key["topic"], partition=key["partition"])
        if value is None:
            return base._replace(tombstone=True)
        return base._replace(
            committed_offset=value["offset"],
            commit_timestamp=value["commitTimestamp"],
            expire_timestamp=_sentinel(value.get("expireTimestamp")),
        )
    if type_id == GROUP_METADATA:
        base = Fact(GROUP_METADATA, key["group"])
        if value is None:
            return base._replace(tombstone=True)
        members = value.get("members") or []
        return base._replace(
            protocol_type=value["protocolType"],
            state_timestamp=_sentinel(value.get("currentStateTimestamp")),
            member_count=len(members),
            topics=classic_subscribed_topics(value["protocolType"], value.get("protocol"), members),
            generation=value.get("generation"),
        )
    group = key["GroupId"]
    member = key.get("MemberId") if type_id in _MEMBER_KEY_TYPES else key.get("RegularExpression")
    base = Fact(type_id, group, member=member)
    if value is None:
        return base._replace(tombstone=True)
    if type_id == CONSUMER_GROUP_METADATA:
        return base._replace(epoch=value["Epoch"])
    if type_id == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        return base._replace(epoch=value["AssignmentEpoch"])
    if type_id == CONSUMER_GROUP_MEMBER_METADATA:
        return base._replace(
            topics=tuple(value["SubscribedTopicNames"]), regex=value["SubscribedTopicRegex"] or None
        )
    if type_id == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        return base._replace(epoch=value["MemberEpoch"], member_state=value["State"])
    if type_id == CONSUMER_GROUP_REGULAR_EXPRESSION:
        return base._replace(topics=tuple(value["Topics"]))
    if type_id == STREAMS_GROUP_TOPOLOGY:
        return base._replace(topics=streams_source_topics(value), regex=_streams_regexes(value))
    return base


def _streams_regexes(topology: dict[str, Any]) -> str | None:
    regexes = sorted(
        {r for sub in topology.get("Subtopologies") or () for r in sub.get("SourceTopicRegex") or ()}
    )
    return "\n".join(regexes) if regexes else None
def history_fact(fact: Fact, partition: int, offset: int) -> Fact | None:
    """A GroupMetadata record as history (GROUP_METADATA_HISTORY), keyed by its place in the log so that
    replay keeps every one; None for anything else (tombstones, other types)."""
    if fact.type != GROUP_METADATA or fact.tombstone:
        return None
    return fact._replace(type=GROUP_METADATA_HISTORY, member=f"{partition}:{offset}")


def group_metadata_generation(value: bytes | None) -> int | None:
    """A GroupMetadataValue's generation read from its first fields (version, protocolType, generation)
    without decoding the members; None for a tombstone or bytes that do not get that far. Only records of
    the newest record's generation can matter as history, so the others are never decoded in full."""
    if value is None:
        return None
    r = Reader(value, "group metadata")
    try:
        version = r.int16("version")
        r.string("protocolType", version >= 4, True)
        return r.int32("generation")
    except CodecError:
        return None


def same_generation_history(versions: list[tuple[int, bytes | None]]) -> list[int]:
    """Of one GroupMetadata key's records (offset, value), the indexes of the older ones worth keeping as
    history: those of the newest record's generation (the newest itself becomes history where it is decoded
    as a survivor, so it is not listed); none when the newest is a tombstone."""
    if len(versions) < 2:
        return []
    newest = max(range(len(versions)), key=lambda i: versions[i][0])
    generation = group_metadata_generation(versions[newest][1])
    if generation is None:
        return []
    return [
        i for i, (_, value) in enumerate(versions) if i != newest and group_metadata_generation(value) == generation
    ]


def classic_subscribed_topics(
    protocol_type: str, protocol: str | None, members: Iterable[dict[str, Any]]
) -> tuple[str, ...] | None:
    """The topics a classic group's members subscribe to, as ClassicGroup.computeSubscribedTopics sees them.

    Only "consumer" groups have known subscriptions; a group without members subscribes to nothing; a
    group without a selected protocol, or with a member whose subscription does not parse, is unknown.
    Kafka reads only the version-0 prefix (topics, user data) after the version short, whatever the version.
    """
    if protocol_type != "consumer":
        return None
    members = list(members)
    if not members:
        return ()
    if protocol is None:
        return None
    topics: set[str] = set()
    for member in members:
        subscription = member.get("subscription")
        if isinstance(subscription, dict):
            topics.update(subscription.get("topics") or ())
            continue
        parsed = subscription_topics_v0(subscription if isinstance(subscription, bytes) else b"")
        if parsed is None:
            return None
        topics.update(parsed)
    return tuple(sorted(topics))


def subscription_topics_v0(raw: bytes) -> list[str] | None:
    """codec.subscription_topics; None where Kafka cannot read the bytes. A SchemaException makes Kafka's
    subscriptions unknown; any other reader error fails Kafka's load of the partition, so nothing of the
    group expires either: both are "unknown" here (and for the policy)."""
    try:
        return subscription_topics(raw)
    except CodecError:
        return None


# ---- the fast path for the bulk of the topic: offset commits with a non-flexible value ----

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


def _fast_offset_commit(key: bytes, value: bytes | None) -> Fact | None:
    """Offset commit keys (type 1) with values v0..v4 in a few struct calls.

    Returns None for anything unusual (other types, v4 metadata of 127 bytes or more or tagged fields other
    than the topic id, negative lengths, trailing bytes,
    bad UTF-8), and the general decoder then gives the exact answer or error. It never returns a Fact the
    general decoder would not.
    """
    try:
        if len(key) < 10 or _H.unpack_from(key, 0)[0] != 1:
            return None
        glen = _H.unpack_from(key, 2)[0]
        tpos = 4 + glen
        tlen = _H.unpack_from(key, tpos)[0]
        ppos = tpos + 2 + tlen
        if glen < 0 or tlen < 0 or ppos + 4 != len(key):
            return None
        group = key[4:tpos].decode()
        topic = key[tpos + 2 : ppos].decode()
        partition = _I.unpack_from(key, ppos)[0]
        if value is None:
            return Fact(OFFSET_COMMIT, group, topic=topic, partition=partition, tombstone=True)
        version = _H.unpack_from(value, 0)[0]
        if not 0 <= version <= 4:
            return None
        offset = _Q.unpack_from(value, 2)[0]
        pos = 14 if version >= 3 else 10  # after the leader epoch (v3+)
        if version == 4:  # flexible: a compact string (one length byte below 127 bytes), then tagged fields
            compact = value[pos]
            if compact == 0 or compact >= 0x80:
                return None
            mlen = compact - 1
            pos += 1 + mlen
        else:
            mlen = _H.unpack_from(value, pos)[0]
            if mlen < 0:
                return None
            pos += 2 + mlen
        value[pos - mlen : pos].decode()
        commit = _Q.unpack_from(value, pos)[0]
        pos += 8
        expire = None
        if version == 1:
            expire = _Q.unpack_from(value, pos)[0]
            pos += 8
            if expire == -1:
                expire = None
        elif version == 4:
            tags = value[pos]
            if tags == 1 and value[pos + 1] == 0 and value[pos + 2] == 16:
                pos += 3 + 16  # the topic id (KAFKA-19141), which the analysis does not need
            elif tags == 0:
                pos += 1
            else:
                return None
        if pos != len(value):
            return None
        return Fact(
            OFFSET_COMMIT,
            group,
            topic=topic,
            partition=partition,
            committed_offset=offset,
            commit_timestamp=commit,
            expire_timestamp=expire,
        )
    except (struct.error, UnicodeDecodeError, IndexError):
        return None
