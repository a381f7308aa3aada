"""Issue 22's side-by-side benchmark: on one real Kafka 4.x broker per shape, the same `__consumer_offsets`
read by the plain reader, the floor, KMinion, Burrow and our analysis (cold CLI, warm session), in one run.

    .venv/bin/python bench/peers.py                                  # every shape, 100k records each
    .venv/bin/python bench/peers.py --records 5000000 --shape distinct   # the issue's target size

What it measures, per shape (bench/analyze.py builds and seeds the shapes: distinct, history, mixed):

- plain: kafka-python's KafkaConsumer, every record decoded in Python into a dict by logical key (analyze.py's
  plain reader, its own process). Its decoded state also gives the expected view: each group's newest
  committed offset per partition of an existing topic (bench/peer_views.py).
- floor: librdkafka through confluent-kafka, a bare read of every partition to its end offset, no decoding
  (its own process; a Python call per message, so a little above librdkafka's own limit).
- KMinion (`minion.consumerGroups.scrapeMode: offsetsTopic`, granularity topic): from its start until a scrape of
  its Prometheus endpoint reports every expected group and topic with the expected sum of committed offsets.
  KMinion exports nothing until it has consumed the topic to the end, which it checks every 15 s
  (minion/offset_consumer.go, checkIfConsumerLagIsCaughtUp: 12 s sleep + 3 s), so its time is quantised.
- Burrow (class kafka, in-memory storage, ZooKeeper for its own coordination started before the clock): from
  its start until its HTTP API lists every expected group and each group's detail shows the expected offsets.
  Its storage is configured to keep what the shapes hold: expire-group ten years (the seeded commit times are in
  2023; its default of 7 days drops them as "old offset"), a deep storage queue (the default depth 1 with a 1 s
  send timeout drops offsets under load), no groups reaper (the seeded groups are not known to the coordinator).
  A peer that lists every expected group but shows other offsets, unchanged for 60 s, is given up on; its row
  gives the time its final view appeared (Burrow on history and mixed: it does not decode OffsetCommitValue v2).
- ours: `kafka-offset-operator analyze` as a user runs it (a fresh process: Python, JVM, Spark; local[N] with
  N = the machine's cores), and a kept session in this process (the operator's; the second of two runs),
  local[1] and local[2].

CPU: user+sys seconds of every process of a reader (the CLI with its JVM and Python workers, KMinion, Burrow and
its ZooKeeper), the broker's apart. The peers and the floor come from caches outside the repository, made once
(~/.cache/kafka-offset-operator/bench-peers): KMinion and Burrow with `go install` from the Go module proxy (or a
binary named by KOO_BENCH_KMINION / KOO_BENCH_BURROW; where the proxy refuses them, built by hand as
docs/performance.md says), ZooKeeper's jars with Maven, confluent-kafka with pip --target. A tool that cannot be had is skipped with one line saying why.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

from kafka_offset_operator.public import iso

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests" / "support"))

import analyze  # noqa: E402  (bench/analyze.py: the shapes, the broker, the plain reader)
import peer_views  # noqa: E402

CACHE = Path(os.environ.get("KOO_BENCH_PEERS_CACHE", Path.home() / ".cache" / "kafka-offset-operator" / "bench-peers"))
KMINION_MODULE, KMINION_VERSION = "github.com/cloudhut/kminion/v2", "v2.2.13"  # the module path of redpanda-data/kminion
BURROW_MODULE, BURROW_VERSION = "github.com/linkedin/Burrow", "v1.9.4"
ZOOKEEPER_VERSION = "3.9.5"
METRICS_CORE = "4.1.12.1"  # the version ZooKeeper 3.9's POM names
PEERS_KAFKA = "4.4.0"  # the newest Kafka 4.x the harness resolves (real_kafka.VERSIONS)


def say(message: str) -> None:
    print(f"[peers] {message}", file=sys.stderr, flush=True)


# ---- the tools, once, into the cache ----


def go_tool(name: str, module: str, version: str, env_var: str, built_as: str) -> tuple[Path | None, str]:
    """The binary (env_var, or the cache, or `go install module@version` into it), or None and why not."""
    given = os.environ.get(env_var)
    if given:
        return (Path(given), f"{given} ({env_var})") if os.access(given, os.X_OK) else (None, f"{env_var}={given} is not executable")
    binary = CACHE / name
    if binary.is_file():
        return binary, str(binary)
    if shutil.which("go") is None:
        return None, "no `go` on PATH to build it"
    say(f"building {name} with go install {module}@{version} into {CACHE} (once)")
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["go", "install", f"{module}@{version}"], env={**os.environ, "GOBIN": str(CACHE / ".gobin")},
                          capture_output=True, text=True, check=False)
    built = CACHE / ".gobin" / built_as
    if done.returncode != 0 or not built.is_file():
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return None, f"go install {module}@{version} failed: {last[:200]}"
    built.rename(binary)
    return binary, str(binary)


def zookeeper_libs() -> tuple[Path | None, str]:
    """ZooKeeper's jars (and its runtime dependencies) from Maven Central, once."""
    libs = CACHE / f"zookeeper-{ZOOKEEPER_VERSION}"
    if any(libs.glob("zookeeper-*.jar")):
        return libs, str(libs)
    if shutil.which("mvn") is None or shutil.which("java") is None:
        return None, "ZooKeeper needs java and mvn"
    say(f"resolving ZooKeeper {ZOOKEEPER_VERSION} from Maven Central into {libs} (once)")
    work = Path(tempfile.mkdtemp(prefix="bench-zk-pom-"))
    (work / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>bench</groupId><artifactId>zookeeper-libs</artifactId><version>1</version><dependencies>"
        f"<dependency><groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>{ZOOKEEPER_VERSION}"
        "</version></dependency>"
        # The server's metrics provider needs Dropwizard's metrics-core, which ZooKeeper's POM leaves as provided.
        f"<dependency><groupId>io.dropwizard.metrics</groupId><artifactId>metrics-core</artifactId><version>{METRICS_CORE}"
        "</version></dependency></dependencies></project>"
    )
    staging = CACHE / f".zookeeper-{os.getpid()}"
    done = subprocess.run(["mvn", "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                           "-Dmdep.includeScope=runtime", f"-DoutputDirectory={staging}"],
                          capture_output=True, text=True, check=False)
    shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        errors = [x for x in (done.stdout + done.stderr).splitlines() if "ERROR" in x] or ["(no output)"]
        return None, f"Maven could not resolve ZooKeeper {ZOOKEEPER_VERSION}: {errors[0][:200]}"
    staging.rename(libs)
    return libs, str(libs)


def confluent_path() -> tuple[str | None, str]:
    """A directory to put on sys.path for confluent_kafka (the environment's, or pip --target into the cache)."""
    try:
        import confluent_kafka  # noqa: F401

        return "", "confluent-kafka of this environment"
    except ImportError:
        pass
    target = CACHE / "py"
    if not (target / "confluent_kafka").is_dir():
        say(f"installing confluent-kafka with pip --target {target} (once)")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), "confluent-kafka"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            return None, f"pip could not install confluent-kafka: {last[:200]}"
    return str(target), f"confluent-kafka from {target}"


# ---- processes ----


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, deadline_s: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)  # the polling cadence; the deadline decides
    raise RuntimeError(f"nothing listened on {port} within {deadline_s} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def http_get(url: str, timeout: float = 30) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body: bytes = answer.read()
        return body


class Watched(NamedTuple):
    """What watch saw: `seconds` to the complete view (None: never), the last gap, why not complete, when the
    answer last changed (an incomplete peer's final view: when it had read what it shows), and the seconds the
    bench spent asking (on 2 cores the asking competes with the peer: Burrow at 5M is ~100k HTTP requests)."""

    seconds: float | None
    gap: peer_views.Gap | None
    why: str
    final_s: float | None = None
    asking_s: float = 0.0
    final_cpu_s: float | None = None  # the peer's CPU when its final view appeared (not its answering the polls after)


class Vitals:
    """A peer's CPU seconds and its process's peak RSS, read at every poll: a peer the kernel kills (KMinion at 5M
    distinct, out of memory) leaves nothing in /proc to read afterwards, so the last reading stands."""

    def __init__(self, pid: int, cpu: Callable[[], float]) -> None:
        self.pid, self._cpu = pid, cpu
        self.cpu_s = self.peak_rss_mb = 0.0

    def read(self) -> float:
        with contextlib.suppress(OSError):  # gone: the last reading stands
            self.cpu_s = self._cpu()
        self.peak_rss_mb = max(self.peak_rss_mb, analyze._status_mb(self.pid, "VmHWM") or 0.0)
        return self.cpu_s


def watch(
    process: subprocess.Popen[bytes], check: Callable[[], peer_views.Gap], deadline_s: float, poll_s: float = 1.0,
    settled_s: float = 60.0, vitals: Vitals | None = None,
) -> Watched:
    """Poll `check` until complete: seconds from `process`'s start to the poll that found it complete (that poll's
    start: the peer's answer was whole then), or None with the last gap when the deadline passes, or sooner when
    the peer lists every expected group and its gap has not changed for `settled_s`: it has read the log and shows
    other offsets for good (Burrow on the history shapes, which drops OffsetCommitValue v2); waiting for the
    deadline (12x the plain reader) would cost ~10 min per shape at 5M. `cpu` (the peer's CPU seconds) is read when
    its answer changes, so a settled peer's CPU is that of reaching its final view; `vitals` are read at every poll."""
    t0 = time.perf_counter()
    error = ""
    asking = 0.0
    settling = peer_views.Settling(settled_s)
    final_cpu: float | None = None
    while time.perf_counter() - t0 < deadline_s:
        if vitals is not None:
            vitals.read()
        if process.poll() is not None:
            why = peer_views.exit_reason(process.returncode, vitals.peak_rss_mb if vitals is not None else 0.0)
            return Watched(None, settling.gap, why, settling.changed_at, asking, final_cpu)
        started = time.perf_counter() - t0
        try:
            gap = check()
        except (OSError, ValueError) as exc:  # not serving yet
            error = f"{type(exc).__name__}: {exc}"[:200]
        else:
            if gap.complete:
                return Watched(started, gap, "", asking_s=asking + time.perf_counter() - t0 - started)
            if settling.settled(gap, started):
                return Watched(None, gap, f"the same answer for {settled_s:.0f}s", settling.changed_at,
                               asking + time.perf_counter() - t0 - started, final_cpu)
            if settling.changed_at == started and vitals is not None:
                final_cpu = vitals.read()
        asking += time.perf_counter() - t0 - started
        time.sleep(poll_s)  # the polling cadence; the deadline decides
    return Watched(None, settling.gap, error or f"not complete in {deadline_s:.0f}s", asking_s=asking)


def run_kminion(binary: Path, bootstrap: str, sums: dict[tuple[str, str], int], deadline_s: float, workdir: Path
                ) -> dict[str, Any]:
    port = free_port()
    config = workdir / "kminion.yaml"
    config.write_text(
        f"logger:\n  level: error\nkafka:\n  brokers: [\"{bootstrap}\"]\n  clientId: kminion-bench\n"
        "minion:\n  consumerGroups:\n    enabled: true\n    scrapeMode: offsetsTopic\n    granularity: topic\n"
        "  logDirs:\n    enabled: false\n"
        f"exporter:\n  namespace: kminion\n  host: 127.0.0.1\n  port: {port}\n"
    )
    log = (workdir / "kminion.log").open("wb")
    process = subprocess.Popen([str(binary)], env={**os.environ, "CONFIG_FILEPATH": str(config)}, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    log.close()

    def check() -> peer_views.Gap:
        return peer_views.kminion_gap(sums, peer_views.kminion_sums(http_get(f"http://127.0.0.1:{port}/metrics").decode()))

    try:
        vitals = Vitals(process.pid, lambda: analyze.proc_cpu_s(process.pid))
        seen = watch(process, check, deadline_s, vitals=vitals)
        cpu = vitals.read()
    finally:
        stop(process)
    return {**seen._asdict(), "cpu_s": cpu if seen.final_cpu_s is None else seen.final_cpu_s,
            "peak_rss_mb": vitals.peak_rss_mb}


BURROW_TOML = """
[general]
pidfile="{workdir}/burrow.pid"
[logging]
level="error"
filename="{workdir}/burrow.log"
[zookeeper]
servers=["127.0.0.1:{zk_port}"]
timeout=6
root-path="/burrow-bench"
[client-profile.bench]
client-id="burrow-bench"
kafka-version="{kafka_version}"
[cluster.bench]
class-name="kafka"
client-profile="bench"
servers=["{bootstrap}"]
topic-refresh=60
offset-refresh=10
groups-reaper-refresh=0
[consumer.bench]
class-name="kafka"
cluster="bench"
client-profile="bench"
servers=["{bootstrap}"]
start-latest=false
group-allowlist=".*"
[storage.default]
class-name="inmemory"
intervals=10
expire-group=315360000
min-distance=1
workers=20
queue-depth=100000
[evaluator.default]
class-name="caching"
expire-cache=10
[httpserver.default]
address="127.0.0.1:{http_port}"
"""
BURROW_KAFKA_VERSION = "3.6.0"  # the newest protocol level the Burrow build's Sarama names here; Kafka 4.x serves it


def run_burrow(binary: Path, zk_libs: Path, bootstrap: str, view: peer_views.View, deadline_s: float, workdir: Path
               ) -> dict[str, Any]:
    zk_port, http_port = free_port(), free_port()
    (workdir / "zk").mkdir()
    zk_log = (workdir / "zookeeper.log").open("wb")
    zookeeper = subprocess.Popen(
        ["java", "-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-cp", f"{zk_libs}/*",
         "org.apache.zookeeper.server.ZooKeeperServerMain", str(zk_port), str(workdir / "zk")],
        stdout=zk_log, stderr=subprocess.STDOUT, start_new_session=True)
    zk_log.close()
    try:
        wait_port(zk_port, 120, zookeeper)
        zk_cpu0 = analyze.proc_cpu_s(zookeeper.pid)
        (workdir / "burrow.toml").write_text(BURROW_TOML.format(
            workdir=workdir, zk_port=zk_port, kafka_version=BURROW_KAFKA_VERSION, bootstrap=bootstrap, http_port=http_port))
        out = (workdir / "burrow.stdout").open("wb")
        process = subprocess.Popen([str(binary), "--config-dir", str(workdir)], cwd=workdir, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        base = "/v3/kafka/bench/consumer"
        expected = set(view)
        verified: set[str] = set()
        pool = ThreadPoolExecutor(4)
        local = threading.local()

        def get(path: str) -> Any:
            """GET on a connection kept per thread: at 5M the check asks for ~100k groups' details, and a fresh
            connection per request (urllib) cost more than Burrow's answer."""
            connection = getattr(local, "connection", None)
            if connection is None:
                connection = local.connection = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)
            try:
                connection.request("GET", path)
                return json.loads(connection.getresponse().read())
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                local.connection = None
                raise OSError(f"{type(exc).__name__}: {exc}") from exc

        def verify(group: str) -> str | None:
            try:
                shown = peer_views.burrow_offsets(get(f"{base}/{urllib.parse.quote(group, safe='')}"))
            except ValueError:  # not found: gone since the list (Burrow drops a group on its metadata tombstone)
                return None  # asked again at the next poll, without losing the rest of a pass of ~100k at 5M
            return group if peer_views.group_matches(view[group], shown) else None

        def check() -> peer_views.Gap:
            listed = peer_views.burrow_groups(get(base))
            if expected - listed:
                # Details only once every group is listed: asking while Burrow still reads would take a core
                # from it (on 2 cores). A group not right yet is asked again at the next poll.
                return peer_views.burrow_gap(view, listed, verified)
            todo = sorted(expected - verified)
            verified.update(g for g in pool.map(verify, todo) if g is not None)
            return peer_views.burrow_gap(view, listed, verified)

        def cpu() -> float:
            return analyze.proc_cpu_s(process.pid) + analyze.proc_cpu_s(zookeeper.pid) - zk_cpu0

        vitals = Vitals(process.pid, cpu)
        try:
            seen = watch(process, check, deadline_s, vitals=vitals)
            used = vitals.read()
        finally:
            pool.shutdown()
            stop(process)
        return {**seen._asdict(), "cpu_s": used if seen.final_cpu_s is None else seen.final_cpu_s,
                "peak_rss_mb": vitals.peak_rss_mb}
    finally:
        stop(zookeeper)


# ---- the readers in their own processes ----


def plain_with_view(bootstrap: str, topics: dict[str, int], conn: Connection) -> None:
    figures, state = analyze.plain_read(bootstrap)
    view = peer_views.expected_view((f for f in state.values() if f is not None), topics)
    conn.send({**figures, "view": view})


def floor_run(bootstrap: str, path: str, conn: Connection) -> None:
    """Every partition of __consumer_offsets from its start to its end offset with librdkafka, nothing decoded."""
    if path:
        sys.path.insert(0, path)
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    t0, cpu0 = time.perf_counter(), analyze._self_cpu_s()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-floor-never-joins",
                         "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": "read_committed",
                         "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 16 << 20,
                         "queued.max.messages.kbytes": 256 << 10, "fetch.wait.max.ms": 100})
    topic = "__consumer_offsets"
    partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
    remaining = {p for p, end in ends.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(remaining)])
    records = 0
    while remaining:
        for message in consumer.consume(num_messages=100_000, timeout=1.0):
            error = message.error()
            if error is None:
                records += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                remaining.discard(message.partition())
            else:
                raise SystemExit(f"floor: {error}")
    consumer.close()
    conn.send({"seconds": time.perf_counter() - t0, "cpu_s": analyze._self_cpu_s() - cpu0, "records": records})


def cli_run(bootstrap: str, workdir: Path) -> dict[str, Any]:
    """`kafka-offset-operator analyze` in a fresh process, as a user runs it; CPU of it and everything it waited
    for (its JVM and the JVM's Python workers)."""
    policy = workdir / "policy.json"  # YAML's superset: JSON
    policy.write_text(json.dumps(analyze.POLICY))
    now = iso(analyze.NOW_MS)
    exe = Path(sys.executable).with_name("kafka-offset-operator")
    command = [str(exe), "analyze", "--bootstrap-server", bootstrap, "--policy", str(policy), "--now", now,
               "--format", "json", "--output", str(workdir / "report.json")]
    t0 = time.perf_counter()
    err = workdir / "analyze.stderr"
    with err.open("wb") as sink:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink)
    # Its JVM is not waited for by the CLI (so wait4's rusage misses it): sample every process of the tree,
    # each one's own user+sys, and keep each one's last value.
    cpu: dict[int, float] = {}
    while process.poll() is None:
        for pid in _tree(process.pid):
            try:
                cpu[pid] = max(cpu.get(pid, 0.0), own_cpu_s(pid))
            except OSError:
                continue
        time.sleep(0.2)  # the sampling cadence; the process's exit decides
    seconds = time.perf_counter() - t0
    if process.returncode != 0:
        raise SystemExit(f"analyze failed ({process.returncode}): {err.read_text(errors='replace')[-2000:]}")
    return {"seconds": seconds, "cpu_s": sum(cpu.values()), "summary": peer_views.report_summary(workdir / "report.json"),
            "command": command}



def own_cpu_s(pid: int) -> float:
    """user+sys seconds of one process alone (not its reaped children: they are sampled themselves)."""
    fields = analyze._read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[int]:
    """`root` and its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(analyze._read(f"/proc/{entry}/stat").rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def in_process(ctx: Any, target: Any, *args: Any) -> dict[str, Any]:
    return analyze._in_process(ctx, target, *args)


# ---- one shape ----


def run_shape(shape: str, target: int, seed: int, version: str, ctx: Any, tools: dict[str, Any],
              cores: list[int]) -> dict[str, Any]:
    from offset_expiry.session import local_session

    ours, theirs = ctx.Pipe()
    broker = ctx.Process(target=analyze.serve_real_broker, args=(shape, target, seed, version, theirs), daemon=True)
    broker.start()
    theirs.close()
    info = ours.recv()
    bootstrap, broker_pid = info["bootstrap"], info["broker_pid"]
    say(f"{shape} on Kafka {info['version']}: {info['seed_records']:,} records seeded in {info['seeded_s']:.1f}s")
    rows: dict[str, dict[str, Any]] = {}
    notes: list[str] = []

    def measure(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        load0, broker0 = os.getloadavg()[0], analyze.proc_cpu_s(broker_pid)
        row = run()
        row["broker_cpu_s"] = analyze.proc_cpu_s(broker_pid) - broker0
        row["load"] = f"{load0:.1f}-{os.getloadavg()[0]:.1f}"
        rows[name] = row
        shown = "never complete" if row.get("seconds") is None else f"{row['seconds']:.1f}s"
        if row.get("final_s") is not None:
            shown += f" (final view at {row['final_s']:.1f}s)"
        if row.get("asking_s"):
            shown += f", asking it {row['asking_s']:.1f}s"
        if row.get("peak_rss_mb"):
            shown += f", peak RSS {row['peak_rss_mb']:,.0f} MB"
        say(f"  {name}: {shown}, CPU {row.get('cpu_s', 0):.1f}s, broker CPU {row['broker_cpu_s']:.1f}s (load {row['load']})")
        return row

    try:
        topics = _existing_topics(bootstrap)
        plain = measure("plain reader (kafka-python)", lambda: in_process(ctx, plain_with_view, bootstrap, topics))
        view = plain.pop("view")
        sums = peer_views.topic_sums(view)
        # A peer's deadline only ends one that never lists every group (settling ends the rest): generous, so a
        # slow peer at 5M (Burrow reads, then its ~100k groups' details are asked for) is timed, not cut off.
        deadline = max(300.0, 12 * plain["seconds"])
        if tools["floor"][0] is not None:
            measure("floor (librdkafka)", lambda: in_process(ctx, floor_run, bootstrap, tools["floor"][0]))
        else:
            notes.append(f"floor skipped: {tools['floor'][1]}")
        with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
            work = Path(tmp)
            if tools["kminion"][0] is not None:
                (work / "k").mkdir()
                row = measure("KMinion (offsetsTopic)", lambda: run_kminion(tools["kminion"][0], bootstrap, sums, deadline, work / "k"))
                if row["seconds"] is None:
                    notes.append(incomplete_note("KMinion", row))
            else:
                notes.append(f"KMinion skipped: {tools['kminion'][1]}")
            if tools["burrow"][0] is not None and tools["zookeeper"][0] is not None:
                (work / "b").mkdir()
                row = measure("Burrow (+ZooKeeper)", lambda: run_burrow(tools["burrow"][0], tools["zookeeper"][0], bootstrap,
                                                                     view, deadline, work / "b"))
                if row["seconds"] is None:
                    notes.append(incomplete_note("Burrow", row))
            else:
                notes.append(f"Burrow skipped: {tools['burrow'][1] if tools['burrow'][0] is None else tools['zookeeper'][1]}")
            (work / "c").mkdir()
            cli = measure("ours, cold: the CLI", lambda: cli_run(bootstrap, work / "c"))
        for n in cores:
            spark = local_session("bench-peers", cores=n)
            spark.range(1).count()

            def warm(spark: Any = spark) -> dict[str, Any]:
                analyze._analyze(spark, bootstrap)  # the first run pays for the Python workers: the operator's once
                cpu0 = analyze._spark_cpu_s()
                summary, seconds, _ = analyze._analyze(spark, bootstrap)
                return {"seconds": seconds, "cpu_s": analyze._spark_cpu_s() - cpu0, "summary": summary}

            row = measure(f"ours, warm: local[{n}]", warm)
            spark.stop()
            if {k: cli["summary"].get(k) for k in row["summary"]} != row["summary"]:  # the CLI's JSON adds the time and broker settings
                notes.append(f"the CLI's summary differs from the warm local[{n}]'s: {cli['summary']} / {row['summary']}")
    finally:
        ours.send("stop")
        broker.join(timeout=90)
    groups = len(view)
    return {"shape": shape, "records": plain["records"], "groups": groups, "offsets": sum(len(v) for v in view.values()),
            "seed": info, "rows": rows, "notes": notes, "command": rows["ours, cold: the CLI"].pop("command")}


def incomplete_note(peer: str, row: dict[str, Any]) -> str:
    """Why a peer's row has no time: what it still showed otherwise, and when its answer last changed."""
    gap = row["gap"].describe() if row["gap"] else "no answer"
    final = (f"; its answer last changed at {row['final_s']:.1f}s (its CPU s: to then)" if row.get("final_s") is not None
             else "")
    return f"{peer} never complete ({row['why']}): {gap}{final}"


def _existing_topics(bootstrap: str) -> dict[str, int]:
    """Topic -> partition count of the cluster's own topics (the peers show offsets of these alone)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return {t: len(consumer.partitions_for_topic(t) or ()) for t in consumer.topics() if not t.startswith("__")}
    finally:
        consumer.close()


# ---- the table ----


def verdicts(result: dict[str, Any]) -> list[str]:
    """The issue's targets, held or not, with the measured gap."""
    rows = result["rows"]
    cli = rows["ours, cold: the CLI"]["seconds"]
    out = []
    plain = rows["plain reader (kafka-python)"]["seconds"]
    ratio = plain / cli
    out.append(f"cold CLI >= 3x the plain reader: {'held' if ratio >= 3 else 'NOT held'} ({ratio:.2f}x: {cli:.1f}s vs {plain:.1f}s)")
    for name in ("KMinion (offsetsTopic)", "Burrow (+ZooKeeper)"):
        peer = rows.get(name)
        if peer is None:
            out.append(f"cold CLI faster than {name.split()[0]}: not measured (skipped)")
        elif peer["seconds"] is None and peer.get("final_s") is not None:
            ok = cli < peer["final_s"]
            out.append(f"cold CLI faster than {name.split()[0]}: {'held' if ok else 'NOT held'} against its final view, which "
                       f"is not the log's ({cli:.1f}s vs {peer['final_s']:.1f}s)")
        elif peer["seconds"] is None:
            out.append(f"cold CLI faster than {name.split()[0]}: held ({name.split()[0]} never showed every group)")
        else:
            ok = cli < peer["seconds"]
            out.append(f"cold CLI faster than {name.split()[0]}: {'held' if ok else 'NOT held'} ({cli:.1f}s vs {peer['seconds']:.1f}s)")
    floor = rows.get("floor (librdkafka)")
    for name, row in rows.items():
        if name.startswith("ours, warm") and floor is not None:
            x = row["seconds"] / floor["seconds"]
            out.append(f"{name} within 3x of the floor: {'held' if x <= 3 else 'NOT held'} ({x:.1f}x: {row['seconds']:.1f}s vs {floor['seconds']:.1f}s)")
    return out


def print_table(results: list[dict[str, Any]], tools: dict[str, Any]) -> None:
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}; tools: " +
          "; ".join(f"{k}: {v[1]}" for k, v in tools.items()))
    for result in results:
        seed = result["seed"]
        print(f"\n{result['shape']}: {result['records']:,} records on Kafka {seed['version']} ({result['groups']:,} groups, "
              f"{result['offsets']:,} offsets on existing topics); CLI: {' '.join(result['command'][1:4])} ...")
        floor = result["rows"].get("floor (librdkafka)")
        print("| reader | wall s | CPU s | broker CPU s | x floor (wall) | load |")
        print("|---|---|---|---|---|---|")
        for name, row in result["rows"].items():
            wall = "never complete" if row["seconds"] is None else f"{row['seconds']:.1f}"
            if row.get("final_s") is not None:
                wall += f" (final view at {row['final_s']:.1f})"
            xf = f"{row['seconds'] / floor['seconds']:.1f}x" if floor and row["seconds"] else "-"
            print(f"| {name} | {wall} | {row['cpu_s']:.1f} | {row['broker_cpu_s']:.1f} | {xf} | {row['load']} |")
        for line in verdicts(result) + result["notes"]:
            print(f"- {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="approximate records per shape (the target: 5000000)")
    parser.add_argument("--shape", action="append", choices=analyze.SHAPES, help="default: all four")
    parser.add_argument("--cores", type=int, action="append", help="warm local[N] (repeatable); default 1 and 2")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--kafka-version", default=PEERS_KAFKA)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from real_kafka import resolve

    resolve(args.kafka_version)
    tools = {
        "floor": confluent_path(),
        "kminion": go_tool("kminion", KMINION_MODULE, KMINION_VERSION, "KOO_BENCH_KMINION", "kminion"),
        "burrow": go_tool("burrow", BURROW_MODULE, BURROW_VERSION, "KOO_BENCH_BURROW", "Burrow"),
        "zookeeper": zookeeper_libs(),
    }
    for name, (found, why) in tools.items():
        say(f"{name}: {why}" if found is not None else f"{name}: skipped: {why}")
    ctx = mp.get_context("spawn")
    results = []
    for shape in args.shape or analyze.SHAPES:
        say(f"{shape} ~{args.records:,} records (load {os.getloadavg()[0]:.1f})")
        results.append(run_shape(shape, args.records, args.seed, args.kafka_version, ctx, tools, args.cores or [1, 2]))
        print_table(results[-1:], tools)  # each shape as it ends: a long run's first shapes are not lost
        sys.stdout.flush()


if __name__ == "__main__":
    main()
