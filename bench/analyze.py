"""Benchmark of issue 4: `analyze` end to end against the plain-Python reference, on one synthetic
`__consumer_offsets`.

    .venv/bin/python bench/analyze.py                      # 5 million records
    .venv/bin/python bench/analyze.py --records 1000000 --records 5000000   # memory vs size

For each size: a sandbox broker in its own process is seeded with about N records (offsetting
synthetic.generate's mix of groups, states, value versions, tombstones and corrupt records with K
commits per offset, in batches of 1-20 records as a coordinator writes them); then, in this process, a
local Spark session starts (timed apart: JVM start-up is excluded from the figures) and the analysis runs
as `kafka-offset-operator analyze` runs it (Kafka describe, snapshot, Spark), twice: the first run also
pays for starting Spark's Python workers and compiling the plan, the second is a warm session as in the
long-running operator. Then the reference reads the same snapshot in one process and analyses it. Both
reports' summaries must agree. Printed: records/s of each, their ratio, and peak memory of the Spark
driver (Python), its JVM, and the reference process.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import resource
import struct
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000
OFFSETS_PARTITIONS = 50
POLICY = {
    "groups": {"exclude": ["simple-1*"]},
    "rules": {
        "emptyGroupRetention": "3d",
        "unsubscribedTopicRetention": "1d",
        "standaloneRetention": "5d",
        "deletedTopics": "Delete",
    },
    "protect": {"groups": ["billing-*"]},
}


# ---- the synthetic topic (built in the broker's process) ----


def _v3_value(offset: int, commit_ms: int) -> bytes:
    """OffsetCommitValue v3 (offset, leaderEpoch -1, metadata "", commitTimestamp), as the codec writes it."""
    return struct.pack(">hqih", 3, offset, -1, 0) + struct.pack(">q", commit_ms)


def records_for(
    target: int, seed: int
) -> tuple[dict[int, list[tuple[bytes, bytes | None, int]]], frozenset[str]]:
    """About `target` records per __consumer_offsets partition: synthetic.generate's groups with each
    offset commit preceded by K-1 older commits of the same key."""
    from kafka_sandbox.synthetic import generate
    from offset_expiry.codec import encode_value

    assert _v3_value(42, 7) == encode_value(
        "OffsetCommit", {"offset": 42, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 7}, 3
    )
    groups = max(10, target // 1200)
    topic = generate(
        seed,
        groups=groups,
        partitions=OFFSETS_PARTITIONS,
        topic_partitions=8,
        commits=1,
        corrupt_fraction=0.0005,
        now_ms=NOW_MS,
    )
    commits = sum(1 for r in topic.records if r.key[:2] == b"\x00\x01" and r.value is not None)
    k = max(1, round((target - len(topic.records)) / max(commits, 1)) + 1)
    out: dict[int, list[tuple[bytes, bytes | None, int]]] = {p: [] for p in range(OFFSETS_PARTITIONS)}
    for r in topic.records:
        rows = out[r.partition]
        if r.key[:2] == b"\x00\x01" and r.value is not None:
            commit_ms = r.timestamp
            if r.value[:2] == b"\x00\x03" and len(r.value) >= 24:  # corrupt records are shorter
                commit_ms = struct.unpack_from(">q", r.value, len(r.value) - 8)[0]
            for i in range(k - 1, 0, -1):
                ts = commit_ms - i * 600_000
                rows.append((r.key, _v3_value(i, ts), ts))
        rows.append((r.key, r.value, r.timestamp))
    return out, topic.existing_topics


def serve_broker(target: int, seed: int, conn: Connection) -> None:
    """The sandbox broker's process: seed, report, serve until told to stop."""
    from kafka_sandbox import SandboxBroker
    from offset_expiry.raw import OFFSETS_TOPIC

    t0 = time.perf_counter()
    per_partition, topics = records_for(target, seed)
    rng = random.Random(seed)
    with SandboxBroker(offsets_retention="7d", offsets_partitions=OFFSETS_PARTITIONS) as broker:
        for name in sorted(topics):
            broker.create_topic(name, 8)

        def seed_partition(partition: int, rows: list[tuple[bytes, bytes | None, int]]) -> None:
            at = 0
            while at < len(rows):
                n = rng.randint(1, 20)  # a coordinator writes a batch per request
                broker.ctx.topics.append_records(OFFSETS_TOPIC, partition, rows[at : at + n])
                at += n

        total = 0
        for partition, rows in per_partition.items():
            broker.call(lambda p=partition, r=rows: seed_partition(p, r))  # type: ignore[misc]
            total += len(rows)
        per_partition.clear()
        conn.send(
            {"bootstrap": broker.bootstrap_servers, "records": total, "seeded_s": time.perf_counter() - t0}
        )
        conn.recv()  # stop


# ---- the reference (its own process, so its memory is its own) ----


def reference_run(bootstrap: str, policy_spec: dict[str, Any], conn: Connection) -> None:
    from offset_expiry.cluster import describe_cluster
    from offset_expiry.fetcher import PartitionFetcher
    from offset_expiry.policy import parse_policy
    from offset_expiry.raw import OFFSETS_TOPIC, RawRecord
    from offset_expiry.reference import analyze_records
    from offset_expiry.source import take_snapshot

    t0 = time.perf_counter()
    cluster = describe_cluster(bootstrap)
    snapshot = take_snapshot(bootstrap)

    def records() -> Iterator[RawRecord]:
        fetcher = PartitionFetcher(bootstrap)
        try:
            for partition, (start, end) in sorted(snapshot.ranges.items()):
                for parsed in fetcher.fetch(OFFSETS_TOPIC, partition, start, end):
                    for offset, ts, key, value in zip(
                        parsed.offsets, parsed.timestamps, parsed.keys, parsed.values, strict=True
                    ):
                        yield RawRecord(partition, offset, ts, key or b"", value)
        finally:
            fetcher.close()

    assert cluster.retention_ms is not None
    report = analyze_records(
        records(),
        parse_policy(policy_spec),
        now_ms=NOW_MS,
        retention_ms=cluster.retention_ms,
        existing_topics=cluster.topics,
        snapshot=snapshot.end_offsets,
    )
    conn.send(
        {
            "seconds": time.perf_counter() - t0,
            "summary": report["summary"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


# ---- measuring this process and its JVM ----


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _jvm_peak_mb() -> float | None:
    """VmHWM of the JVM the local Spark session runs in (a child of this process)."""
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            children = _read(f"/proc/{os.getpid()}/task/{task}/children").split()
        except OSError:
            continue
        for child in children:
            try:
                status = _read(f"/proc/{child}/status")
                cmdline = _read(f"/proc/{child}/cmdline")
            except OSError:
                continue
            if "java" in cmdline:
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
    return None


def run_size(target: int, seed: int, spark: Any, ctx: Any) -> dict[str, Any]:
    from offset_expiry.analysis import AnalysisRequest, run_analysis
    from offset_expiry.policy import parse_policy

    ours, theirs = ctx.Pipe()
    broker = ctx.Process(target=serve_broker, args=(target, seed, theirs), daemon=True)
    broker.start()
    theirs.close()  # so a broker process that dies ends our recv() instead of hanging it
    info = ours.recv()
    print(
        f"  seeded {info['records']:,} records in {info['seeded_s']:.0f}s at {info['bootstrap']}",
        file=sys.stderr,
    )
    try:
        request = AnalysisRequest(info["bootstrap"], parse_policy(POLICY), now_ms=NOW_MS)
        t0 = time.perf_counter()
        analysis = run_analysis(spark, request)
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        analysis = run_analysis(spark, request)  # the same run again: a warm session, as in the operator
        spark_s = time.perf_counter() - t0
        driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        jvm_mb = _jvm_peak_mb()

        ref_ours, ref_theirs = ctx.Pipe()
        ref = ctx.Process(target=reference_run, args=(info["bootstrap"], POLICY, ref_theirs), daemon=True)
        ref.start()
        ref_theirs.close()
        reference = ref_ours.recv()
        ref.join()
    finally:
        ours.send("stop")
        broker.join(timeout=60)
    summary = analysis.report["summary"]
    if summary != reference["summary"]:
        raise SystemExit(
            f"the reports disagree:\n  spark:     {summary}\n  reference: {reference['summary']}"
        )
    scanned = summary["recordsScanned"]
    return {
        "records": scanned,
        "groups": summary["groups"],
        "offsets": summary["offsets"],
        "candidates": summary["candidates"],
        "first_s": first_s,
        "first_rps": scanned / first_s,
        "spark_s": spark_s,
        "spark_rps": scanned / spark_s,
        "reference_s": reference["seconds"],
        "reference_rps": scanned / reference["seconds"],
        "ratio": reference["seconds"] / spark_s,
        "driver_mb": driver_mb,
        "jvm_mb": jvm_mb,
        "reference_mb": reference["peak_rss_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, action="append", help="approximate records (repeatable)")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    sizes = args.records or [5_000_000]

    from offset_expiry.session import local_session

    ctx = mp.get_context("spawn")
    t0 = time.perf_counter()
    spark = local_session("bench-analyze", cores=args.cores)
    spark.range(1).count()
    startup_s = time.perf_counter() - t0
    print(f"Spark local[{args.cores}] session start-up (excluded below): {startup_s:.1f}s", file=sys.stderr)
    rows = []
    for target in sizes:
        print(f"size ~{target:,} records", file=sys.stderr)
        rows.append(run_size(target, args.seed, spark, ctx))
    header = (
        "records",
        "groups",
        "offsets",
        "candidates",
        "first run s",
        "first run rec/s",
        "analyze s",
        "analyze rec/s",
        "reference s",
        "reference rec/s",
        "ratio",
        "driver MB",
        "JVM MB",
        "reference MB",
    )
    print(
        "analyze s / rec/s: a second run on the same data (a warm session, as in the operator); ratio: reference s / analyze s"
    )
    print(" | ".join(header))
    for r in rows:
        print(
            " | ".join(
                [
                    f"{r['records']:,}",
                    f"{r['groups']:,}",
                    f"{r['offsets']:,}",
                    f"{r['candidates']:,}",
                    f"{r['first_s']:.1f}",
                    f"{r['first_rps']:,.0f}",
                    f"{r['spark_s']:.1f}",
                    f"{r['spark_rps']:,.0f}",
                    f"{r['reference_s']:.1f}",
                    f"{r['reference_rps']:,.0f}",
                    f"{r['ratio']:.2f}x",
                    f"{r['driver_mb']:.0f}",
                    f"{r['jvm_mb'] or 0:.0f}",
                    f"{r['reference_mb']:.0f}",
                ]
            )
        )


if __name__ == "__main__":
    main()
