"""Reading the facts a verdict is re-derived from right before Kafka is changed (decisions/fresh_verdict.py
decides): where the group's `__consumer_offsets` partition ends (recorded with every backup), and the group's
records in it since a baseline. Shared by the OffsetDeletion and OffsetReset reconcilers.

A failure to read raises KafkaFailure (retriable), so the caller changes nothing on facts it could not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_offsets_model.codec import partition_for
from kafka_offsets_model.raw import OFFSETS_TOPIC

from ..adapters.kafka_admin import KafkaAdmin
from ..adapters.offsets_topic import group_records
from ..decisions.fresh_verdict import FreshFacts, baseline
from ..model.kinds.offset_deletion import ScanFacts
from ..model.offsets import GroupInfo, KafkaFailure
from ..model.times import parse_iso


def offsets_partition(admin: KafkaAdmin, group: str) -> int:
    """The group's `__consumer_offsets` partition (abs(javaHashCode(groupId)) % the topic's partitions now)."""
    count = len(admin.topic_partitions([OFFSETS_TOPIC]).get(OFFSETS_TOPIC) or ())
    if not count:
        raise KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", f"the cluster has no {OFFSETS_TOPIC} topic now", True)
    return partition_for(group, count)


def log_position(admin: KafkaAdmin, group: str, timeout_ms: int) -> dict[str, int]:
    """Where the group's partition ends now: `status.backup.offsetsLog`, read BEFORE the backup's OffsetFetch so
    a commit after it is at or past this position."""
    partition = offsets_partition(admin, group)
    return {"partition": partition, "offset": log_end(admin, partition)}


def log_end(admin: KafkaAdmin, partition: int) -> int:
    """The partition's end as a read_committed reader sees it (ListOffsets LATEST, READ_COMMITTED: the last
    stable offset), through the admin connection already open."""
    try:
        return admin.list_offsets([(OFFSETS_TOPIC, partition)], "latest", read_committed=True)[(OFFSETS_TOPIC, partition)]
    except KafkaFailure as failure:
        if failure.code == "TOPIC_AUTHORIZATION_FAILED":
            raise KafkaFailure(failure.code, f"not allowed to read {OFFSETS_TOPIC} (the operator needs Describe and "
                               f"Read on topic {OFFSETS_TOPIC} to re-check the group right before changing it)",
                               True) from None
        raise KafkaFailure(failure.code, f"reading where {OFFSETS_TOPIC}-{partition} ends: {failure.message}",
                           True) from None


def read_facts(admin: KafkaAdmin, group: str, live: GroupInfo | None, scan: ScanFacts | None,
               backup: Mapping[str, Any], timeout_ms: int, baseline_name: str | None = None) -> FreshFacts:
    """The group's records since the earlier of the scan's end (`scan`, a policy's proposal) and the backup's
    `offsetsLog`; without either (a backup taken by an older operator), since the backup's `takenAt` (the
    first record of the partition at or after it: ListOffsets by timestamp)."""
    partition = offsets_partition(admin, group)
    if scan is not None and scan.offsets_partition != partition:
        scan = None  # the topic's partition count changed: the scan's position means nothing now
    log = backup.get("offsetsLog") or {}
    backup_end = log.get("offset") if log.get("partition") == partition else None
    since = baseline(scan.end_offset if scan else None, backup_end)
    if scan is not None and (backup_end is None or scan.end_offset <= backup_end):
        since_what = f"the scan ({scan.time})" if scan.time else "the scan"
    else:
        since_what = baseline_name or f"the backup ({backup.get('takenAt')})"
    if since is None:
        taken = parse_iso(backup.get("takenAt")) or 0
        found = admin.list_offsets([(OFFSETS_TOPIC, partition)], taken).get((OFFSETS_TOPIC, partition), -1)
        since = None if found < 0 else found
    _, records = group_records(admin.settings, group, partition, since, timeout_ms, log_end(admin, partition))
    return FreshFacts(partition, since or 0, since_what, tuple(records), live)


def since_scan(admin: KafkaAdmin, group: str, snapshot: Mapping[str, Any], timeout_ms: int) -> FreshFacts | None:
    """The group's records since an analysis' snapshot ({partition: end offset}, the report's summary); None
    when the snapshot does not match the topic's partitions now."""
    partition = offsets_partition(admin, group)
    end = snapshot.get(str(partition))
    if end is None or len(snapshot) != len(admin.topic_partitions([OFFSETS_TOPIC]).get(OFFSETS_TOPIC) or ()):
        return None
    _, records = group_records(admin.settings, group, partition, int(end), timeout_ms, log_end(admin, partition))
    return FreshFacts(partition, int(end), "the scan", tuple(records))
