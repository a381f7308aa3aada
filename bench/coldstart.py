"""The fixed cost of a cold analysis, part by part (issue 22): wall and CPU of every process involved.

    .venv/bin/python bench/coldstart.py                    # 3 rounds: CDS archive on, off, on, ... alternating
    .venv/bin/python bench/coldstart.py --rounds 2 --records 20000

Each round is a fresh process (a user's `kafka-offset-operator analyze`, in-process so its parts can be timed)
against a sandbox broker seeded once by this script: import pyspark; start Spark (`local_session`: Spark's
launcher JVM, then the driver JVM and the SparkSession); read the cluster (describe, snapshot); the first
analysis (the first plan, the Python workers' start, the job, the report); the same analysis again (what is
left is the part a kept session does not pay again); stop (the JVM's exit). A sampler reads /proc every
0.1 s for each process under the round's (user+system of each, by kind: the driver's Python, Spark's launcher
JVM, the driver JVM, the Python workers), so CPU is per part and per process; the machine's load is printed
beside. "CDS on" maps the archive (offset_expiry.jvm_cds) that the first round writes if it is missing (that
round is shown as "write"); "off" is KOO_SPARK_CDS=0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOW_MS = 1_700_000_000_000
TICK = os.sysconf("SC_CLK_TCK")
# What a round changes, by name (--variants): the environment of its fresh process.
VARIANTS: dict[str, dict[str, str]] = {
    "cds": {"KOO_SPARK_CDS": "1"},
    "nocds": {"KOO_SPARK_CDS": "0"},
    # The driver JVM with only the C1 compiler and the serial collector (what the test suite sets).
    "c1serial": {"KOO_SPARK_CDS": "1", "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"},
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


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _cpu_s(pid: int, me: int) -> float:
    """The process's user+system, with its reaped children's (a worker daemon's forked workers), except ours:
    the JVM we reap at the end is counted already, as itself."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:13 if pid == me else 15]) / TICK


class Sampler:
    """The last CPU seen per process under us, by kind; a process gone between two samples loses < 0.1 s."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.seen: dict[int, tuple[str, float]] = {}
        self.own_cpu = 0.0  # this sampler thread's CPU (reading /proc), taken off the driver's Python
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            self.sample()
            self.own_cpu = time.thread_time()

    def sample(self) -> None:
        for pid in _descendants(self.me):
            try:
                cpu = _cpu_s(pid, self.me)
            except (OSError, IndexError, ValueError):
                continue
            kind = _kind(pid, self.me)  # again each time: spark-submit's shell execs the JVM in its process
            if kind == "other" and pid in self.seen:
                kind = self.seen[pid][0]
            self.seen[pid] = (kind, cpu)

    def totals(self) -> dict[str, float]:
        self.sample()
        out = dict.fromkeys(KINDS, 0.0)
        for kind, cpu in self.seen.values():
            out[kind] += cpu
        out["driver python"] -= self.own_cpu
        return out


def child(bootstrap: str) -> None:
    """One cold run, in this fresh process; prints its parts as JSON on stdout."""
    sampler = Sampler()
    parts: list[dict[str, Any]] = []
    last = (time.monotonic(), sampler.totals())

    def mark(name: str) -> None:
        nonlocal last
        now, cpu = time.monotonic(), sampler.totals()
        parts.append({"part": name, "wall_s": now - last[0],
                      "cpu": {k: cpu[k] - last[1][k] for k in KINDS}, "load": os.getloadavg()[0]})
        last = (now, cpu)

    import pyspark

    from offset_expiry.analysis import AnalysisRequest, execute, prepare
    from offset_expiry.jvm_cds import locate

    mark("import pyspark")
    from offset_expiry.session import local_session

    plan = locate(pyspark.__version__)
    spark = local_session("coldstart", cores=2)
    mark("start Spark (JVM, session)")
    prepared = prepare(AnalysisRequest(bootstrap, now_ms=NOW_MS))
    mark("read the cluster")
    first = execute(spark, prepared).as_json_report()
    mark("first analysis")
    again = execute(spark, prepared).as_json_report()
    mark("same analysis again")
    assert first["summary"]["recordsScanned"] == again["summary"]["recordsScanned"]
    from pyspark import SparkContext

    gateway = SparkContext._gateway
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
    print(json.dumps({"cds": plan.mode.value, "records": first["summary"]["recordsScanned"], "parts": parts}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="cold runs, cycling through the variants")
    parser.add_argument("--variants", default="cds,nocds", help=f"comma-separated, of {sorted(VARIANTS)}")
    parser.add_argument("--records", type=int, default=20_000, help="about this many records (synthetic mix)")
    parser.add_argument("--child", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    from brokers import sandbox_broker

    from kafka_offsets_model.raw import OFFSETS_TOPIC
    from kafka_sandbox.synthetic import generate

    topic = generate(7, groups=max(1, args.records // 80), partitions=4, commits=2, now_ms=NOW_MS)
    with sandbox_broker(offsets_retention="5d", offsets_partitions=4) as broker:
        for name in sorted(topic.existing_topics):
            broker.create_topic(name, 1)
        for partition in range(4):
            broker.append_records(OFFSETS_TOPIC, partition,
                                  [(r.key, r.value, r.timestamp) for r in topic.records if r.partition == partition])
        results = []
        variants = args.variants.split(",")
        for i in range(args.rounds):
            variant = variants[i % len(variants)]
            env = {**os.environ, **VARIANTS[variant]}
            done = subprocess.run([sys.executable, __file__, "--child", broker.bootstrap_servers],
                                  capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
            result = {"variant": variant, **json.loads(done.stdout.strip().splitlines()[-1])}
            results.append(result)
            _print(result)
    print(json.dumps(results), file=sys.stderr)


def _print(result: dict[str, Any]) -> None:
    print(f"\n{result['variant']} (CDS {result['cds']}), {result['records']:,} records", flush=True)
    print(f"  {'part':30} {'wall':>7} {'CPU':>7}   " + "  ".join(f"{k:>14}" for k in KINDS[:4]) + "   load")
    wall = cpu = 0.0
    for p in result["parts"]:
        total = sum(p["cpu"].values())
        wall, cpu = wall + p["wall_s"], cpu + total
        cols = "  ".join(f"{p['cpu'][k]:>13.1f}s" for k in KINDS[:4])
        print(f"  {p['part']:30} {p['wall_s']:>6.1f}s {total:>6.1f}s   {cols}   {p['load']:.1f}")
    print(f"  {'total':30} {wall:>6.1f}s {cpu:>6.1f}s", flush=True)


if __name__ == "__main__":
    main()
