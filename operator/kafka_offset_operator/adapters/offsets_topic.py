"""Reading `__consumer_offsets` with kafka-python: the `dump` command, and one group's records for the re-check
right before a change (`group_records`).

Read committed: transactional offset commits only count once their COMMIT marker is written
(OffsetMetadataManager.replayEndTransactionMarker), and aborted ones never do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from types import TracebackType

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from kafka_offsets_model.codec import CodecError, decode_key, decode_value, partition_for
from kafka_offsets_model.errors import InputError
from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
from offset_expiry.reachability import check_reachable

from ..errors import UserError
from ..model.connection import ConnectionSettings
from ..model.group_log import GroupRecord, RecordKind
from ..model.offsets import CONNECTION_FAILED, KafkaFailure
from .kafka_admin import kafka_failure, remove_private_files, security_config

IDLE_TIMEOUT_S = 30.0


class OffsetsTopicReader:
    """A group-less consumer assigned to `__consumer_offsets` partitions. The connect check is analyze's
    (offset_expiry.reachability): a wrong address fails the same way, in the same time, for both."""

    def __init__(self, bootstrap_server: str, settings: ConnectionSettings | None = None) -> None:
        self.bootstrap_server = bootstrap_server
        try:
            check_reachable(bootstrap_server)
        except InputError as exc:
            raise UserError(str(exc)) from None
        security, self._tmpdir = security_config(settings or ConnectionSettings(bootstrap_server))
        try:
            self._consumer = KafkaConsumer(
                bootstrap_servers=bootstrap_server,
                group_id=None,
                enable_auto_commit=False,
                isolation_level="read_committed",
                request_timeout_ms=30000,
                **security,
            )
        except (KafkaError, ValueError) as exc:
            self._cleanup()
            text = settings.redact(str(exc)) if settings is not None else str(exc)
            raise UserError(f"cannot connect to Kafka at {bootstrap_server}: {text}") from None
        partitions = self._consumer.partitions_for_topic(OFFSETS_TOPIC)
        if not partitions:
            self.close()
            raise UserError(f"topic {OFFSETS_TOPIC} does not exist on {bootstrap_server}")
        self.partitions = sorted(partitions)

    def _cleanup(self) -> None:
        remove_private_files(self._tmpdir)
        self._tmpdir = None

    def close(self) -> None:
        try:
            self._consumer.close()
        finally:
            self._cleanup()

    def __enter__(self) -> OffsetsTopicReader:
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.close()

    def partition_for(self, group: str) -> int:
        return partition_for(group, len(self.partitions))

    def records(
        self, partitions: Sequence[int] | None, *, from_beginning: bool, follow: bool
    ) -> Iterator[RawRecord]:
        tps = [TopicPartition(OFFSETS_TOPIC, p) for p in (partitions or self.partitions)]
        self._consumer.assign(tps)
        if from_beginning:
            self._consumer.seek_to_beginning(*tps)
        else:
            self._consumer.seek_to_end(*tps)
        end = {tp: off for tp, off in self._consumer.end_offsets(tps).items()} if not follow else {}
        last_progress = time.monotonic()
        while True:
            if not follow and all(self._consumer.position(tp) >= end[tp] for tp in tps):
                return
            batches = self._consumer.poll(timeout_ms=500)
            if batches:
                last_progress = time.monotonic()
            elif not follow and time.monotonic() - last_progress > IDLE_TIMEOUT_S:
                raise UserError(
                    f"no progress reading {OFFSETS_TOPIC} from {self.bootstrap_server} "
                    f"for {IDLE_TIMEOUT_S:.0f}s"
                )
            for tp, records in sorted(batches.items(), key=lambda item: item[0].partition):
                for rec in records:
                    if not follow and rec.offset >= end[tp]:
                        continue
                    yield RawRecord(tp.partition, rec.offset, rec.timestamp, rec.key or b"", rec.value)


# -- one group's records, for the re-check right before a change (decisions/fresh_verdict.py)

# Record type ids (the key's int16) by what they are about; docs/kafka-semantics.md lists them.
_KINDS: dict[int, RecordKind] = {
    2: RecordKind.CLASSIC,
    **{t: RecordKind.CONSUMER for t in (3, 4, 5, 6, 7, 8, 16)},
    **{t: RecordKind.SHARE for t in range(9, 16)},
    **{t: RecordKind.STREAMS for t in range(17, 25)},
}


def group_records(settings: ConnectionSettings, group: str, partition: int, start: int | None,
                  timeout_ms: int, end: int | None = None) -> tuple[int, list[GroupRecord]]:
    """The end offset of the group's `__consumer_offsets` partition now (or `end`, when the caller read it:
    then nothing is connected unless there are records to read), and the group's records in it from `start`
    (None: none, only the end) to that end, read_committed (an open transaction's offset commits do not
    count yet: OffsetMetadataManager.replayEndTransactionMarker). Only that one partition is read.

    Anything that stops the read raises KafkaFailure, retriable: a refusal to read the topic
    (TOPIC_AUTHORIZATION_FAILED: the operator needs Read on topic __consumer_offsets), a broker that does not
    answer within `timeout_ms`. The caller then changes nothing."""
    if end is not None and (start is None or start >= end):
        return end, []
    security, tmpdir = security_config(settings)
    tp = TopicPartition(OFFSETS_TOPIC, partition)
    consumer: KafkaConsumer | None = None
    try:
        consumer = KafkaConsumer(
            bootstrap_servers=settings.bootstrap_servers.split(","), group_id=None, enable_auto_commit=False,
            isolation_level="read_committed", auto_offset_reset="earliest", request_timeout_ms=timeout_ms,
            fetch_max_wait_ms=50,  # the records are there (up to the end read before): no long poll
            client_id="kafka-offset-operator-recheck", **security)
        consumer.assign([tp])
        if end is None:
            end = int(consumer.end_offsets([tp])[tp])
        if start is None or start >= end:
            return end, []
        consumer.seek(tp, start)
        out: list[GroupRecord] = []
        deadline = time.monotonic() + timeout_ms / 1000
        while consumer.position(tp) < end:
            if time.monotonic() > deadline:
                raise KafkaFailure(CONNECTION_FAILED, f"reading {OFFSETS_TOPIC}-{partition} from offset {start} to "
                                   f"{end} made no progress within {timeout_ms} ms", True)
            for records in consumer.poll(timeout_ms=200).values():
                for rec in records:
                    if rec.offset < end:
                        decoded = _group_record(group, rec.offset, rec.timestamp, rec.key, rec.value)
                        if decoded is not None:
                            out.append(decoded)
        return end, out
    except KafkaFailure:
        raise
    except Exception as exc:
        failure = kafka_failure(exc)
        if failure.code == "TOPIC_AUTHORIZATION_FAILED":
            raise KafkaFailure(failure.code, f"not allowed to read {OFFSETS_TOPIC} (the operator needs Read on topic "
                               f"{OFFSETS_TOPIC} to re-check the group right before changing it)", True) from None
        raise KafkaFailure(failure.code, f"reading {OFFSETS_TOPIC}-{partition} for the re-check: {failure.message}",
                           True) from None
    finally:
        if consumer is not None:
            consumer.close()
        remove_private_files(tmpdir)


def _group_record(group: str, position: int, timestamp: int, key: bytes | None,
                  value: bytes | None) -> GroupRecord | None:
    """The record if it is the group's (None for other groups' and for records the codec cannot read: those
    are counted and skipped by the scan too)."""
    try:
        rtype, _, fields = decode_key(key or b"")
    except CodecError:
        return None
    owner = fields.get("group", fields.get("GroupId"))
    if owner != group:
        return None
    if rtype.id in (0, 1):
        tp = (str(fields["topic"]), int(fields["partition"]))
        if value is None:
            return GroupRecord(position, timestamp, RecordKind.OFFSET_TOMBSTONE, rtype.name, tp)
        try:
            _, v = decode_value(rtype, value)
        except CodecError:
            return GroupRecord(position, timestamp, RecordKind.COMMIT, rtype.name, tp)
        return GroupRecord(position, timestamp, RecordKind.COMMIT, rtype.name, tp, int(v["offset"]),
                           int(v["commitTimestamp"]))
    return GroupRecord(position, timestamp, _KINDS.get(rtype.id, RecordKind.CLASSIC), rtype.name)
