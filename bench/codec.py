"""Throughput of `decode_record` on the record types the Spark job sees most.

Not a test: prints records/s for decode_record (OffsetCommit records take fastpath.py) and for the
schema interpreter alone (what every record cost before the fast path). One core, CPU time, best
of several rounds. Run: .venv/bin/python bench/codec.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from kafka_offsets_model.codec import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    decode_record,
    encode_consumer_protocol,
    encode_key,
    encode_value,
    group_metadata,
    offset_commit,
)
from kafka_offsets_model.codec.records import decode_record_generic


def _samples() -> dict[str, list[tuple[bytes, bytes | None]]]:
    t0 = 1_763_700_000_000
    v3 = [
        offset_commit(
            f"group-{i % 97}",
            f"topic-{i % 31}",
            i % 12,
            offset=i * 1000,
            commit_timestamp=t0 + i,
            leader_epoch=i % 5,
            metadata="" if i % 3 else "checkpoint",
        )
        for i in range(1000)
    ]
    v1 = [
        offset_commit(
            f"group-{i}", "orders", i % 12, offset=i, commit_timestamp=t0, expire_timestamp=t0 + 86_400_000
        )
        for i in range(200)
    ]
    v4 = [
        (
            encode_key("OffsetCommit", {"group": f"group-{i}", "topic": "orders", "partition": i % 12}),
            encode_value(
                "OffsetCommit", {"offset": i, "leaderEpoch": 3, "metadata": "", "commitTimestamp": t0}, 4
            ),
        )
        for i in range(200)
    ]
    sub = encode_consumer_protocol(
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        {
            "version": 3,
            "topics": ["orders", "payments"],
            "ownedPartitions": [{"topic": "orders", "partitions": [0, 1]}],
            "generationId": 4,
            "rackId": "rack-a",
        },
        "subscription",
    )
    asg = encode_consumer_protocol(
        CONSUMER_PROTOCOL_ASSIGNMENT,
        {"version": 3, "partitions": [{"topic": "orders", "partitions": [0, 1, 2]}]},
        "a",
    )
    members = [
        {
            "memberId": f"consumer-{m}-5f0c",
            "groupInstanceId": None,
            "clientId": f"consumer-{m}",
            "clientHost": "/10.0.0.7",
            "rebalanceTimeout": 300000,
            "sessionTimeout": 45000,
            "subscription": sub,
            "assignment": asg,
        }
        for m in range(5)
    ]
    gm = [
        group_metadata(
            f"group-{i}",
            protocol_type="consumer",
            generation=i,
            protocol="range",
            leader=members[0]["memberId"],
            current_state_timestamp=t0,
            members=members,
        )
        for i in range(200)
    ]
    return {
        "OffsetCommit v3 (what Kafka 4.0 writes)": v3,
        "OffsetCommit v1 (with expireTimestamp)": v1,
        "OffsetCommit v4 (what Kafka 4.1+ writes)": v4,
        "OffsetCommit tombstone": [(k, None) for k, _ in v3],
        "GroupMetadata v3, consumer, 5 members": gm,
    }


def _rate(
    records: list[tuple[bytes, bytes | None]], decode: Callable[[bytes, bytes | None], object], seconds: float
) -> float:
    """Records per CPU-second of this process, best of several rounds: the machine is shared, and CPU
    time with the best round is the figure least disturbed by other work."""
    best = 0.0
    deadline = time.perf_counter() + seconds
    while True:
        start = time.process_time()
        for key, value in records:
            decode(key, value)
        elapsed = time.process_time() - start
        if elapsed > 0:
            best = max(best, len(records) / elapsed)
        if time.perf_counter() > deadline:
            return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per record kind and decoder")
    args = parser.parse_args()
    print(f"{'records':45s} {'decode_record':>15s} {'interpreter only':>17s}")
    for name, records in _samples().items():
        fast = _rate(records, decode_record, args.seconds)
        generic = _rate(records, decode_record_generic, args.seconds)
        print(f"{name:45s} {fast:>13,.0f}/s {generic:>15,.0f}/s")


if __name__ == "__main__":
    main()
