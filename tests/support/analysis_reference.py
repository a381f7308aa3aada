"""The reference analysis: plain Python, one process, written for obviousness. It is the test oracle
the Spark pipeline must agree with record for record, and the baseline of the benchmark.

Steps, in the order Kafka itself would see the data:

1. Compact by raw key bytes, as Kafka's log cleaner does: the record with the highest offset wins
   (tombstones included). Only the survivors are decoded: an older value cannot be current if a newer
   one exists, even when the newer one is unreadable.
2. Decode each survivor into a Fact; survivors that do not decode are counted in skippedRecords.
3. Replay: for each logical key (offset commits of key types 0 and 1 share one), the survivor with the
   highest offset wins; tombstones then delete.
4. Rebuild every group from its live records (groups.rebuild_group), then decide each offset
   (rules.decide) and shape the result (offset_result, report.RESULT_FIELDS' shape).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from kafka_offsets_model.codec import CodecError
from kafka_offsets_model.policy import Policy
from kafka_offsets_model.raw import RawRecord
from kafka_offsets_model.rules import Decision, GroupView, OffsetView, decide
from offset_expiry.facts import (
    GROUP_METADATA_HISTORY,
    OFFSET_COMMIT,
    Fact,
    fact_from_record,
    history_fact,
    same_generation_history,
)
from offset_expiry.groups import rebuild_group, simple_group
from offset_expiry.report import summary


def is_group_metadata_key(key: bytes | None) -> bool:
    """Key type 2 (GroupMetadataKey), read from the key's first two bytes without decoding it."""
    return key is not None and key[:2] == b"\x00\x02"


def offset_result(group: GroupView, offset: OffsetView, decision: Decision) -> dict[str, Any]:
    """One offset's result, in the pipeline's shape (offset_expiry.report.RESULT_FIELDS)."""
    return {
        "group": group.group_id,
        "groupType": group.type.value,
        "groupState": group.state,
        "protocolType": group.protocol_type,
        "topic": offset.topic,
        "partition": offset.partition,
        "offset": offset.offset,
        "commitTimestamp": offset.commit_timestamp,
        "brokerExpiresAt": decision.broker_expires_at,
        "candidate": decision.candidate,
        "reason": decision.reason.value,
    }


def sort_key(result: Mapping[str, Any]) -> tuple[str, str, int]:
    return (result["group"], result["topic"], result["partition"])


def count_reasons(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result["reason"]] = counts.get(result["reason"], 0) + 1
    return counts


def analyze_records(
    records: Iterable[RawRecord],
    policy: Policy,
    *,
    now_ms: int,
    retention_ms: int,
    existing_topics: Collection[str] | None,
    snapshot: Mapping[int, int] | None = None,
    candidates_only: bool = False,
) -> dict[str, Any]:
    scanned = 0
    latest: dict[tuple[int, bytes], RawRecord] = {}
    versions: dict[tuple[int, bytes], list[RawRecord]] = {}  # GroupMetadata records (facts.history_fact)
    for record in records:
        scanned += 1
        if is_group_metadata_key(record.key):
            versions.setdefault((record.partition, record.key), []).append(record)
        slot = (record.partition, record.key)
        current = latest.get(slot)
        if current is None or record.offset > current.offset:
            latest[slot] = record

    skipped = 0
    replayed: dict[tuple[Any, ...], tuple[int, int, Fact]] = {}
    for record in latest.values():
        try:
            fact = fact_from_record(record.key, record.value)
            if fact.type != OFFSET_COMMIT and record.timestamp >= 0:
                fact = fact._replace(record_timestamp=record.timestamp)
        except CodecError:
            skipped += 1
            continue
        key = fact.logical_key()
        rank = (record.offset, record.partition)
        current_fact = replayed.get(key)
        if current_fact is None or rank > current_fact[:2]:
            replayed[key] = (*rank, fact)
        past = history_fact(fact, record.partition, record.offset)  # the newest GroupMetadata record is history too
        if past is not None:
            replayed[past.logical_key()] = (*rank, past)
    history = [
        rs[i] for rs in versions.values() for i in same_generation_history([(r.offset, r.value) for r in rs])
    ]
    for record in history:
        try:
            past = history_fact(fact_from_record(record.key, record.value), record.partition, record.offset)
        except CodecError:
            continue
        if past is not None:
            if record.timestamp >= 0:
                past = past._replace(record_timestamp=record.timestamp)
            replayed[past.logical_key()] = (record.offset, record.partition, past)

    offsets_by_group: dict[str, list[Fact]] = {}
    group_facts: dict[str, list[Fact]] = {}
    history_facts: dict[str, list[Fact]] = {}
    for _, _, fact in replayed.values():
        if fact.tombstone:
            continue
        if fact.type == OFFSET_COMMIT:
            offsets_by_group.setdefault(fact.group, []).append(fact)
        elif fact.type == GROUP_METADATA_HISTORY:  # never makes a group on its own
            history_facts.setdefault(fact.group, []).append(fact)
        else:
            group_facts.setdefault(fact.group, []).append(fact)

    topics = None if existing_topics is None else frozenset(existing_topics)
    results = []
    for group_id, offset_facts in offsets_by_group.items():
        group = (
            rebuild_group(group_id, group_facts[group_id] + history_facts.get(group_id, []))
            if group_id in group_facts
            else simple_group(group_id)
        )
        newest = max((f.commit_timestamp for f in offset_facts if f.commit_timestamp is not None), default=None)
        group = replace(group, newest_commit_timestamp=newest)
        for fact in offset_facts:
            offset = offset_view(fact)
            decision = decide(
                group, offset, policy, now_ms=now_ms, retention_ms=retention_ms, existing_topics=topics
            )
            results.append(offset_result(group, offset, decision))
    results.sort(key=sort_key)

    return {
        "summary": summary(
            records_scanned=scanned,
            groups=len(offsets_by_group.keys() | group_facts.keys()),
            reasons=count_reasons(results),
            skipped_records=skipped,
            snapshot=snapshot or {},
        ),
        "offsets": [r for r in results if r["candidate"]] if candidates_only else results,
    }


def offset_view(fact: Fact) -> OffsetView:
    assert fact.topic is not None and fact.partition is not None
    assert fact.committed_offset is not None and fact.commit_timestamp is not None
    return OffsetView(
        fact.topic, fact.partition, fact.committed_offset, fact.commit_timestamp, fact.expire_timestamp
    )
