"""Benchmark of issues 4 and 13: `analyze` end to end on three shapes of `__consumer_offsets`, each against
the plain single-process reader.

    .venv/bin/python bench/analyze.py --records 1000000                    # every shape, local[2]
    .venv/bin/python bench/analyze.py --records 5000000 --cores 1 --cores 2 --shape distinct

Shapes (50 partitions, Kafka's default; written in batches of 1-20 records as a coordinator writes them):

- distinct: a big compacted cluster: simple groups x 5 topics x 10 partitions, one OffsetCommit (v3)
  per key, so every record is live; commit times spread over 20 days;
- distinct-v4: the same cluster as Kafka 4.3+ writes it: every value v4 (flexible, with the topic's id);
- history: synthetic.generate's mix (classic, simple, KIP-848, streams, deleted groups, values v0-v4,
  key type 0, tombstones, corrupt records), each offset preceded by K older commits of its key: a few
  survivors per 75 records;
- mixed: half the records from each of the above (the history part with K = 3).

Generated topics are cached under /tmp/offset-expiry-bench (as the batches the broker stores), so a
second run seeds in seconds. The broker (`--broker`, repeatable) is Apache Kafka by default (3.9.2 with
its classic group coordinator: BENCH_KAFKA says why; `--kafka-version` another; a fresh KRaft broker per
shape with 50 `__consumer_offsets` partitions), or the sandbox broker (`--broker sandbox`). Kafka is seeded through its
produce path by tests/support/offsets_seeding.py (which the Spark suites use too): the same v2 batches, one per
partition per Produce request, pipelined, from a client whose id is `__admin_client`, the one id Kafka lets append
to internal topics; the broker validates each batch and assigns offsets, and the records are then read back
through Kafka's fetch path like any others. Kafka's group coordinator does not load records appended behind its back (until the
partition is loaded again), which the analysis never asks it about. The sandbox is seeded in its own
process by appending the batches. For each shape: the broker is seeded; a local
Spark session (started apart: JVM start-up is excluded) runs the analysis as `kafka-offset-operator
analyze -o json --output FILE` runs it (Kafka describe, snapshot, Spark, every row of the report written
to a file), twice: the first run also pays for starting Spark's Python workers, the second is a warm
session as in the long-running operator. Then, in their own processes, the plain reader (kafka-python's
KafkaConsumer, every record decoded in Python into a dict by logical key: what a hand-written tool
does) and the reference (analysis_reference; its summary must equal Spark's). Printed: seconds,
records/s, ratios, CPU seconds (user+sys) beside the wall seconds (Spark: this process and its JVM with its
Python workers; the plain reader: its process; the broker's own CPU while each was read, apart), and peak
memory of the driver (Python), its JVM and the other processes.

The distributed path (issue 22), `--standalone N` (repeatable): the same analysis, first and warm, with its
executors on a Spark standalone cluster of N one-core workers on loopback (tests/support/spark_standalone.py),
its driver in a fresh process per N as a SparkApplication run's is (`--same-driver`: in the bench's process,
after the local sessions, as until 28 Nov), the driver's log at WARN. Printed per run: CPU of the whole tree,
the executors' peak RSS and heap (their `-Xlog:gc` lines), their Python workers' peak, the driver JVM's, the
task results the report stage sent through the block manager (its partitions) and the load average. With
`--standalone-only` the plain reader and the local runs are skipped (at 5M they take many minutes):

    .venv/bin/python bench/analyze.py --records 5000000 --shape distinct --standalone 1 --standalone 2 \
        --standalone-only --standalone-logs /tmp/standalone-logs

`--executor-pod-memory MIB` (repeatable: one row per value and N) puts each executor, its JVM and its Python
workers, under the memory limit its Kubernetes pod would have, in a memory cgroup (v1) of its own: `spark` is
Spark's own pod size for a PySpark executor of `--executor-mb` (heap + max(384 MiB, 0.4 x heap): 1433 MiB for
1024), `operator`
the operator's SparkApplication default for it, a number that many MiB. Printed per executor pod: the most the
kernel charged it, its sampled peak working set and anonymous memory, how often it hit the limit and how many
processes the kernel's OOM killer killed in it (a killed executor is replaced by a new one, in a new cgroup):

    .venv/bin/python bench/analyze.py --records 5000000 --shape distinct --standalone 1 --standalone-only \
        --executor-pod-memory spark --executor-pod-memory operator
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import pickle
import random
import re
import resource
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000
OFFSETS_PARTITIONS = 50
SHAPES = ("distinct", "distinct-v4", "history", "mixed")
CACHE = "/tmp/offset-expiry-bench"
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

Rows = dict[int, list[tuple[bytes, bytes | None, int]]]


# ---- the synthetic topics (built in the broker's process) ----


def _v3_value(offset: int, commit_ms: int) -> bytes:
    """OffsetCommitValue v3 (offset, leaderEpoch -1, metadata "", commitTimestamp), as the codec writes it."""
    return struct.pack(">hqih", 3, offset, -1, 0) + struct.pack(">q", commit_ms)


def _v4_value(offset: int, commit_ms: int, topic_id: bytes) -> bytes:
    """OffsetCommitValue v4, as Kafka 4.3+ writes every commit without an expire time: a compact empty
    metadata string, then one tagged field, the topic's id (tag 0, 16 bytes)."""
    return struct.pack(">hqiB", 4, offset, -1, 1) + struct.pack(">q", commit_ms) + b"\x01\x00\x10" + topic_id


def _key(group: bytes, topic: bytes, partition: int) -> bytes:
    return struct.pack(">hh", 1, len(group)) + group + struct.pack(">h", len(topic)) + topic + struct.pack(">i", partition)


def distinct_records(target: int, seed: int, value_version: int = 3) -> tuple[Rows, frozenset[str]]:
    """Simple groups x 5 topics x 10 partitions, one commit per key, commit times over 20 days; values v3
    (Kafka 3.9 and 4.0) or v4 with the topic id (Kafka 4.3+)."""
    import base64

    from kafka_offsets_model.codec import encode_value, partition_for

    ids = {t: bytes(range(t * 16, t * 16 + 16)) for t in range(5)}
    assert _v4_value(42, 7, ids[1]) == encode_value("OffsetCommit", {
        "offset": 42, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 7,
        "topicId": base64.urlsafe_b64encode(ids[1]).decode().rstrip("=")}, 4)
    rng = random.Random(seed)
    out: Rows = {p: [] for p in range(OFFSETS_PARTITIONS)}
    topics = [f"orders-{t}".encode() for t in range(5)]
    for g in range((target + 49) // 50):
        name = f"app-{g:07d}"
        rows = out[partition_for(name, OFFSETS_PARTITIONS)]
        for t, topic in enumerate(topics):
            for p in range(10):
                ts = NOW_MS - rng.randrange(20 * DAY_MS)
                offset = rng.randrange(1 << 30)
                value = _v3_value(offset, ts) if value_version == 3 else _v4_value(offset, ts, ids[t])
                rows.append((_key(name.encode(), topic, p), value, ts))
    return out, frozenset(t.decode() for t in topics[:4])  # the fifth topic was deleted


def history_records(target: int, seed: int, k: int | None = None) -> tuple[Rows, frozenset[str]]:
    """synthetic.generate's groups with each offset commit preceded by K-1 older commits of the same key."""
    from kafka_offsets_model.codec import encode_value
    from kafka_sandbox.synthetic import generate

    assert _v3_value(42, 7) == encode_value(
        "OffsetCommit", {"offset": 42, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 7}, 3
    )
    groups = max(10, target // (1200 if k is None else 16 * k))
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
    if k is None:
        k = max(1, round((target - len(topic.records)) / max(commits, 1)) + 1)
    out: Rows = {p: [] for p in range(OFFSETS_PARTITIONS)}
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


def shape_records(shape: str, target: int, seed: int) -> tuple[Rows, frozenset[str]]:
    if shape == "distinct":
        return distinct_records(target, seed)
    if shape == "distinct-v4":
        return distinct_records(target, seed, value_version=4)
    if shape == "history":
        return history_records(target, seed)
    a, topics_a = distinct_records(target // 2, seed)
    b, topics_b = history_records(target // 2, seed, k=3)
    return {p: a[p] + b[p] for p in a}, topics_a | topics_b


def cached_batches(shape: str, target: int, seed: int) -> tuple[dict[int, list[bytes]], frozenset[str]]:
    """The topic as the v2 batches the broker stores (1-20 records each), cached under CACHE."""
    from kafka_sandbox.topics import build_batch

    path = os.path.join(CACHE, f"{shape}-{target}-{seed}.pickle")
    if os.path.exists(path):
        with open(path, "rb") as f:
            cached: tuple[dict[int, list[bytes]], frozenset[str]] = pickle.load(f)
            return cached
    per_partition, topics = shape_records(shape, target, seed)
    rng = random.Random(seed)
    batches: dict[int, list[bytes]] = {}
    for partition, rows in per_partition.items():
        out = batches[partition] = []
        at = 0
        while at < len(rows):
            n = rng.randint(1, 20)  # a coordinator writes a batch per request
            out.append(bytes(build_batch(rows[at : at + n])))
            at += n
    os.makedirs(CACHE, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=CACHE)
    with os.fdopen(fd, "wb") as f:
        pickle.dump((batches, topics), f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    return batches, topics


def serve_broker(shape: str, target: int, seed: int, conn: Connection) -> None:
    """The sandbox broker's process: seed, report, serve until told to stop."""
    _tests_support_on_path()
    from offsets_seeding import batch_records

    from kafka_offsets_model.raw import OFFSETS_TOPIC
    from kafka_sandbox import SandboxBroker

    t0 = time.perf_counter()
    batches, topics = cached_batches(shape, target, seed)
    with SandboxBroker(offsets_retention="7d", offsets_partitions=OFFSETS_PARTITIONS) as broker:
        for name in sorted(topics):
            broker.create_topic(name, 8)

        def seed_partition(partition: int, batches: list[bytes]) -> None:
            for batch in batches:
                broker.ctx.topics.append_batch(OFFSETS_TOPIC, partition, bytearray(batch))

        for partition, items in batches.items():
            broker.call(lambda p=partition, b=items: seed_partition(p, b))  # type: ignore[misc]
        seeded = sum(batch_records(b) for items in batches.values() for b in items)
        batches.clear()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        conn.send({"bootstrap": broker.bootstrap_servers, "seeded_s": time.perf_counter() - t0, "seed_records": seeded,
                   "seed_client_cpu_s": usage.ru_utime + usage.ru_stime, "seed_broker_cpu_s": 0.0,
                   "broker_pid": os.getpid(), "startup_s": 0.0, "version": "sandbox"})
        conn.recv()  # stop


# Kafka 3.9 with only the classic protocol runs the classic group coordinator (GroupMetadataManager), which
# reads __consumer_offsets when it loads a partition and otherwise leaves records it did not write alone.
# The coordinator of 4.x (CoordinatorRuntime) follows each partition's high watermark and logs an ERROR,
# "IllegalStateException: New committed offset N of __consumer_offsets-P must be less than or equal to
# <the last offset it wrote>", for batches appended behind its back (seen on 4.4.0: 36,452 lines of errors
# and stack traces for 19,072 batches). The records land and read back the same, but that broker is not
# healthy, so the bench uses 3.9 by default. What is measured is the broker's Fetch of the log, which
# involves no coordinator.
BENCH_KAFKA = "3.9.2"


def serve_real_broker(shape: str, target: int, seed: int, version: str, conn: Connection) -> None:
    """Apache Kafka for one shape (a fresh KRaft broker, 50 __consumer_offsets partitions): start, make the
    topics, seed `__consumer_offsets` through Kafka's produce path, report, serve until told to stop."""
    _tests_support_on_path()
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from offsets_seeding import produce_batches
    from real_kafka import RealKafka

    from kafka_offsets_model.raw import OFFSETS_TOPIC

    batches, topics = cached_batches(shape, target, seed)
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as workdir:
        settings = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}
        if version.startswith("3."):
            settings["group.coordinator.rebalance.protocols"] = "classic"  # the classic coordinator: see main()
        broker = RealKafka(version, settings=settings, workdir=Path(workdir), heap="1g")
        broker.start()
        try:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
            try:
                admin.create_topics([NewTopic(name, 8, 1) for name in sorted(topics)])
                deadline = time.monotonic() + 120  # kafka-python's own wait gives up after 10 s on a busy machine
                while not set(topics) <= set(admin.list_topics()):
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the topics {sorted(topics)} did not appear on Kafka within 120 s")
                    time.sleep(0.2)  # the polling cadence; the deadline decides
            finally:
                admin.close()
            assert broker.pid is not None
            jvm = broker.pid
            cpu0, t0 = proc_cpu_s(jvm), time.perf_counter()
            seeded = produce_batches(broker.bootstrap_servers, OFFSETS_TOPIC, batches).records
            seeded_s, broker_cpu = time.perf_counter() - t0, proc_cpu_s(jvm) - cpu0
            batches.clear()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            conn.send({"bootstrap": broker.bootstrap_servers, "seeded_s": seeded_s, "seed_records": seeded,
                       "seed_client_cpu_s": usage.ru_utime + usage.ru_stime, "seed_broker_cpu_s": broker_cpu,
                       "broker_pid": jvm, "startup_s": broker.startup_seconds, "version": broker.version})
            conn.recv()  # stop
        finally:
            broker.stop()


def _tests_support_on_path() -> None:
    """tests/support on sys.path: the bench reuses the test harness (real Kafka, the reference, the standalone
    cluster), which is not part of the product's wheel."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "support"))


def proc_cpu_s(pid: int) -> float:
    """user+sys seconds of one live process (its reaped children included), from /proc/PID/stat."""
    fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def process_parents() -> dict[int, int]:
    """pid -> parent pid, of every live process."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(_read(f"/proc/{entry}/stat").rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def _children(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every live descendant of `root` (`parents`: process_parents(), read now when not given)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in (process_parents() if parents is None else parents).items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def tree_cpu_s(root: int, exclude: int | None = None) -> float:
    """proc_cpu_s of `root` and every live descendant (a Spark JVM and its Python workers), less the tree
    of `exclude` (the broker, when it is a descendant) if given."""
    skip = {exclude, *_children(exclude)} if exclude is not None else set()
    total = 0.0
    for pid in [root, *_children(root)]:
        if pid in skip:
            continue
        try:
            total += proc_cpu_s(pid)
        except OSError:
            continue
    return total


# ---- the plain reader and the reference (their own processes, so their memory is their own) ----


def plain_reader_run(bootstrap: str, conn: Connection) -> None:
    """What a hand-written tool does: KafkaConsumer over every partition, each record decoded in Python
    (the codec) into a dict by logical key. No verdicts: a lower bound of such a tool's cost."""
    conn.send(plain_read(bootstrap)[0])


def plain_read(bootstrap: str) -> tuple[dict[str, Any], dict[Any, Any]]:
    """plain_reader_run's work: its figures and the state it built (logical key -> live fact, or None for a
    tombstone), for bench/peers.py to derive what a peer must show from."""
    from kafka import KafkaConsumer, TopicPartition

    from kafka_offsets_model.codec import CodecError
    from kafka_offsets_model.raw import OFFSETS_TOPIC
    from offset_expiry.facts import fact_from_record

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime  # the imports above are not the reader's work
    t0 = time.perf_counter()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        max_poll_records=100_000,
        fetch_max_bytes=64 * 1024 * 1024,
        max_partition_fetch_bytes=16 * 1024 * 1024,
    )
    tps = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(consumer.partitions_for_topic(OFFSETS_TOPIC) or ())]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    ends = consumer.end_offsets(tps)
    state: dict[Any, Any] = {}
    records = 0
    remaining = {tp for tp in tps if ends[tp] > 0}
    while remaining:
        for tp, batch in consumer.poll(timeout_ms=1000).items():
            for record in batch:
                records += 1
                try:
                    fact = fact_from_record(record.key or b"", record.value)
                except CodecError:
                    continue
                state[fact.logical_key()] = None if fact.tombstone else fact
            if consumer.position(tp) >= ends[tp]:
                remaining.discard(tp)
    consumer.close()
    live = sum(1 for v in state.values() if v is not None)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "seconds": time.perf_counter() - t0,
        "cpu_s": usage.ru_utime + usage.ru_stime - cpu0,
        "records": records,
        "live": live,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    return figures, state


def reference_run(bootstrap: str, policy_spec: dict[str, Any], conn: Connection) -> None:
    # The reference is a test oracle (tests/support), not part of the product's wheel.
    _tests_support_on_path()
    from analysis_reference import analyze_records

    from kafka_offsets_model.policy import parse_policy
    from kafka_offsets_model.raw import OFFSETS_TOPIC, RawRecord
    from offset_expiry.cluster import describe_cluster
    from offset_expiry.fetcher import PartitionFetcher
    from offset_expiry.source import take_snapshot

    t0 = time.perf_counter()
    cluster = describe_cluster(bootstrap)
    snapshot = take_snapshot(bootstrap)

    def records() -> Iterator[RawRecord]:
        fetcher = PartitionFetcher(bootstrap, topic=OFFSETS_TOPIC)
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


def _in_process(ctx: Any, target: Any, *args: Any) -> dict[str, Any]:
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=target, args=(*args, theirs), daemon=True)
    proc.start()
    theirs.close()
    result: dict[str, Any] = ours.recv()
    proc.join()
    return result


# ---- measuring this process and its JVM ----


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _jvm_pid() -> int | None:
    """The JVM this process's Spark session runs in (spark-submit's; the standalone daemons are children too)."""
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            children = _read(f"/proc/{os.getpid()}/task/{task}/children").split()
        except OSError:
            continue
        for child in children:
            try:
                if "org.apache.spark.deploy.SparkSubmit" in _read(f"/proc/{child}/cmdline"):
                    return int(child)
            except OSError:
                continue
    return None


def _jvm_peak_mb() -> float | None:
    """VmHWM of the JVM the local Spark session runs in."""
    jvm = _jvm_pid()
    if jvm is None:
        return None
    for line in _read(f"/proc/{jvm}/status").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def _rss_mb() -> float:
    for line in _read("/proc/self/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _spark_cpu_s() -> float:
    """CPU seconds of this process (the driver) and its JVM with the JVM's Python workers."""
    jvm = _jvm_pid()
    return _self_cpu_s() + (tree_cpu_s(jvm) if jvm is not None else 0.0)


def standalone_session(master_url: str, workers: int, executor_memory: str, logs: Path) -> Any:
    """A driver in this process on a standalone cluster (tests/support/spark_standalone.py): the session the
    SparkApplication engine's driver gets (1 GB of driver heap, its default too), every worker's core, the
    local session's settings; the driver's log at WARN (a failure says why), GC logs of the driver (in `logs`)
    and of the executors (their stdout in the workers' directories) for the heap figures."""
    from pyspark.sql import SparkSession

    from offset_expiry.session import DEFAULTS

    builder = SparkSession.builder.master(master_url).appName("bench-analyze-standalone")
    settings = {**DEFAULTS, "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": executor_memory, "spark.cores.max": str(workers),
                "spark.sql.shuffle.partitions": str(max(2 * workers, 4)),
                "spark.driver.extraJavaOptions": f"-Xlog:gc:file={logs / 'driver-gc.log'}",
                "spark.executor.extraJavaOptions": "-Xlog:gc:stdout"}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _analyze(spark: Any, bootstrap: str) -> tuple[dict[str, Any], float, int]:
    """One `analyze -o json --output FILE`: seconds, summary, the report's size."""
    from kafka_offsets_model.policy import parse_policy
    from offset_expiry.analysis import AnalysisRequest, run_analysis
    from offset_expiry.output import emit

    request = AnalysisRequest(bootstrap, parse_policy(POLICY), now_ms=NOW_MS)
    out = os.path.join(tempfile.gettempdir(), f"offset-expiry-bench-{os.getpid()}.json")
    t0 = time.perf_counter()
    analysis = run_analysis(spark, request)
    emit(analysis, fmt="json", output=out)
    seconds = time.perf_counter() - t0
    size = os.path.getsize(out)
    os.unlink(out)
    return analysis.report["summary"], seconds, size


def read_stage(bootstrap: str) -> dict[str, float]:
    """The reader's work alone, in this process, one partition at a time as a Spark task does it
    (read, compact, decode): per-task figures for the scaling argument."""
    from kafka_offsets_model.raw import OFFSETS_TOPIC
    from offset_expiry.source import OffsetRange, ReadTask, read_task, take_snapshot

    snapshot = take_snapshot(bootstrap)
    t0 = time.perf_counter()
    rows = 0
    for partition, (start, end) in sorted(snapshot.ranges.items()):
        task = ReadTask((OffsetRange(partition, start, end),))
        for batch in read_task(bootstrap, OFFSETS_TOPIC, task, decode=True):
            rows += batch.num_rows
    seconds = time.perf_counter() - t0
    records = sum(end - start for start, end in snapshot.ranges.values())
    return {"read_s": seconds, "read_rps": records / seconds, "read_rows": rows}


def run_shape(
    shape: str, target: int, seed: int, cores: list[int], ctx: Any, profile: bool, broker_kind: str,
    standalone: list[int] | None = None, executor_mb: int = 1024, standalone_only: bool = False,
    standalone_logs: str | None = None, same_driver: bool = False, pod_memories: list[int | None] | None = None,
) -> list[dict[str, Any]]:
    from offset_expiry.session import local_session

    ours, theirs = ctx.Pipe()
    if broker_kind == "sandbox":
        broker = ctx.Process(target=serve_broker, args=(shape, target, seed, theirs), daemon=True)
    else:
        broker = ctx.Process(target=serve_real_broker, args=(shape, target, seed, broker_kind, theirs), daemon=True)
    broker.start()
    theirs.close()  # so a broker process that dies ends our recv() instead of hanging it
    info = ours.recv()
    bootstrap, broker_pid = info["bootstrap"], info["broker_pid"]
    print(
        f"  {shape} on {info['version']}: {info['seed_records']:,} records seeded in {info['seeded_s']:.1f}s "
        f"(CPU: client {info['seed_client_cpu_s']:.1f}s, broker {info['seed_broker_cpu_s']:.1f}s) at {bootstrap}",
        file=sys.stderr,
    )
    out = []
    try:
        broker_cpu = proc_cpu_s(broker_pid)
        plain: dict[str, Any] = {"seconds": None, "cpu_s": None, "peak_rss_mb": None}
        plain_broker_cpu = None
        if not standalone_only:
            plain = _in_process(ctx, plain_reader_run, bootstrap)
            plain_broker_cpu = proc_cpu_s(broker_pid) - broker_cpu
            print(f"  plain reader {plain['seconds']:.1f}s, CPU {plain['cpu_s']:.1f}s (load {os.getloadavg()[0]:.1f})",
                  file=sys.stderr)
        reference = _in_process(ctx, reference_run, bootstrap, POLICY)
        print(f"  reference {reference['seconds']:.1f}s (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
        stage = read_stage(bootstrap) if profile else {}
        base = {  # what every row of this shape shares: the seeding, the plain reader, the reference
            "broker": info["version"], "shape": shape, "seed_s": info["seeded_s"],
            "seed_cpu_s": info["seed_client_cpu_s"] + info["seed_broker_cpu_s"], "plain_s": plain["seconds"],
            "plain_cpu_s": plain["cpu_s"], "plain_broker_cpu_s": plain_broker_cpu,
            "reference_s": reference["seconds"], "plain_mb": plain["peak_rss_mb"],
        }
        for n in [] if standalone_only else cores:
            t0 = time.perf_counter()
            spark = local_session("bench-analyze", cores=n)
            spark.range(1).count()
            startup_s = time.perf_counter() - t0
            rss_before = _rss_mb()
            load_before = os.getloadavg()[0]
            summary, first_s, _ = _analyze(spark, bootstrap)
            cpu0, broker_cpu = _spark_cpu_s(), proc_cpu_s(broker_pid)
            summary, warm_s, size = _analyze(spark, bootstrap)
            warm_cpu_s, warm_broker_cpu_s = _spark_cpu_s() - cpu0, proc_cpu_s(broker_pid) - broker_cpu
            driver_mb = _rss_mb()
            jvm_mb = _jvm_peak_mb()
            spark.stop()
            if summary != reference["summary"]:
                raise SystemExit(f"the reports disagree:\n  spark:     {summary}\n  reference: {reference['summary']}")
            scanned = summary["recordsScanned"]
            print(f"  local[{n}] start {startup_s:.1f}s first {first_s:.1f}s warm {warm_s:.1f}s, CPU {warm_cpu_s:.1f}s",
                  file=sys.stderr)
            out.append(
                {
                    **base,
                    "cores": n,
                    "records": scanned,
                    "offsets": summary["offsets"],
                    "groups": summary["groups"],
                    "report_mb": size / 1e6,
                    "first_s": first_s,
                    "warm_s": warm_s,
                    "warm_cpu_s": warm_cpu_s,
                    "warm_broker_cpu_s": warm_broker_cpu_s,
                    "driver_mb": driver_mb,
                    "driver_growth_mb": driver_mb - rss_before,
                    "jvm_mb": jvm_mb,
                    "load": f"{load_before:.1f}-{os.getloadavg()[0]:.1f}",
                    **stage,
                }
            )
        for workers in standalone or []:
            for pod_mib in pod_memories or [None]:
                out.append(standalone_run(ctx, workers, bootstrap, broker_pid, base, reference["summary"],
                                          executor_mb, standalone_logs, same_driver, pod_mib))
    finally:
        ours.send("stop")
        broker.join(timeout=90)
    return out


# ---- the distributed path (issue 22): a standalone cluster per run, measured from inside its driver ----


def _status_mb(pid: int, field: str) -> float | None:
    """A /proc/PID/status figure in MB (VmHWM, VmRSS), None once the process is gone."""
    try:
        for line in _read(f"/proc/{pid}/status").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _cmdline(pid: int) -> str:
    try:
        return _read(f"/proc/{pid}/cmdline").replace("\0", " ")
    except OSError:
        return ""


class _Sampler:
    """Every 2 s, in a thread of the driver's process: the 1-minute load average, and the peak memory (VmHWM)
    of every executor JVM below this process and of the executors' Python workers (sampled, as a worker that
    ends takes its peak with it)."""

    def __init__(self, every_s: float = 2.0) -> None:
        import threading

        self.every_s = every_s
        self.loads: list[float] = []
        self.executor_mb: dict[int, float] = {}
        self.python_mb: dict[int, float] = {}
        self.tree_mb: dict[int, float] = {}  # an executor JVM's pid -> most RSS of it and its Python workers at once
        self.pods: Any = None  # the cluster's ExecutorPods (tests/support/spark_standalone.py), when it has a limit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.every_s):
                return

    def sample(self) -> None:
        self.loads.append(os.getloadavg()[0])
        tree = _children(os.getpid())
        for pid in tree:
            if "CoarseGrainedExecutorBackend" in _cmdline(pid):
                self._peak(self.executor_mb, pid)
                rss = _status_mb(pid, "VmRSS") or 0.0
                for worker in _children(pid):
                    if "python" in _cmdline(worker):
                        self._peak(self.python_mb, worker)
                        rss += _status_mb(worker, "VmRSS") or 0.0
                self.tree_mb[pid] = max(rss, self.tree_mb.get(pid, 0.0))
        if self.pods is not None:
            self.pods.sample()

    @staticmethod
    def _peak(peaks: dict[int, float], pid: int) -> None:
        mb = _status_mb(pid, "VmHWM")
        if mb is not None:
            peaks[pid] = max(mb, peaks.get(pid, 0.0))

    def figures(self) -> dict[str, Any]:
        loads = self.loads or [os.getloadavg()[0]]
        return {"load_min": min(loads), "load_max": max(loads), "load_mean": sum(loads) / len(loads),
                "executor_peak_mb": sorted(self.executor_mb.values(), reverse=True),
                "python_peak_mb": max(self.python_mb.values(), default=0.0),
                "executor_tree_peak_mb": sorted(self.tree_mb.values(), reverse=True)}


_GC_PAUSE = re.compile(r"Pause (\w+).*? (\d+)M->(\d+)M\((\d+)M\)")


def gc_figures(path: Path) -> dict[str, float]:
    """From a JVM's `-Xlog:gc` lines: the most heap in use before a collection, the most still in use after
    one (what the JVM had to keep: the figure that must not grow with records), the most committed, and how
    many full collections there were."""
    before = after = committed = 0.0
    full = pauses = 0
    with contextlib.suppress(OSError):
        for match in _GC_PAUSE.finditer(path.read_text(errors="replace")):
            kind, used, kept, heap = match.group(1), *(float(match.group(i)) for i in (2, 3, 4))
            before, after, committed = max(before, used), max(after, kept), max(committed, heap)
            pauses += 1
            full += kind == "Full"
    return {"heap_before_mb": before, "heap_after_mb": after, "heap_committed_mb": committed,
            "gc_pauses": pauses, "full_gcs": full}


_RESULT = re.compile(r"Finished task \S+ in stage (\S+) \(TID \d+\)\. (\d+) bytes result sent via BlockManager")
_TROUBLE = ("ERROR", "OutOfMemoryError", "Lost", "lost", "Exception")


def executor_log_figures(logs: Path) -> dict[str, Any]:
    """What the executors' own logs say (their directories under each worker's work directory): each
    executor's GC figures (stdout), the task results sent through the block manager per stage (the report's
    partitions: write_rows' sort), and the first lines that report trouble."""
    executors = []
    stages: dict[str, list[int]] = {}
    trouble: list[str] = []
    for directory in sorted(d for d in logs.glob("worker-*/app-*/*") if d.is_dir()):
        executors.append(gc_figures(directory / "stdout"))
        with contextlib.suppress(OSError):
            for line in (directory / "stderr").read_text(errors="replace").splitlines():
                found = _RESULT.search(line)
                if found:
                    stages.setdefault(found.group(1), []).append(int(found.group(2)))
                elif any(w in line for w in _TROUBLE) and "RECEIVED SIGNAL TERM" not in line and len(trouble) < 8:
                    trouble.append(f"{directory.relative_to(logs)}: {line[:300]}")
    return {"executors": executors, "result_stages": stages, "executor_trouble": trouble}


def standalone_measure(workers: int, bootstrap: str, broker_pid: int, executor_mb: int, logs: Path,
                       pod_mib: int | None = None) -> dict[str, Any]:
    """One standalone row in this process, which is the driver: a cluster of `workers` one-core workers (logs
    and work directories in `logs`), the analysis first and warm, CPU of this process's tree (driver, its JVM,
    master, workers, executors, their Python workers; the broker apart), memory of the driver's JVM and of
    the executors; `pod_mib`: each executor under that memory limit (its pod's). A failure is a row with its
    `error` (and the logs kept)."""
    _tests_support_on_path()
    from spark_standalone import standalone_cluster

    row: dict[str, Any] = {"workers": workers, "executor_mb": executor_mb, "pod_mib": pod_mib, "logs": str(logs)}
    t0 = time.perf_counter()
    with _Sampler() as sampler:
        try:
            # A worker offers its executor's heap plus Spark's overhead allowance for it (384 MB at least).
            with standalone_cluster(logs, workers=workers, worker_cores=1, worker_memory=f"{executor_mb + 384}m",
                                    pod_memory_mib=pod_mib) as cluster:
                sampler.pods = cluster.pods
                spark = standalone_session(cluster.master_url, workers, f"{executor_mb}m", logs)
                try:
                    spark.range(1).count()
                    row["startup_s"] = time.perf_counter() - t0
                    cpu0 = tree_cpu_s(os.getpid(), exclude=broker_pid)
                    row["summary"], row["first_s"], _ = _analyze(spark, bootstrap)
                    cpu1, broker_cpu = tree_cpu_s(os.getpid(), exclude=broker_pid), proc_cpu_s(broker_pid)
                    row["first_cpu_s"] = cpu1 - cpu0
                    row["summary"], row["warm_s"], row["report_bytes"] = _analyze(spark, bootstrap)
                    row["warm_cpu_s"] = tree_cpu_s(os.getpid(), exclude=broker_pid) - cpu1
                    row["warm_broker_cpu_s"] = proc_cpu_s(broker_pid) - broker_cpu
                    sampler.sample()
                    row["driver_jvm_mb"] = _jvm_peak_mb()
                finally:
                    spark.stop()
                    if cluster.pods is not None:  # before the teardown removes the cgroups
                        sampler.sample()
                        row["pods"] = cluster.pods.figures()
        except Exception as e:  # the row says what failed; the bench goes on with the next one
            row["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
    row.update(sampler.figures())
    row.update(executor_log_figures(logs))
    row["driver_gc"] = gc_figures(logs / "driver-gc.log")
    row["driver_mb"] = _rss_mb()
    with contextlib.suppress(OSError):  # the figures as measured, beside the logs they came from
        (logs / "row.json").write_text(json.dumps(row, indent=1, default=str))
    return row


def standalone_child(workers: int, bootstrap: str, broker_pid: int, executor_mb: int, logs: str,
                     pod_mib: int | None, conn: Connection) -> None:
    """standalone_measure in a process of its own: a fresh driver and driver JVM, as every SparkApplication
    run has."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conn.send(standalone_measure(workers, bootstrap, broker_pid, executor_mb, Path(logs), pod_mib))


def standalone_run(ctx: Any, workers: int, bootstrap: str, broker_pid: int, base: dict[str, Any],
                   expected: dict[str, Any], executor_mb: int, logs_root: str | None,
                   same_driver: bool, pod_mib: int | None = None) -> dict[str, Any]:
    """The same analysis with its executors on a standalone cluster of `workers` one-core workers (issue 22's
    scaling figure), its driver in a fresh process (or, `same_driver`, in the bench's, after its other
    sessions: how the bench ran until 28 Nov). The report's summary must equal the reference's. The logs
    (driver GC, master, workers, executors) are kept under `logs_root` if given, and after a failure."""
    if logs_root is not None:
        os.makedirs(logs_root, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix=f"bench-standalone-x{workers}-", dir=logs_root))
    if same_driver:
        row = standalone_measure(workers, bootstrap, broker_pid, executor_mb, logs, pod_mib)
    else:
        row = _in_process(ctx, standalone_child, workers, bootstrap, broker_pid, executor_mb, str(logs), pod_mib)
    summary = row.pop("summary", None)
    if "error" not in row and summary != expected:
        row["error"] = f"the reports disagree:\n  standalone: {summary}\n  reference:  {expected}"
    if "error" in row or logs_root is not None:
        print(f"  standalone x{workers}: logs kept in {logs}", file=sys.stderr)
    else:
        shutil.rmtree(logs, ignore_errors=True)
    master = f"standalone x{workers}" + (f", {pod_mib} MiB pods" if pod_mib is not None else "")
    row = {**base, **row, "master": master, "records": (summary or {}).get("recordsScanned", 0)}
    print(f"  {_standalone_line(row)}", file=sys.stderr)
    for line in row["executor_trouble"]:
        print(f"    executor log: {line}", file=sys.stderr)
    return row


def _result_stages(row: dict[str, Any]) -> str:
    """The block-manager task results (above 1 MB: the report's partitions, one job each, and a few others) as
    "n x min-max MB", both runs together."""
    sizes = [size for stage in row["result_stages"].values() for size in stage]
    return f"{len(sizes)} x {min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB" if sizes else ""


def _standalone_line(row: dict[str, Any]) -> str:
    executors = row["executors"]
    parts = [
        row["master"], f"{row['executor_mb']} MB executors",
        "FAILED: " + row["error"] if "error" in row else "report equal to the reference",
        f"start {row['startup_s']:.1f}s" if "startup_s" in row else "",
        f"first {row['first_s']:.1f}s (CPU {row['first_cpu_s']:.1f}s)" if "first_cpu_s" in row else "",
        f"warm {row['warm_s']:.1f}s (CPU {row['warm_cpu_s']:.1f}s)" if "warm_cpu_s" in row else "",
        "executor JVM peak RSS " + "/".join(f"{mb:.0f}" for mb in row["executor_peak_mb"]) + " MB",
        "executor heap max before/after GC " + "/".join(
            f"{e['heap_before_mb']:.0f}->{e['heap_after_mb']:.0f}" for e in executors) + " MB",
        "full GCs " + "/".join(str(e["full_gcs"]) for e in executors),
        f"Python worker peak {row['python_peak_mb']:.0f} MB",
        "executor JVM + Python workers' RSS at most " + "/".join(
            f"{mb:.0f}" for mb in row.get("executor_tree_peak_mb", [])) + " MB (sampled every 2 s)",
        f"driver JVM peak RSS {row.get('driver_jvm_mb') or 0:.0f} MB, heap max after GC "
        f"{row['driver_gc']['heap_after_mb']:.0f} MB",
        f"results via block manager: {_result_stages(row) or 'none'}",
        f"load {row['load_min']:.1f}-{row['load_max']:.1f} (mean {row['load_mean']:.1f})",
        f"executors started {len(executors)}",
        *(_pod_figures(pod) for pod in row.get("pods", [])),
    ]
    return ", ".join(p for p in parts if p)


def _pod_figures(pod: dict[str, Any]) -> str:
    """One executor pod's memory: its limit, the most the kernel charged it (page cache included), its sampled
    peak working set and anonymous memory, hits of the limit, OOM kills."""
    return (f"{pod['pod']}: limit {pod['limit_mib']} MiB, charged at most {pod['max_usage_mib']:.0f} MiB, working set "
            f"{pod['working_set_peak_mib']:.0f}, anonymous {pod['rss_peak_mib']:.0f} (sampled), limit hit "
            f"{pod['failcnt']} times, OOM kills {pod['oom_kills']}")


def pod_memory(value: str, heap_mib: int) -> int:
    """--executor-pod-memory's value in MiB: `spark` (Spark's own pod for a PySpark executor of this heap on
    Kubernetes: the heap plus max(384 MiB, 0.4 x heap)), `operator` (the operator's SparkApplication executor
    pod for one core), or a number (the operator's decisions/spark_memory.py says both rules)."""
    from kafka_offset_operator.decisions import spark_memory

    if value == "spark":
        return heap_mib + spark_memory.spark_overhead_mib(heap_mib)
    if value == "operator":
        return spark_memory.executor_pod_mib(f"{heap_mib}m", cores=1)
    if not value.isdigit() or int(value) <= heap_mib:
        raise ValueError(f"--executor-pod-memory: spark, operator or MiB above the heap ({heap_mib}), not {value!r}")
    return int(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, action="append", help="approximate records (repeatable)")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="default: all four")
    parser.add_argument("--cores", type=int, action="append", help="local[N] (repeatable); default 2")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--broker", action="append", choices=("kafka", "sandbox"),
                        help="Apache Kafka (default) or the sandbox broker (repeatable: both, one after the other)")
    parser.add_argument("--kafka-version", default=BENCH_KAFKA,
                        help=f"Kafka's version for --broker kafka (default {BENCH_KAFKA}: see BENCH_KAFKA)")
    parser.add_argument("--profile", action="store_true", help="also time the reader stage alone, in one process")
    parser.add_argument("--standalone", type=int, action="append", metavar="WORKERS",
                        help="also on a Spark standalone cluster of WORKERS one-core workers on loopback "
                             "(repeatable: --standalone 1 --standalone 2 is the scaling figure)")
    parser.add_argument("--executor-mb", type=int, default=1024, metavar="MB",
                        help="each standalone executor's heap (default 1024: 512 ran out of heap on 1M distinct "
                             "records with one executor, docs/performance.md)")
    parser.add_argument("--standalone-only", action="store_true",
                        help="with --standalone: no plain reader and no local[N] runs (the reference still checks "
                             "every report); for 5M records and more, where those take many minutes")
    parser.add_argument("--standalone-logs", metavar="DIR",
                        help="keep each standalone run's logs (driver GC, master, workers, executors' stderr and "
                             "GC) in a directory under DIR; a failed run's are kept anyway")
    parser.add_argument("--executor-pod-memory", action="append", metavar="MIB",
                        help="with --standalone: each executor (JVM and Python workers) under a memory cgroup of "
                             "its pod's limit: spark (Spark's own for --executor-mb), operator (the operator's "
                             "SparkApplication default) or MiB; repeatable, one row each")
    parser.add_argument("--same-driver", action="store_true",
                        help="run the standalone rows in the bench's own process, after its local sessions (one "
                             "driver JVM for all, as until 28 Nov) instead of a fresh process each")
    args = parser.parse_args()
    if args.standalone_only and not args.standalone:
        parser.error("--standalone-only: with --standalone N")
    if args.executor_mb < 256:
        parser.error("--executor-mb: at least 256")
    if any(n < 1 for n in args.standalone or []):
        parser.error("--standalone: a cluster needs at least one worker")
    if args.executor_pod_memory and not args.standalone:
        parser.error("--executor-pod-memory: with --standalone N")
    try:
        pods: list[int | None] = [pod_memory(v, args.executor_mb) for v in args.executor_pod_memory or []]
    except ValueError as e:
        parser.error(str(e))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    kinds = []
    for kind in args.broker or ["kafka"]:
        if kind == "kafka":
            _tests_support_on_path()
            from real_kafka import missing_tools, resolve

            version = args.kafka_version
            if not version.startswith("3."):
                print(f"bench: Kafka {version}'s group coordinator did not write the seeded records and logs an "
                      "IllegalStateException for each batch (see BENCH_KAFKA); reading them is unaffected",
                      file=sys.stderr)
            missing = missing_tools()
            if missing:
                raise SystemExit(f"bench: Apache Kafka cannot run here ({missing}); --broker sandbox runs without it")
            resolve(version)  # Maven, once; nothing when the jars are cached
            kinds.append(version)
        else:
            kinds.append("sandbox")
    ctx = mp.get_context("spawn")
    rows = []
    for target in args.records or [5_000_000]:
        for shape in args.shape or SHAPES:
            for kind in kinds:
                print(f"{shape} ~{target:,} records on {kind} (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                rows.extend(run_shape(shape, target, args.seed, args.cores or [2], ctx, args.profile, kind,
                                      args.standalone, args.executor_mb, args.standalone_only,
                                      args.standalone_logs, args.same_driver, pods or None))
    local_rows = [r for r in rows if "master" not in r]
    distributed = [r for r in rows if "master" in r]
    if local_rows:
        print_local_table(local_rows)
    if distributed:
        print_standalone_table(distributed)
    if any("error" in r for r in distributed):
        raise SystemExit("bench: a standalone run failed (its line above says why; its logs were kept)")


def print_standalone_table(rows: list[dict[str, Any]]) -> None:
    print(
        "standalone: a fresh driver process per row (unless --same-driver); first/warm s (CPU s: driver, its JVM, "
        "master, workers, executors, Python workers); executor: peak RSS and heap most used before -> kept after "
        "a GC (MB) per executor; results: the task results sent through the block manager (both runs)"
    )
    print(" | ".join(("broker", "shape", "master", "records", "report MB", "start s", "first s (CPU)",
                      "warm s (CPU)", "executor RSS MB", "executor heap MB", "Python worker MB", "driver JVM MB",
                      "results", "load", "pods: charged / working set / anonymous MiB, limit hits, OOM kills",
                      "status")))
    for r in rows:
        executors = r["executors"]
        print(" | ".join([
            r["broker"], r["shape"], r["master"], f"{r['records']:,}", f"{r.get('report_bytes', 0) / 1e6:.0f}",
            f"{r['startup_s']:.1f}" if "startup_s" in r else "-",
            f"{r['first_s']:.1f} ({r['first_cpu_s']:.1f})" if "first_cpu_s" in r else "-",
            f"{r['warm_s']:.1f} ({r['warm_cpu_s']:.1f})" if "warm_cpu_s" in r else "-",
            "/".join(f"{mb:.0f}" for mb in r["executor_peak_mb"]) or "-",
            "/".join(f"{e['heap_before_mb']:.0f}->{e['heap_after_mb']:.0f}" for e in executors) or "-",
            f"{r['python_peak_mb']:.0f}",
            f"{r.get('driver_jvm_mb') or 0:.0f}",
            _result_stages(r) or "-",
            f"{r['load_min']:.1f}-{r['load_max']:.1f}",
            "; ".join(f"{p['max_usage_mib']:.0f} / {p['working_set_peak_mib']:.0f} / {p['rss_peak_mib']:.0f}, "
                      f"{p['failcnt']}, {p['oom_kills']}" for p in r.get("pods", [])) or "-",
            "FAILED" if "error" in r else "equal",
        ]))


def print_local_table(rows: list[dict[str, Any]]) -> None:
    print(
        "first/warm: end to end incl. the JSON report file, excl. JVM start; x plain = plain s / warm s; "
        "CPU: user+sys s of the reader's own processes (Spark: driver + JVM + Python workers), "
        "broker CPU apart; driver: this process's RSS after the runs (growth during them)"
    )
    header = ("broker", "shape", "cores", "records", "offsets", "report MB", "seed s (CPU)", "first s", "warm s",
              "warm CPU s", "warm rec/s", "plain s", "plain CPU s", "plain rec/s", "x plain (wall)", "x plain (CPU)",
              "broker CPU s warm/plain", "reference s", "driver MB", "JVM MB", "plain MB", "load")
    print(" | ".join(header))
    for r in rows:
        print(
            " | ".join(
                [
                    r["broker"],
                    r["shape"],
                    r.get("master") or f"local[{r['cores']}]",
                    f"{r['records']:,}",
                    f"{r['offsets']:,}",
                    f"{r['report_mb']:.0f}",
                    f"{r['seed_s']:.1f} ({r['seed_cpu_s']:.1f})",
                    f"{r['first_s']:.1f}",
                    f"{r['warm_s']:.1f}",
                    f"{r['warm_cpu_s']:.1f}",
                    f"{r['records'] / r['warm_s']:,.0f}",
                    f"{r['plain_s']:.1f}",
                    f"{r['plain_cpu_s']:.1f}",
                    f"{r['records'] / r['plain_s']:,.0f}",
                    f"{r['plain_s'] / r['warm_s']:.2f}x",
                    f"{r['plain_cpu_s'] / r['warm_cpu_s']:.2f}x",
                    f"{r['warm_broker_cpu_s']:.1f}/{r['plain_broker_cpu_s']:.1f}",
                    f"{r['reference_s']:.1f}",
                    f"{r['driver_mb']:.0f} (+{r['driver_growth_mb']:.0f})",
                    f"{r['jvm_mb'] or 0:.0f}",
                    f"{r['plain_mb']:.0f}",
                    r["load"],
                ]
            )
        )
        if "read_s" in r:
            print(f"    reader alone, one process: {r['read_s']:.1f}s ({r['read_rps']:,.0f} rec/s) for {r['read_rows']:,} rows")


if __name__ == "__main__":
    main()
