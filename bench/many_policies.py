"""Benchmark of issue 12: a hundred policies on one cluster, one shared scan of `__consumer_offsets` against
one scan per policy.

    PYTHONPATH=... .venv/bin/python bench/many_policies.py                 # 100 policies, 1,000 deletions, 10,000 groups
    PYTHONPATH=... .venv/bin/python bench/many_policies.py --quick         # 10 / 100 / 1,000
    PYTHONPATH=... .venv/bin/python bench/many_policies.py --kafka-concurrency 2 --kafka-concurrency 16
    PYTHONPATH=... .venv/bin/python bench/many_policies.py --quick --api both   # emulated and real API, side by side

The sandbox broker holds G simple groups `team-NNN-gMMMMM` (two offsets each on one topic), D of them
committed three days ago (candidates of the policies' `standaloneRetention: 1d`), the rest just now. The
broker, the emulated Kubernetes API and the operator (`kafka-offset-operator run`, as
tests/integration/operator/operator_process.py starts it, Local engine) each run in their own process, so
neither the bench's polling nor the broker competes with the API for one interpreter's GIL (the broker counts
requests by API for the bench, over a pipe). `BENCH_PROFILE_API=FILE` writes a cProfile of the API's event
loop. P policies
in Auto mode, policy i selecting `team-i-*`, are created at once; each proposes its groups' stale offsets
as OffsetDeletions (D in all), which the operator backs up and deletes.

Each configuration runs on a freshly seeded broker and a fresh operator:

- shared: `--scan-share-window W` (the policies due together share one scan);
- separate: `--scan-share-window off` (each policy scans alone, one at a time: the behaviour before issue
  12), on `--separate-policies` of the policies (default: all; a full-size run of 100 separate scans takes
  most of an hour on a loaded 2-core machine, so a smaller number is measured and the per-scan figures
  extrapolated, and the output says so).

Printed per configuration: scans of `__consumer_offsets` for one interval (the operator's
kafka_offset_operator_analysis_scans_total; a warm-up policy first pays for Spark's start, outside the
figures), the time until every policy has run, the time until every
OffsetDeletion has settled, the peak memory (RSS) of the operator's process tree (operator, Spark worker,
its JVM and Python workers) sampled every 0.5 s, and the Kafka requests the broker answered (counted by
API) with the request rate while OffsetDeletions run. Then the ratios. No timed assertions: figures only.

`--api`: the Kubernetes API the operator talks to: kmock's emulator (`emulated`, the default: no Go
toolchain needed), the real kube-apiserver with etcd and kube-controller-manager (`real`,
tests/support/kube_cluster.py; the install applied, a fresh namespace per configuration, the operator with
the installed ServiceAccount's token), or `both`, each configuration once per API. Beside wall times it
prints the CPU time (user+sys) of the operator's process tree and of the API's processes (the emulator's
process; etcd, kube-apiserver and kube-controller-manager), since wall time on a machine shared with other
work says little alone.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in ("tests/support", "tests/integration/operator"):
    if str(ROOT / extra) not in sys.path:
        sys.path.insert(0, str(ROOT / extra))

DAY_MS = 86_400_000
TOPIC = "events"
TOPIC_PARTITIONS = 2
COUNTED_APIS = ("OffsetDelete", "OffsetFetch", "DescribeGroups", "FindCoordinator", "Metadata", "Fetch",
                "ListOffsets", "DescribeConfigs", "ApiVersions", "OffsetCommit")
SETTLED = ("Succeeded", "PartiallyFailed", "Failed")


@dataclass
class Sizes:
    policies: int
    deletions: int
    groups: int


@dataclass
class Figures:
    label: str
    policies: int
    scans: float = 0.0
    analysed_s: float = 0.0  # until every policy has a lastRun
    settled_s: float = 0.0  # until every OffsetDeletion has settled
    deletions: int = 0
    peak_rss_mb: float = 0.0
    requests: dict[str, int] = field(default_factory=dict)
    deleting_s: float = 0.0  # from the first OffsetDeletion created to the last settled
    requests_deleting: dict[str, int] = field(default_factory=dict)  # from the first OffsetDeletion on
    phases: dict[str, int] = field(default_factory=dict)
    with_results: int = 0
    load_before: float = 0.0
    load_after: float = 0.0
    operator_cpu_s: float = 0.0  # user+sys of the operator's process tree, from the policies' creation to the end
    api_cpu_s: float = 0.0  # user+sys of the API's processes over the same span

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


def group_name(team: int, index: int) -> str:
    return f"team-{team:03d}-g{index:05d}"


def seed(broker: Any, sizes: Sizes) -> None:
    """G simple groups, spread round-robin over the P teams; the first D (by index) committed 3 days ago."""
    from brokers import make_topics

    from kafka_offsets_model.codec import offset_commit

    make_topics(broker, {TOPIC: TOPIC_PARTITIONS}, records_per_partition=10)
    now = broker.clock.now_ms()
    old = now - 3 * DAY_MS
    batch: list[tuple[bytes, bytes | None, int]] = []
    for i in range(sizes.groups):
        stamp = old if i < sizes.deletions else now
        group = group_name(i % sizes.policies, i)
        for p in range(TOPIC_PARTITIONS):
            key, value = offset_commit(group, TOPIC, p, offset=1 + p, commit_timestamp=stamp)
            batch.append((key, value, stamp))
        if len(batch) >= 20_000:
            broker.append_offsets_records(batch)
            batch = []
    if batch:
        broker.append_offsets_records(batch)


def policy(index: int, bootstrap: str, namespace: str) -> dict[str, Any]:
    from operator_harness import GROUP_VERSION

    return {
        "apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
        "metadata": {"name": f"team-{index:03d}", "namespace": namespace},
        "spec": {"kafka": {"bootstrapServers": bootstrap}, "mode": "Auto",
                 "schedule": {"interval": "24h"}, "analysis": {"brokerRetention": "7d"},
                 "groups": {"include": [f"team-{index:03d}-*"]}, "rules": {"standaloneRetention": "1d"},
                 "history": {"finishedDeletionsLimit": 1000}},
    }


def _proc_table(rss: bool = False) -> tuple[dict[int, list[str]], dict[int, list[int]], dict[int, int]]:
    """Every live process from /proc: its stat fields after the command name, its children (by parent pid)
    and, with `rss`, its resident bytes. Processes that exit while being read are left out."""
    page = os.sysconf("SC_PAGE_SIZE")
    stats: dict[int, list[str]] = {}
    children: dict[int, list[int]] = {}
    resident: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            if rss:
                with open(f"/proc/{entry}/statm") as f:
                    resident[int(entry)] = int(f.read().split()[1]) * page
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    return stats, children, resident


def cpu_s(pids: list[int], tree: bool = True) -> float:
    """User+sys CPU seconds of processes (and, with `tree`, their live descendants and reaped children),
    from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    stats, children, _ = _proc_table()
    total, todo, seen = 0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        fields = stats[pid]
        total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        if tree:
            todo.extend(children.get(pid, []))
    return total / tick


def tree_rss_mb(pid: int) -> float:
    """RSS of a process and all its descendants, from /proc."""
    _, children, rss = _proc_table(rss=True)
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total / 2**20


class PeakSampler:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, tree_rss_mb(self.pid))

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def metric(port: int, name: str, labels: str = "") -> float:
    """The sum of a metric's samples (whose labels contain `labels`) on the operator's /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as rsp:
            text = rsp.read().decode()
    except OSError:
        return 0.0
    found = re.findall(rf"^{name}(?:{{([^}}]*)}})? ([0-9.e+]+)$", text, re.M)
    return sum(float(v) for ls, v in found if labels in ls)


def serve_broker(conn: Connection, sizes: Sizes) -> None:
    """The sandbox broker in its own process (so neither the bench nor the emulated API competes with it for a
    GIL): seeded, then answering the bench's commands on `conn`: "count" starts counting requests by API,
    "counts" sends the counts, "stop" ends it."""
    from brokers import sandbox_broker

    with sandbox_broker(offsets_partitions=50) as broker:
        started = time.monotonic()
        seed(broker, sizes)
        conn.send((broker.bootstrap_servers, time.monotonic() - started))
        faults: dict[str, Any] = {}
        while True:
            command = conn.recv()
            if command == "count":
                for api in COUNTED_APIS:
                    try:
                        faults[api] = broker.faults.count(api)
                    except (KeyError, ValueError):
                        continue
                conn.send(True)
            elif command == "counts":
                conn.send({api: f.hits for api, f in faults.items()})
            else:
                broker.faults.clear()
                conn.send(True)
                return


def serve_api(conn: Connection, kubeconfig: str) -> None:
    """The emulated Kubernetes API in its own process; writes `kubeconfig`, sends its URL, stops on "stop"
    (answering with the requests it failed, which must be none)."""
    from operator_harness import EmulatedCluster

    cluster = EmulatedCluster().start()
    profile_to = os.environ.get("BENCH_PROFILE_API")  # a file: cProfile of the API's event loop thread
    profiler = None
    if profile_to:
        import cProfile

        profiler = cProfile.Profile()
        cluster._loop.call_soon_threadsafe(profiler.enable)
    try:
        cluster.write_kubeconfig(Path(kubeconfig))
        conn.send(cluster.url)
        conn.recv()
        conn.send([repr(e) for e in cluster.server_errors()])
    finally:
        if profiler is not None:
            done = threading.Event()

            def dump() -> None:
                profiler.disable()
                profiler.dump_stats(str(profile_to))
                done.set()

            cluster._loop.call_soon_threadsafe(dump)
            done.wait(30)
        cluster.stop()


@contextmanager
def child(target: Any, *args: Any) -> Iterator[tuple[Connection, mp.process.BaseProcess]]:
    """A bench server (`serve_broker`, `serve_api`) in a fresh interpreter, with the pipe to command it."""
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=target, args=(theirs, *args), daemon=True)
    proc.start()
    try:
        yield ours, proc
    finally:
        with contextlib.suppress(OSError, EOFError):
            if proc.is_alive():
                ours.send("stop")
                if ours.poll(30):
                    ours.recv()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()


@dataclass
class ApiUnderTest:
    """Where the operator's Kubernetes API is: an admin client in the bench's namespace, the operator's
    kubeconfig, and the processes that serve it (for their CPU time)."""

    kube: Any
    kubeconfig: Path
    namespace: str
    pids: list[int]


@contextmanager
def emulated_api(tmp: Path) -> Iterator[ApiUnderTest]:
    """The emulated API in its own process (the operator's kubeconfig is admin's: the emulator has no RBAC)."""
    from operator_harness import NAMESPACE, Kube

    with child(serve_api, str(tmp / "kubeconfig")) as (api, proc):
        assert proc.pid is not None
        yield ApiUnderTest(Kube(api.recv()), tmp / "kubeconfig", NAMESPACE, [proc.pid])


@contextmanager
def real_api(plane: Any, tmp: Path) -> Iterator[ApiUnderTest]:
    """A fresh namespace on the real API server (the install applied), the installed ServiceAccount's token,
    and the operator's user name as the Deployment gives it (KAFKA_OFFSET_OPERATOR_USER): without it the
    install's admission policy refuses Auto's approved proposals (403: approvedBy must be the user)."""
    from installed_api import OPERATOR_USER, installed_api

    before = os.environ.get("KAFKA_OFFSET_OPERATOR_USER")
    os.environ["KAFKA_OFFSET_OPERATOR_USER"] = OPERATOR_USER  # read by the operator process started next
    try:
        with installed_api(plane, tmp) as api:
            yield ApiUnderTest(api.kube, api.token_kubeconfig, api.namespace, [p.pid for p in plane.procs.values()])
    finally:
        if before is None:
            os.environ.pop("KAFKA_OFFSET_OPERATOR_USER", None)
        else:
            os.environ["KAFKA_OFFSET_OPERATOR_USER"] = before


def run_one(label: str, sizes: Sizes, running: int, window: str, concurrency: int, timeout: float,
            keep_logs: Path | None = None, plane: Any = None) -> Figures:
    """One configuration on a fresh broker, API (or, with `plane`, a fresh namespace of the real API server) and
    operator; `running`: how many of the policies are created."""
    from operator_harness import GROUP_VERSION
    from operator_process import OperatorProcess

    figures = Figures(label, running)
    figures.load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, child(serve_broker, sizes) as (broker, _), \
            (emulated_api(Path(tmp)) if plane is None else real_api(plane, Path(tmp))) as api:
        bootstrap, seeded_s = broker.recv()
        print(f"  [{label}] seeded {sizes.groups:,} groups in {seeded_s:.1f}s", flush=True)
        kube = api.kube
        op = OperatorProcess(api.kubeconfig, Path(tmp), "--scan-share-window", window, "--kafka-concurrency",
                             str(concurrency), retry_interval=2.0, namespace=api.namespace)
        try:
            with op, PeakSampler(op.proc.pid) as sampler:
                # Spark's start (JVM, Python workers) is paid once per operator: by a warm-up policy that
                # selects no group, before the clock starts; its scan is not counted.
                warm = policy(sizes.policies, bootstrap, api.namespace)
                warm["metadata"]["name"] = "warm-up"
                warm["spec"].update(mode="DryRun", groups={"include": ["no-such-group"]})
                kube.create("consumergroupoffsetpolicies", warm)
                warm_deadline = time.monotonic() + timeout
                while not (kube.get(GROUP_VERSION, "consumergroupoffsetpolicies", "warm-up").get("status") or {}).get(
                        "lastRun") and time.monotonic() < warm_deadline:
                    time.sleep(1.0)
                kube.delete(GROUP_VERSION, "consumergroupoffsetpolicies", "warm-up")
                warm_scans = metric(op.metrics, "kafka_offset_operator_analysis_scans_total")
                warm_runs = metric(op.metrics, "kafka_offset_operator_analysis_runs_total", 'outcome="Succeeded"')
                print(f"  [{label}] operator warm ({warm_scans:.0f} warm-up scan)", flush=True)
                broker.send("count")
                broker.recv()
                cpu_before = cpu_s([op.proc.pid]), cpu_s(api.pids, tree=False)
                t0 = time.monotonic()
                for i in range(running):
                    kube.create("consumergroupoffsetpolicies", policy(i, bootstrap, api.namespace))
                expected = sum(1 for i in range(sizes.deletions) if i % sizes.policies < running)
                first_deletion = None
                requests_at_first: dict[str, int] = {}
                last_print = 0.0
                while True:
                    elapsed = time.monotonic() - t0
                    if elapsed > timeout:
                        print(f"  [{label}] timed out after {timeout:.0f}s", flush=True)
                        break
                    # Progress from the operator's own metrics (a list of a thousand objects every two seconds
                    # would be most of the API's load).
                    ran = metric(op.metrics, "kafka_offset_operator_analysis_runs_total", 'outcome="Succeeded"') - warm_runs
                    if ran >= running and not figures.analysed_s:
                        figures.analysed_s = elapsed
                    created = metric(op.metrics, "kafka_offset_operator_policy_deletions_created_total")
                    settled = metric(op.metrics, "kafka_offset_operator_offset_deletions_total")
                    if created and first_deletion is None:
                        first_deletion = elapsed
                        broker.send("counts")
                        requests_at_first = broker.recv()
                    figures.deletions = int(settled)
                    if elapsed - last_print >= 30:
                        last_print = elapsed
                        print(f"  [{label}] {elapsed:.0f}s: {ran:.0f} runs, {created:.0f} OffsetDeletions created, "
                              f"{settled:.0f} settled; load {os.getloadavg()[0]:.1f}", flush=True)
                    if figures.analysed_s and created >= expected and settled >= created:
                        figures.settled_s = elapsed
                        figures.deleting_s = elapsed - (first_deletion or 0.0)
                        break
                    time.sleep(2.0)
                broker.send("counts")
                figures.requests = broker.recv()
                figures.requests_deleting = {k: v - requests_at_first.get(k, 0) for k, v in figures.requests.items()}
                figures.scans = metric(op.metrics, "kafka_offset_operator_analysis_scans_total") - warm_scans
                figures.peak_rss_mb = max(sampler.peak, tree_rss_mb(op.proc.pid))
                figures.operator_cpu_s = cpu_s([op.proc.pid]) - cpu_before[0]
                figures.api_cpu_s = cpu_s(api.pids, tree=False) - cpu_before[1]
                figures.load_after = os.getloadavg()[0]
                figures.phases, figures.with_results = check_objects(kube, "offsetdeletions")
                print(f"  [{label}] OffsetDeletions by phase (from the API): "
                      + ", ".join(f"{k} {v}" for k, v in sorted(figures.phases.items()))
                      + f"; {figures.with_results} settled with per-partition results (of {expected} expected)",
                      flush=True)
        finally:
            if keep_logs is not None:
                keep_logs.mkdir(parents=True, exist_ok=True)
                target = keep_logs / (re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") + ".log")
                with contextlib.suppress(OSError):
                    shutil.copyfile(op.log_path, target)
                    print(f"  [{label}] operator log: {target}", flush=True)
    return figures


def check_objects(kube: Any, plural: str) -> tuple[dict[str, int], int]:
    """Every OffsetDeletion's phase, and how many settled ones carry per-partition results (read once, at the
    end, from the API)."""
    from operator_harness import GROUP_VERSION

    phases: dict[str, int] = {}
    with_results = 0
    for obj in kube.list(GROUP_VERSION, plural):
        status = obj.get("status") or {}
        phase = status.get("phase") or "(none)"
        phases[phase] = phases.get(phase, 0) + 1
        if phase in SETTLED and status.get("results"):
            with_results += 1
    return phases, with_results


def report(f: Figures) -> None:
    group_apis = ("OffsetDelete", "OffsetFetch", "DescribeGroups")
    rate = sum(f.requests_deleting.get(k, 0) for k in group_apis)
    deleting = sum(f.requests_deleting.values())
    print(f"  {f.label}: {f.policies} policies, {f.scans:.0f} scans, every policy run after {f.analysed_s:.1f}s, "
          f"{f.deletions} OffsetDeletions settled after {f.settled_s:.1f}s (deleting for {f.deleting_s:.1f}s), "
          f"peak operator RSS {f.peak_rss_mb:.0f} MiB; load {f.load_before:.1f} before, {f.load_after:.1f} after",
          flush=True)
    print(f"    CPU (user+sys): operator tree {f.operator_cpu_s:.1f}s, API processes {f.api_cpu_s:.1f}s", flush=True)
    per_s = f.total_requests / f.settled_s if f.settled_s else 0.0
    print(f"    Kafka requests: {f.total_requests:,} ({per_s:.1f}/s over the run): "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(f.requests.items()) if v), flush=True)
    if f.deleting_s:
        print(f"    while deleting ({f.deleting_s:.0f}s): {deleting:,} requests, {deleting / f.deleting_s:.1f}/s; "
              f"OffsetDelete+OffsetFetch+DescribeGroups {rate:,}, {rate / f.deleting_s:.1f}/s; "
              f"{f.deletions / f.deleting_s:.1f} OffsetDeletions settled/s", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policies", type=int, default=100)
    p.add_argument("--deletions", type=int, default=1000, help="stale groups: one OffsetDeletion each")
    p.add_argument("--groups", type=int, default=10_000)
    p.add_argument("--quick", action="store_true", help="10 policies, 100 deletions, 1,000 groups")
    p.add_argument("--window", default="30", help="--scan-share-window of the shared run (seconds)")
    p.add_argument("--kafka-concurrency", type=int, action="append", help="one shared run per value (default 8)")
    p.add_argument("--separate-policies", type=int, help="policies of the separate-scans run (default: all; 0: skip)")
    p.add_argument("--timeout", type=float, default=1800.0, help="per configuration, seconds")
    p.add_argument("--no-shared", action="store_true", help="only the separate-scans run (its ratios are not printed)")
    p.add_argument("--keep-logs", type=Path, help="copy each operator's log into this directory")
    p.add_argument("--api", choices=("emulated", "real", "both"), default="emulated",
                   help="the Kubernetes API: kmock's emulator, the real kube-apiserver (needs Go or a built one), or both")
    args = p.parse_args()
    sizes = Sizes(10, 100, 1000) if args.quick else Sizes(args.policies, args.deletions, args.groups)
    if not 0 < sizes.deletions <= sizes.groups or sizes.policies < 1:
        p.error("need 0 < deletions <= groups and at least one policy")
    print(f"issue 12 benchmark: {sizes.policies} policies, {sizes.deletions:,} OffsetDeletions, {sizes.groups:,} "
          f"groups ({sizes.groups * TOPIC_PARTITIONS:,} offsets); load: {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    everything: list[tuple[str, Figures]] = []
    for api in (("emulated", "real") if args.api == "both" else (args.api,)):
        if api == "emulated":
            everything += [(api, f) for f in run_all(args, sizes, None)]
            continue
        from kube_cluster import control_plane

        with control_plane() as plane:
            everything += [(api, f) for f in run_all(args, sizes, plane)]
    if len({api for api, _ in everything}) > 1:
        print("side by side (CPU: user+sys seconds; wall times inflated by whatever else the machine runs):")
        print(f"  {'configuration':48} {'API':9} {'scans':>5} {'all ran':>8} {'settled':>8} {'op CPU':>7} "
              f"{'API CPU':>8} {'op RSS':>7}")
        for api, f in everything:
            print(f"  {f.label[:48]:48} {api:9} {f.scans:5.0f} {f.analysed_s:7.1f}s {f.settled_s:7.1f}s "
                  f"{f.operator_cpu_s:6.1f}s {f.api_cpu_s:7.1f}s {f.peak_rss_mb:4.0f} MiB")
    print(f"load after: {os.getloadavg()[0]:.1f}", flush=True)
    return 0


def run_all(args: argparse.Namespace, sizes: Sizes, plane: Any) -> list[Figures]:
    """Every configuration the arguments ask for, on one API (`plane`: the real one; None: the emulator)."""
    where = "emulated API" if plane is None else "real API"
    separate = sizes.policies if args.separate_policies is None else min(args.separate_policies, sizes.policies)
    concurrencies = args.kafka_concurrency or [8]
    shared = [] if args.no_shared else [
        run_one(f"shared (window {args.window}s, kafka-concurrency {c}), {where}", sizes, sizes.policies, args.window,
                c, args.timeout, args.keep_logs, plane) for c in concurrencies]
    for f in shared:
        report(f)
    if not separate:
        return shared
    alone = run_one(f"separate (--scan-share-window off), {where}", sizes, separate, "off", concurrencies[0],
                    args.timeout, args.keep_logs, plane)
    report(alone)
    if not shared:
        print(f"  per separate scan: {alone.analysed_s / max(alone.scans, 1):.1f}s ({alone.scans:.0f} scans for "
              f"{separate} policies)", flush=True)
        return [alone]
    base = shared[0]
    per_scan = alone.analysed_s / max(alone.scans, 1)
    scale = sizes.policies / separate
    note = "" if separate == sizes.policies else f" (extrapolated from {separate} policies: x{scale:.1f})"
    print(f"ratios on the {where}, separate / shared{note}:")
    print(f"  scans per interval: {alone.scans * scale:.0f} / {base.scans:.0f} = "
          f"{alone.scans * scale / max(base.scans, 1):.0f}x")
    print(f"  time until every policy has run: {alone.analysed_s * scale:.0f}s / {base.analysed_s:.0f}s = "
          f"{alone.analysed_s * scale / max(base.analysed_s, 0.001):.1f}x ({per_scan:.1f}s per separate scan)")
    print(f"  time until every object settled: {alone.settled_s * scale:.0f}s / {base.settled_s:.0f}s = "
          f"{alone.settled_s * scale / max(base.settled_s, 0.001):.1f}x")
    print(f"  operator CPU: {alone.operator_cpu_s * scale:.0f}s / {base.operator_cpu_s:.0f}s = "
          f"{alone.operator_cpu_s * scale / max(base.operator_cpu_s, 0.001):.1f}x")
    print(f"  peak operator memory: {alone.peak_rss_mb:.0f} / {base.peak_rss_mb:.0f} MiB = "
          f"{alone.peak_rss_mb / max(base.peak_rss_mb, 1):.2f}x (not extrapolated)")
    return [*shared, alone]


if __name__ == "__main__":
    sys.exit(main())
