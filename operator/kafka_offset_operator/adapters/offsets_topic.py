"""Reading `__consumer_offsets` with kafka-python, for the `dump` command.

Read committed: transactional offset commits only count once their COMMIT marker is written
(OffsetMetadataManager.replayEndTransactionMarker), and aborted ones never do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from offset_expiry.codec import partition_for
from offset_expiry.errors import InputError
from offset_expiry.raw import OFFSETS_TOPIC
from offset_expiry.reachability import check_reachable

from ..errors import UserError
from ..model.connection import ConnectionSettings
from .kafka_admin import remove_private_files, security_config

IDLE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RawRecord:
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None


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
