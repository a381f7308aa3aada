"""How fast kafka-python reads a large topic from the sandbox broker (run: python this_file.py [records]).

Not a test: it prints records/s so benchmarks know the broker is not their bottleneck.
"""

from __future__ import annotations

import sys
import time

from kafka import KafkaConsumer, TopicPartition

from kafka_sandbox import SandboxBroker

BATCH = 1000


def main(total: int) -> None:
    with SandboxBroker(offsets_partitions=1) as broker:
        broker.create_topic("bench", 1)
        now = int(time.time() * 1000)
        t0 = time.perf_counter()
        for start in range(0, total, BATCH):
            rows = [
                (b"key-%d" % i, b"value-%08d-" % i + b"x" * 40, now)
                for i in range(start, min(total, start + BATCH))
            ]
            broker.append_records("bench", 0, rows)
        seeded = time.perf_counter() - t0
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers, group_id=None, enable_auto_commit=False
        )
        tp = TopicPartition("bench", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        t0 = time.perf_counter()
        seen = 0
        while seen < total:
            for records in consumer.poll(timeout_ms=1000, max_records=100_000).values():
                seen += len(records)
        elapsed = time.perf_counter() - t0
        consumer.close()
    print(
        f"seeded {total} records in {seeded:.1f}s; kafka-python consumed them in {elapsed:.1f}s "
        f"= {total / elapsed:,.0f} records/s"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
