"""Kafka's own Java clients as test drivers: tests/kafka-maven/drivers/*.java compiled once per Kafka version
(javac, against that version's libs/ from real_kafka.resolve) and run as child processes that a test steers
over stdin/stdout.

`JavaConsumer` is one member of a group, with either rebalance protocol: `protocol="classic"` (JoinGroup/
SyncGroup) or `protocol="consumer"` (KIP-848, ConsumerGroupHeartbeat; Kafka 3.9 preview, 4.0+ GA):

    with JavaConsumer(kafka.bootstrap_servers, "billing", ["orders"], protocol="consumer") as c:
        c.wait_assigned(2)                       # until it owns 2 partitions; returns {("orders", 0), ...}
        c.commit({("orders", 0): 5})             # commitSync with this member's id and epoch
    # leaving the block closes it (the member leaves the group) and checks the process ended cleanly

`regex="ord.*"` (with `topics=()`, protocol "consumer", Kafka 4.0+) subscribes by a broker-side regular
expression (KIP-848's SubscriptionPattern): Kafka resolves it asynchronously, so for a moment the member is
subscribed to nothing Kafka's OffsetDelete would see. Extra consumer configs go in `config` (e.g.
`{"group.instance.id": "a"}` for a static member). A driver that fails prints its error, which
`commit`/`wait_assigned` raise as AssertionError with the driver's words.

`JavaStreams` is a Kafka Streams application (StreamsDriver: stream(sources).groupBy(value).count(), so a
repartition and a changelog topic) with `protocol="classic"` or `protocol="streams"` (the streams rebalance
protocol, KIP-1071, from 4.1); `JavaShareConsumer` is a KafkaShareConsumer (KIP-932, from 4.1 on the tests'
broker) that reads from the earliest record and acknowledges what it got:

    with JavaStreams(bootstrap, "counts", ["orders"], tmp_path, protocol="streams") as app:
        app.wait_state("RUNNING")
    with JavaShareConsumer(bootstrap, "workers", ["orders"]) as share:
        share.wait_received(10)
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from types import TracebackType

from real_kafka import DRIVERS, NEWEST, classpath, home, resolve
from waiting import wait_until


def compiled_drivers(version: str = NEWEST) -> Path:
    """The class directory of the drivers built against Kafka `version`'s clients, compiled on first use
    (a second call compiles nothing: the directory is named by the sources' hash)."""
    libs = resolve(version)
    sources = sorted(DRIVERS.glob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    out = home(version) / f"drivers-{digest}"
    if (out / ".compiled").is_file():
        return out
    # A staging directory of this process's own: parallel pytest workers may compile at once, and the first
    # whole directory renamed into place wins (the others' are the same classes and are dropped).
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}-"))
    try:
        done = subprocess.run(["javac", "-nowarn", "-d", str(staging), "-cp", classpath(libs), *map(str, sources)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"javac of the Kafka drivers failed against {version}: {done.stderr.strip()[-2000:]}")
        (staging / ".compiled").touch()
        if not (out / ".compiled").is_file():
            shutil.rmtree(out, ignore_errors=True)  # a directory left by an interrupted run of an older version
            with suppress(OSError):  # another worker renamed its own first
                staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


class _Driver:
    """One driver process (a main class of tests/kafka-maven/drivers) steered over stdin/stdout: `_on_line`
    reads what it prints, `_send` writes a command and waits for its reply (a line starting with one of
    `REPLIES`)."""

    REPLIES: tuple[str, ...] = ("ERROR", "CLOSED")

    def __init__(self, name: str, main: str, args: Sequence[str], version: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self._replies: queue.Queue[str] = queue.Queue()
        drivers = compiled_drivers(version)
        cp = f"{drivers}:{classpath(resolve(version))}"
        self._process = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp,
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j2.level=WARN", main, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, name=f"java-{main}-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            line = raw.rstrip("\n")
            self.lines.append(line)
            self._on_line(line)
            if line.startswith(self.REPLIES):
                self._replies.put(line)

    def _on_line(self, line: str) -> None:
        """What a subclass keeps of each printed line (its assignment, its state)."""

    def _alive(self) -> None:
        if self._process.poll() is not None:
            raise AssertionError(f"{self.name}'s Java driver exited: {self.lines[-5:]}")

    def _send(self, command: str, timeout: float) -> str:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.name}'s Java driver did not answer {command!r} in {timeout}s; "
                                 f"it printed {self.lines[-5:]}") from None
        if reply.startswith("ERROR"):
            raise AssertionError(f"{self.name}'s Java driver: {command!r} failed: {reply}")
        return reply

    def close(self, timeout: float = 60.0) -> None:
        """close(): the member leaves its group; the process exits."""
        if self._process.poll() is None:
            try:
                self._send("close", timeout)
            finally:
                assert self._process.stdin is not None
                self._process.stdin.close()
                try:
                    self._process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()

    def __enter__(self) -> _Driver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class JavaConsumer(_Driver):
    """A KafkaConsumer (Java) subscribed to `topics` in `group`, polling in its own process (ConsumerDriver)."""

    REPLIES = ("COMMITTED", "POSITION", "ERROR", "CLOSED")

    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], *, protocol: str = "classic",
                 version: str = NEWEST, config: Mapping[str, str] | None = None, regex: str | None = None) -> None:
        topics = list(topics)
        assert regex is None or (protocol == "consumer" and not topics), "a regex is KIP-848's, alone"
        self.group = group
        self.protocol = protocol
        self.assignment: set[tuple[str, int]] = set()
        extra = [f"{k}={v}" for k, v in (config or {}).items()]
        subscription = f"regex:{regex}" if regex else ",".join(topics)
        super().__init__(group, "ConsumerDriver", [bootstrap, group, protocol, subscription, *extra], version)

    def _on_line(self, line: str) -> None:
        if line.startswith("ASSIGNED"):
            items = line[len("ASSIGNED"):].strip()
            self.assignment = {(t, int(p)) for t, p in (i.rsplit(":", 1) for i in items.split(",") if i)}

    def wait_assigned(self, partitions: int | None = None, timeout: float = 60.0) -> set[tuple[str, int]]:
        """Until the group gave this member `partitions` partitions (any, if None)."""
        def assigned() -> set[tuple[str, int]] | None:
            self._alive()
            if partitions is None:
                return self.assignment or None
            return self.assignment if len(self.assignment) == partitions else None

        return wait_until(assigned, timeout, f"{self.group}'s Java consumer's assignment")

    def commit(self, offsets: Mapping[tuple[str, int], int], timeout: float = 60.0) -> None:
        """commitSync of `offsets` as this member (its member id and generation or epoch)."""
        self._send("commit " + ",".join(f"{t}:{p}={o}" for (t, p), o in offsets.items()), timeout)

    def __enter__(self) -> JavaConsumer:
        return self


class JavaStreams(_Driver):
    """A Kafka Streams application `application_id` counting the records of `topics` by value (StreamsDriver),
    its state in `state_dir`. `protocol="streams"` needs Kafka 4.1+ (StreamsConfig.GROUP_PROTOCOL_CONFIG)."""

    def __init__(self, bootstrap: str, application_id: str, topics: Iterable[str], state_dir: Path, *,
                 protocol: str = "classic", version: str = NEWEST, config: Mapping[str, str] | None = None,
                 start: bool = True) -> None:
        self.application_id = application_id
        self.state = "CREATED"
        extra = [f"{k}={v}" for k, v in (config or {}).items()]
        super().__init__(application_id, "StreamsDriver",
                         [bootstrap, application_id, protocol, ",".join(topics), str(state_dir), *extra], version)
        if start:
            self.start()

    def start(self) -> None:
        """KafkaStreams.start(): it joins its group. With `start=False` the JVM starts and waits for this, so a
        test can warm it up first and time the join."""
        assert self._process.stdin is not None
        self._process.stdin.write("start\n")
        self._process.stdin.flush()

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until the driver's JVM built the topology and waits for `start`."""
        def ready() -> bool:
            self._alive()
            return "READY" in self.lines

        wait_until(ready, timeout, f"{self.application_id}'s Streams driver to start")

    def _on_line(self, line: str) -> None:
        if line.startswith("STATE "):
            self.state = line[len("STATE "):]

    def wait_state(self, state: str = "RUNNING", timeout: float = 90.0) -> None:
        """Until KafkaStreams reports `state` (RUNNING: every thread has its tasks)."""
        def reached() -> bool:
            self._alive()
            errors = [line for line in self.lines if line.startswith("ERROR")]
            if errors:
                raise AssertionError(f"{self.application_id}'s Streams application failed: {errors[0]}")
            return self.state == state

        wait_until(reached, timeout, f"{self.application_id}'s Streams application to be {state}")

    def __enter__(self) -> JavaStreams:
        return self


class JavaShareConsumer(_Driver):
    """A KafkaShareConsumer (KIP-932) of `topics` in share group `group` (ShareDriver), from the earliest record."""

    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], *, version: str = NEWEST,
                 config: Mapping[str, str] | None = None) -> None:
        self.group = group
        self.received = 0
        extra = [f"{k}={v}" for k, v in (config or {}).items()]
        super().__init__(group, "ShareDriver", [bootstrap, group, ",".join(topics), *extra], version)

    def _on_line(self, line: str) -> None:
        if line.startswith("RECEIVED "):
            self.received = int(line.split()[1])

    def wait_received(self, records: int, timeout: float = 60.0) -> None:
        """Until the share group delivered at least `records` records to this member."""
        def enough() -> bool:
            self._alive()
            return self.received >= records

        wait_until(enough, timeout, f"{self.group}'s share consumer to receive {records} records")

    def __enter__(self) -> JavaShareConsumer:
        return self
