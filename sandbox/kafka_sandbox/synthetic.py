"""Seeded synthetic `__consumer_offsets` contents for tests and the benchmark.

Every kind of record the analysis must handle, in realistic proportions: classic groups (Stable with
consumer-protocol subscriptions, Empty with and without a state timestamp, other protocol types),
simple groups, KIP-848 groups (members, literal and regex subscriptions, resolved and unresolved
regexes), streams groups (topologies, some undecodable; other values opaque), share groups, offset values v0..v4 (v1 with an
expireTimestamp), legacy key type 0, tombstones for offsets and groups, and corrupt records. Records are
built with the codec; each group's records are in its partition in the order its coordinator would
write them, interleaved with other groups' records.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafka_offsets_model.codec import (
    consumer_group_current_assignment,
    consumer_group_epoch,
    consumer_group_member_subscription,
    consumer_group_regular_expression,
    consumer_group_target_assignment_epoch,
    encode_key,
    encode_value,
    group_metadata,
    partition_for,
    share_group,
    streams_group,
    streams_group_topology,
)
from kafka_offsets_model.raw import RawRecord

DAY_MS = 86_400_000


@dataclass(frozen=True)
class SyntheticTopic:
    records: list[RawRecord]
    partitions: int
    existing_topics: frozenset[str]
    now_ms: int


@dataclass
class _Spec:
    groups: int
    topic_partitions: int
    commits: int
    corrupt_fraction: float
    now_ms: int


_KINDS = (
    ("classic-stable", 20),
    ("classic-empty", 22),
    ("classic-empty-v1", 4),
    ("classic-connect", 5),
    ("simple", 18),
    ("kip848", 16),
    ("streams", 3),
    ("share", 1),
    ("deleted", 7),
    ("protected-like", 5),
)
_TOPICS = [f"topic-{i}" for i in range(20)]
EXISTING_TOPICS = frozenset(_TOPICS[:16])


def generate(
    seed: int,
    *,
    groups: int = 40,
    partitions: int = 4,
    topic_partitions: int = 3,
    commits: int = 2,
    corrupt_fraction: float = 0.01,
    now_ms: int = 1_700_000_000_000,
) -> SyntheticTopic:
    """`commits`: offset commits per (group, topic, partition); records grow about linearly in each knob."""
    rng = random.Random(seed)
    spec = _Spec(groups, topic_partitions, commits, corrupt_fraction, now_ms)
    queues: dict[int, list[list[tuple[bytes, bytes | None, int]]]] = {p: [] for p in range(partitions)}
    for i in range(groups):
        kind = rng.choices([k for k, _ in _KINDS], [w for _, w in _KINDS])[0]
        group_id = f"{kind}-{i}" if kind != "protected-like" else f"billing-{i}"
        events = list(_group_events(rng, spec, group_id, kind))
        queues[partition_for(group_id, partitions)].append(events)
    records: list[RawRecord] = []
    for p, per_group in queues.items():
        offset = rng.randrange(0, 1000)  # compacted topics do not start at 0
        for key, value, ts in _interleave(rng, per_group):
            records.append(RawRecord(p, offset, ts, key, value))
            offset += rng.choice((1, 1, 1, 2))  # gaps, as compaction leaves them
        for _ in range(_corrupt_count(rng, spec, len(per_group))):
            key, value = _corrupt(rng)
            records.append(RawRecord(p, offset, now_ms, key, value))
            offset += 1
    return SyntheticTopic(records, partitions, EXISTING_TOPICS, now_ms)


def _corrupt_count(rng: random.Random, spec: _Spec, groups: int) -> int:
    expected = spec.corrupt_fraction * groups * spec.topic_partitions * spec.commits
    return int(expected) + (1 if rng.random() < expected - int(expected) else 0)


def _interleave(rng: random.Random, queues: list[list[Any]]) -> Iterator[Any]:
    """Merges the groups' event lists at random, keeping each list's own order."""
    live = [list(reversed(q)) for q in queues if q]
    while live:
        i = rng.randrange(len(live))
        yield live[i].pop()
        if not live[i]:
            live[i] = live[-1]
            live.pop()


def _group_events(
    rng: random.Random, spec: _Spec, group: str, kind: str
) -> Iterator[tuple[bytes, bytes | None, int]]:
    now = spec.now_ms
    start = now - rng.randrange(1, 20) * DAY_MS - rng.randrange(DAY_MS)
    topics = rng.sample(_TOPICS, rng.choice((1, 1, 2, 3)))
    subscribed = topics[:-1] if len(topics) > 1 and rng.random() < 0.5 else topics
    t = start
    members = [f"{group}-m{j}" for j in range(rng.choice((1, 2, 3)))]

    if kind in ("classic-stable", "classic-empty", "classic-empty-v1", "protected-like", "deleted"):
        yield (*_classic(group, "consumer", members, subscribed, t, rng), t)
    elif kind == "classic-connect":
        yield (*_classic(group, "connect", members, [], t, rng), t)
    elif kind == "kip848":
        yield from _kip848(rng, group, members, subscribed, t)
    elif kind == "streams":
        yield from _streams(rng, group, members, subscribed, t)
    elif kind == "share":
        for key, value in share_group(group, members):
            yield key, value, t

    end = now - rng.randrange(0, 3 * DAY_MS) if rng.random() < 0.3 else now - rng.randrange(1, 12) * DAY_MS
    span = max(end - t, 1)
    for c in range(spec.commits):
        for topic in topics:
            for partition in range(spec.topic_partitions):
                ts = t + span * (c + 1) // (spec.commits + 1) + rng.randrange(1000)
                yield (*_offset_commit(rng, group, topic, partition, ts), ts)
    t = end

    if rng.random() < 0.1:  # an admin deleted some offsets
        topic = rng.choice(topics)
        yield (encode_key("OffsetCommit", {"group": group, "topic": topic, "partition": 0}), None, t)
    if kind in ("classic-empty", "classic-empty-v1", "protected-like", "deleted"):
        t += rng.randrange(DAY_MS)
        cst = -1 if kind == "classic-empty-v1" else t
        yield (*_classic(group, "consumer", [], [], cst, rng, version=1 if cst == -1 else 3), t)
    if kind == "deleted":
        t += 1
        yield (encode_key("GroupMetadata", {"group": group}), None, t)
        for topic in topics:
            for partition in range(spec.topic_partitions):
                yield (
                    encode_key("OffsetCommit", {"group": group, "topic": topic, "partition": partition}),
                    None,
                    t,
                )
    if kind == "kip848" and rng.random() < 0.3:  # everyone left: member tombstones
        for member in members:
            for name in ("ConsumerGroupCurrentMemberAssignment", "ConsumerGroupMemberMetadata"):
                yield (encode_key(name, {"GroupId": group, "MemberId": member}), None, t)


def _offset_commit(
    rng: random.Random, group: str, topic: str, partition: int, ts: int
) -> tuple[bytes, bytes]:
    roll = rng.random()
    key_fields = {"group": group, "topic": topic, "partition": partition}
    value: dict[str, Any] = {"offset": rng.randrange(1 << 40), "metadata": "", "commitTimestamp": ts}
    if roll < 0.03:  # 0.8.2-era: key type 0, value v0
        return encode_key("OffsetCommit", key_fields, 0), encode_value("OffsetCommit", value, 0)
    if roll < 0.10:  # OffsetCommit v2-v4 with a retention time: value v1 with an expireTimestamp
        value["expireTimestamp"] = ts + rng.randrange(-1, 15) * DAY_MS if rng.random() < 0.9 else -1
        return encode_key("OffsetCommit", key_fields), encode_value("OffsetCommit", value, 1)
    version = rng.choice((0, 2, 3, 3, 3, 3, 3, 3, 4)) if roll < 0.3 else 3
    if version >= 3:
        value["leaderEpoch"] = rng.choice((-1, 0, 5))
    if rng.random() < 0.05:
        value["metadata"] = "ckpt-" + "é" * rng.randrange(3)
    return encode_key("OffsetCommit", key_fields), encode_value("OffsetCommit", value, version)


def _classic(
    group: str,
    protocol_type: str,
    members: list[str],
    topics: list[str],
    cst: int,
    rng: random.Random,
    version: int = 3,
) -> tuple[bytes, bytes]:
    if not members:
        key, value = group_metadata(
            group,
            protocol_type=protocol_type,
            generation=rng.randrange(1, 50),
            protocol=None,
            leader=None,
            current_state_timestamp=cst,
        )
        if version != 3:
            value = encode_value(
                "GroupMetadata",
                {
                    "protocolType": protocol_type,
                    "generation": 7,
                    "protocol": None,
                    "leader": None,
                    "members": [],
                },
                version,
            )
        return key, value
    rows = []
    for m in members:
        if protocol_type == "consumer":
            if rng.random() < 0.03:
                subscription: Any = b"\x00\x01\xff"  # a member whose subscription does not parse
            else:
                subscription = {"version": rng.randrange(0, 4), "topics": list(topics)}
            assignment: Any = {"version": 0, "partitions": []}
        else:
            subscription, assignment = b"opaque", b""
        rows.append(
            {
                "memberId": m,
                "groupInstanceId": None,
                "clientId": "client",
                "clientHost": "/10.0.0.1",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 45000,
                "subscription": subscription,
                "assignment": assignment,
            }
        )
    protocol = "range" if rng.random() < 0.97 else None
    return group_metadata(
        group,
        protocol_type=protocol_type,
        generation=rng.randrange(1, 50),
        protocol=protocol,
        leader=members[0],
        current_state_timestamp=cst,
        members=rows,
    )


def _kip848(
    rng: random.Random, group: str, members: list[str], topics: list[str], t: int
) -> Iterator[tuple[bytes, bytes | None, int]]:
    epoch = rng.randrange(1, 20)
    assignment_epoch = epoch if rng.random() < 0.8 else epoch - 1
    yield (*consumer_group_epoch(group, epoch), t)
    regex = "topic-1.*" if rng.random() < 0.3 else None
    for member in members:
        names = [] if regex is not None and rng.random() < 0.5 else list(topics)
        yield (
            *consumer_group_member_subscription(
                group, member, topics=names, regex=regex, client_host="/10.0.0.2", server_assignor="uniform"
            ),
            t,
        )
    if regex is not None and rng.random() < 0.7:
        resolved = sorted(x for x in _TOPICS if x.startswith("topic-1"))
        yield (*consumer_group_regular_expression(group, regex, topics=resolved, version=3, timestamp=t), t)
    yield (*consumer_group_target_assignment_epoch(group, assignment_epoch), t)
    for member in members:
        member_epoch = assignment_epoch if rng.random() < 0.9 else assignment_epoch - 1
        state = 0 if rng.random() < 0.9 else 1
        yield (
            *consumer_group_current_assignment(
                group, member, member_epoch=member_epoch, previous_member_epoch=assignment_epoch - 1, state=state
            ),
            t,
        )


def _streams(
    rng: random.Random, group: str, members: list[str], topics: list[str], t: int
) -> Iterator[tuple[bytes, bytes | None, int]]:
    live = members if rng.random() < 0.6 else []
    roll = rng.random()
    if roll < 0.15:
        topology = None  # a group whose topology record is gone or not written yet
    elif roll < 0.25:
        key, _ = streams_group_topology(group)
        topology = (key, b"\x00\x00\x02")  # a topology this code cannot decode
    else:
        topology = streams_group_topology(
            group,
            source_topics=topics[:1],
            repartition_source_topics=topics[1:2],
            source_topic_regexes=["topic-1.*"] if rng.random() < 0.2 else [],
        )
    for key, value in streams_group(group, live, topology):
        yield key, value, t


def _corrupt(rng: random.Random) -> tuple[bytes, bytes | None]:
    choice = rng.randrange(4)
    if choice == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12))), b"junk"
    if choice == 1:
        return encode_key("OffsetCommit", {"group": "corrupt", "topic": "t", "partition": 0}), b"\x00\x03\x00"
    if choice == 2:
        return b"\x00\x63\x00\x01g", b"\x00\x00"  # record type 99: from a newer Kafka
    return encode_key("GroupMetadata", {"group": "corrupt-group"}), b"\x00\x09" + b"\x00" * 10  # value v9
