"""A group's own records in its `__consumer_offsets` partition, as the operator reasons about them: what the
adapter (adapters/offsets_topic.py) decodes for the re-check right before a change (decisions/fresh_verdict.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .offsets import TP


class RecordKind(StrEnum):
    COMMIT = "commit"  # OffsetCommit (types 0/1), with a value
    OFFSET_TOMBSTONE = "offsetTombstone"  # OffsetCommit without a value: the offset was deleted or expired
    CLASSIC = "classic"  # GroupMetadata (type 2)
    CONSUMER = "consumer"  # KIP-848 consumer group records (3-8, 16)
    STREAMS = "streams"  # streams group records (17-24)
    SHARE = "share"  # share group records (9-15)


@dataclass(frozen=True)
class GroupRecord:
    """One record of the group in its `__consumer_offsets` partition, as the adapter decoded it."""

    position: int  # the record's offset in __consumer_offsets
    timestamp: int  # the record's timestamp (ms)
    kind: RecordKind
    type_name: str  # the record type's name (codec.RECORD_TYPES), e.g. ConsumerGroupMemberMetadata
    tp: TP | None = None  # OffsetCommit records: which partition
    offset: int | None = None  # OffsetCommit records: the committed offset
    commit_timestamp: int | None = None  # OffsetCommit records: the commit's own timestamp
