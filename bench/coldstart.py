"""The fixed cost of a cold analysis, part by part (issue 22): wall and CPU of every process involved.

    .venv/bin/python bench/coldstart.py                    # 3 rounds: CDS archive on, off, on, ... alternating
    .venv/bin/python bench/coldstart.py --rounds 2 --records 20000
    .venv/bin/python bench/coldstart.py --rounds 2 --variants sized,c2g1 --distinct 1000000   # Apache Kafka

Each round is a fresh process (a user's `kafka-offset-operator analyze`, in-process so its parts can be timed)
against a broker seeded once by this script (the sandbox broker with synthetic.generate's mix of about
`--records`, or with `--distinct N` Apache Kafka seeded with bench/analyze.py's `distinct` shape of about N
records): import pyspark; read the cluster (describe, snapshot); start Spark (`local_session` given the
snapshot's size, as the CLI does: Spark's launcher JVM, then the driver JVM and the SparkSession); the first
analysis (the first plan, the Python workers' start, the job, the report); the same analysis again (what is
left is the part a kept session does not pay again); stop (the JVM's exit). A sampler reads /proc every
0.1 s for each process under the round's (user+system of each, by kind: the driver's Python, Spark's launcher
JVM, the driver JVM, the Python workers), so CPU is per part and per process; the machine's load is printed
beside. "CDS on" maps the archive (offset_expiry.jvm_cds) that the first round writes if it is missing (that
round is shown as "write"); "off" is KOO_SPARK_CDS=0. "sized" is the product's own choice of the driver JVM
by the snapshot's size (session.driver_jvm_options); "c2g1" and "c1serial" force the JVM's defaults (both
compilers, G1) and C1 with the serial collector whatever the size. "one cold run" is the total without the
repeated analysis: what a CLI run costs. Also printed: the first analysis' CPU by process (the Python module
each runs; "(fork)": a daemon's forked worker) and each part's driver-JVM CPU by thread group (JVM_THREADS).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import analyze  # noqa: E402  (bench/analyze.py: its /proc process tree, its seeded Apache Kafka; standard library only)

NOW_MS = 1_700_000_000_000
TICK = os.sysconf("SC_CLK_TCK")
# What a round changes, by name (--variants): the environment of its fresh process.
VARIANTS: dict[str, dict[str, str]] = {
    "cds": {"KOO_SPARK_CDS": "1"},
    "nocds": {"KOO_SPARK_CDS": "0"},
    "sized": {"KOO_SPARK_CDS": "1"},  # the same as "cds": the size decides (the name says what is measured)
    # The driver JVM with only the C1 compiler and the serial collector (what the test suite sets).
    "c1serial": {"KOO_SPARK_CDS": "1", "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"},
    # The JVM's own defaults on this machine (both compilers, G1), whatever the size.
    "c2g1": {"KOO_SPARK_CDS": "1", "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=4 -XX:+UseG1GC"},
}
KINDS = ("driver python", "spark launcher", "driver JVM", "python workers", "other")


def _kind(pid: int, me: int) -> str:
    if pid == me:
        return "driver python"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "org.apache.spark.launcher.Main" in cmd:
        return "spark launcher"
    program = cmd.split(" ", 1)[0]
    if program.endswith("/java") or program == "java":
        return "driver JVM"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "python workers"
    return "other"


def _cpu_s(pid: int) -> tuple[float, float]:
    """The process's own user+system, and its reaped children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:13]) / TICK, sum(int(f) for f in fields[13:15]) / TICK


def _label(pid: int, parent: int) -> str:
    """A process by its command: the Python module it runs (`-m`), "(fork)" when forked from its parent."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        forked = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0") == cmd
    except OSError:
        return "?"
    words = [w.decode(errors="replace") for w in cmd if w]
    name = words[words.index("-m") + 1] if "-m" in words[:-1] else " ".join(words)[:60]
    return f"{name} (fork)" if forked else name


# The driver JVM's threads by what they do (their names, /proc/PID/task/TID/comm): CPU per group splits the
# JVM's part into compiling (the JIT compilers), collecting (the collector's threads and the VM thread, which
# runs the serial collector's pauses) and the rest (Spark's own threads: tasks, scheduler, codegen's Janino).
JVM_THREADS = (("C2 compiler", ("C2 CompilerThre",)), ("C1 compiler", ("C1 CompilerThre",)),
               ("GC", ("GC Thread", "G1 ", "VM Thread")))


def jvm_threads_cpu(pid: int) -> dict[str, float]:
    out = dict.fromkeys([name for name, _ in JVM_THREADS] + ["other threads"], 0.0)
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        group = next((g for g, prefixes in JVM_THREADS if name.startswith(prefixes)), "other threads")
        out[group] += (int(fields[11]) + int(fields[12])) / TICK
    return out


class Sampler:
    """The last CPU seen per process under us, by kind. A process that exited is counted at its last sample
    (< 0.1 s lost) and taken off its parent's reaped-children CPU, so that nothing is counted twice (a worker
    daemon reaps its forked workers, we reap the JVM)."""

    def __init__(self) -> None:
        self.me = os.getpid()
        # pid -> (kind, label, parent, own CPU, reaped children's CPU)
        self.seen: dict[int, tuple[str, str, int, float, float]] = {}
        self.alive: set[int] = set()
        self.own_cpu = 0.0  # this sampler thread's CPU (reading /proc), taken off the driver's Python
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            self.sample()
            self.own_cpu = time.thread_time()

    def sample(self) -> None:
        parents = analyze.process_parents()
        alive = set()
        for pid in [self.me, *analyze._children(self.me, parents)]:
            try:
                own, reaped = _cpu_s(pid)
            except (OSError, IndexError, ValueError):
                continue
            alive.add(pid)
            kind = _kind(pid, self.me)  # again each time: spark-submit's shell execs the JVM in its process
            label = _label(pid, parents[pid])
            if kind == "other" and pid in self.seen:
                kind = self.seen[pid][0]
            if label == "?" and pid in self.seen:
                label = self.seen[pid][1]
            self.seen[pid] = (kind, label, parents[pid], own, reaped)
        self.alive = alive

    def per_process(self) -> dict[int, tuple[str, str, float]]:
        """pid -> (kind, label, CPU), each process's CPU counted once."""
        self.sample()
        dead_cpu: dict[int, float] = {}
        for pid, (_, _, parent, own, reaped) in self.seen.items():
            if pid not in self.alive:
                dead_cpu[parent] = dead_cpu.get(parent, 0.0) + own + reaped
        out = {}
        for pid, (kind, label, _, own, reaped) in self.seen.items():
            cpu = own + max(0.0, reaped - dead_cpu.get(pid, 0.0))
            if pid == self.me:
                cpu -= self.own_cpu
            out[pid] = (kind, label, cpu)
        return out

    def totals(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for kind, _, cpu in self.per_process().values():
            out[kind] += cpu
        return out


def _driver_jvm_threads() -> dict[str, float]:
    """jvm_threads_cpu of the driver JVM, once it runs (live threads only: one that ended is not counted)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    return jvm_threads_cpu(proc.pid) if proc is not None and proc.poll() is None else {}


def child(bootstrap: str) -> None:
    """One cold run, in this fresh process; prints its parts as JSON on stdout."""
    sampler = Sampler()
    parts: list[dict[str, Any]] = []
    last = (time.monotonic(), sampler.per_process())

    def mark(name: str) -> None:
        """A part's wall and CPU: by kind, and by process (label -> [processes that ran, CPU])."""
        nonlocal last
        now, procs = time.monotonic(), sampler.per_process()
        cpu = dict.fromkeys(KINDS, 0.0)
        by_label: dict[str, list[float]] = {}
        for pid, (kind, label, total) in procs.items():
            delta = total - (last[1][pid][2] if pid in last[1] else 0.0)
            cpu[kind] += delta
            if delta > 0.005:
                entry = by_label.setdefault(label, [0, 0.0])
                entry[0] += 1
                entry[1] += delta
        threads = _driver_jvm_threads()
        parts.append({"part": name, "wall_s": now - last[0], "cpu": cpu, "processes": by_label,
                      "jvm_threads": {k: v - last_threads.get(k, 0.0) for k, v in threads.items()},
                      "load": os.getloadavg()[0]})
        last = (now, procs)
        last_threads.clear()
        last_threads.update(threads)

    last_threads: dict[str, float] = {}

    import pyspark

    from offset_expiry.analysis import AnalysisRequest, execute, prepare
    from offset_expiry.jvm_cds import locate

    mark("import pyspark")
    from offset_expiry.session import local_session

    plan = locate(pyspark.__version__)
    prepared = prepare(AnalysisRequest(bootstrap, now_ms=NOW_MS))
    mark("read the cluster")
    spark = local_session("coldstart", cores=2, records=prepared.snapshot.records)
    mark("start Spark (JVM, session)")
    first = execute(spark, prepared).as_json_report()
    mark("first analysis")
    again = execute(spark, prepared).as_json_report()
    mark("same analysis again")
    assert first["summary"]["recordsScanned"] == again["summary"]["recordsScanned"]
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    jvm_cmdline = Path(f"/proc/{gateway.proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    spark.stop()
    if gateway is not None:  # the JVM exits as a user's process would (and writes its archive, if it does)
        proc = gateway.proc
        gateway.shutdown()
        proc.stdin.close()
        proc.wait(timeout=900)
    mark("stop (JVM exit)")
    from offset_expiry.jvm_cds import finish

    finish(plan)
    sampler.stop.set()
    # What the driver JVM really runs with: its command line's compiler and collector options.
    # (its JVM options: the words before the main class; spark-submit's --conf arguments repeat them).
    options = jvm_cmdline.split(" org.apache.spark.deploy.SparkSubmit ", 1)[0]
    flags = [f for f in options.split() if "Tiered" in f or f.endswith("GC")]
    jvm = " ".join(flags) or "JVM defaults"
    print(json.dumps({"cds": plan.mode.value, "records": first["summary"]["recordsScanned"], "parts": parts,
                      "jvm": jvm}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="cold runs, cycling through the variants")
    parser.add_argument("--variants", default="cds,nocds", help=f"comma-separated, of {sorted(VARIANTS)}")
    parser.add_argument("--records", type=int, default=20_000, help="about this many records (synthetic mix)")
    parser.add_argument("--distinct", type=int, metavar="N",
                        help="Apache Kafka seeded with bench/analyze.py's distinct shape of about N records instead")
    parser.add_argument("--child", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    with _seeded_kafka(args.distinct) if args.distinct else _seeded_sandbox(args.records) as bootstrap:
        results = []
        variants = args.variants.split(",")
        for i in range(args.rounds):
            variant = variants[i % len(variants)]
            env = {**os.environ, **VARIANTS[variant]}
            done = subprocess.run([sys.executable, __file__, "--child", bootstrap],
                                  capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
            result = {"variant": variant, **json.loads(done.stdout.strip().splitlines()[-1])}
            results.append(result)
            _print(result)
    print(json.dumps(results), file=sys.stderr)


@contextlib.contextmanager
def _seeded_sandbox(records: int) -> Iterator[str]:
    from brokers import sandbox_broker

    from kafka_offsets_model.raw import OFFSETS_TOPIC
    from kafka_sandbox.synthetic import generate

    topic = generate(7, groups=max(1, records // 80), partitions=4, commits=2, now_ms=NOW_MS)
    with sandbox_broker(offsets_retention="5d", offsets_partitions=4) as broker:
        for name in sorted(topic.existing_topics):
            broker.create_topic(name, 1)
        for partition in range(4):
            broker.append_records(OFFSETS_TOPIC, partition,
                                  [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition])
        yield broker.bootstrap_servers


@contextlib.contextmanager
def _seeded_kafka(records: int) -> Iterator[str]:
    """bench/analyze.py's Apache Kafka (its default version) with its distinct shape, in a process of its own."""
    ours, theirs = mp.get_context("spawn").Pipe()
    broker = mp.get_context("spawn").Process(
        target=analyze.serve_real_broker, args=("distinct", records, 4, analyze.BENCH_KAFKA, theirs), daemon=True)
    broker.start()
    theirs.close()
    info = ours.recv()
    print(f"{info['seed_records']:,} records on Kafka {info['version']} at {info['bootstrap']}", file=sys.stderr)
    try:
        yield info["bootstrap"]
    finally:
        ours.send("stop")
        broker.join(timeout=120)


def _print(result: dict[str, Any]) -> None:
    print(f"\n{result['variant']} (CDS {result['cds']}, driver JVM: {result['jvm']}), {result['records']:,} records",
          flush=True)
    print(f"  {'part':30} {'wall':>7} {'CPU':>7}   " + "  ".join(f"{k:>14}" for k in KINDS[:4]) + "   load")
    wall = cpu = 0.0
    for p in result["parts"]:
        total = sum(p["cpu"].values())
        wall, cpu = wall + p["wall_s"], cpu + total
        cols = "  ".join(f"{p['cpu'][k]:>13.1f}s" for k in KINDS[:4])
        print(f"  {p['part']:30} {p['wall_s']:>6.1f}s {total:>6.1f}s   {cols}   {p['load']:.1f}")
    print(f"  {'total':30} {wall:>6.1f}s {cpu:>6.1f}s", flush=True)
    for p in result["parts"]:
        if p.get("jvm_threads") and p["part"] != "stop (JVM exit)":
            print(f"  {p['part']}: driver JVM threads " + ", ".join(
                f"{k} {v:.1f}s" for k, v in p["jvm_threads"].items()))
    for p in result["parts"]:
        if p["part"] == "first analysis":
            print("  first analysis by process (processes that ran, CPU):")
            for label, (n, seconds) in sorted(p["processes"].items(), key=lambda kv: -kv[1][1]):
                print(f"    {seconds:6.2f}s  {n} x {label}")
    again = next(p for p in result["parts"] if p["part"] == "same analysis again")
    print(f"  {'one cold run (without again)':30} {wall - again['wall_s']:>6.1f}s "
          f"{cpu - sum(again['cpu'].values()):>6.1f}s", flush=True)


if __name__ == "__main__":
    main()
