"""Idempotent-producer bookkeeping per partition: epochs, sequence numbers, duplicate batches.

The checks of Kafka's UnifiedLog.analyzeAndValidateProducerState, ProducerStateEntry.findDuplicateBatch
and ProducerAppendInfo.checkProducerEpoch / checkSequence
(storage/src/main/java/org/apache/kafka/storage/internals/log/), reduced to what a single leader needs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import kafka.errors as Errors

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class BatchSequence:
    first_seq: int
    last_seq: int
    base_offset: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[BatchSequence] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def check(entry: ProducerEntry | None, epoch: int, first_seq: int, last_seq: int) -> tuple[int, int | None]:
    """(error, duplicate's base offset): NONE with an offset means "already written, answer with it"."""
    if entry is None:
        return Errors.NoError.errno, None  # no state (new producer, or state lost): any sequence is accepted
    if epoch < entry.epoch:
        return Errors.InvalidProducerEpochError.errno, None
    if epoch == entry.epoch:
        for batch in entry.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return Errors.NoError.errno, batch.base_offset
        if not _in_sequence(entry.last_seq, first_seq):
            return Errors.OutOfOrderSequenceNumberError.errno, None
    elif first_seq != 0:
        return Errors.OutOfOrderSequenceNumberError.errno, None
    return Errors.NoError.errno, None


def record(
    producers: dict[int, ProducerEntry],
    producer_id: int,
    epoch: int,
    first_seq: int,
    last_seq: int,
    base: int,
) -> None:
    entry = producers.get(producer_id)
    if entry is None or entry.epoch != epoch:
        entry = producers[producer_id] = ProducerEntry(epoch)
    entry.batches.append(BatchSequence(first_seq, last_seq, base))
