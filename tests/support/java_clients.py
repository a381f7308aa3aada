"""Kafka's own Java clients as test drivers: tests/kafka-maven/drivers/*.java compiled once per Kafka version
(javac, against that version's libs/ from real_kafka.resolve) and run as child processes that a test steers
over stdin/stdout.

`JavaConsumer` is one member of a group, with either rebalance protocol: `protocol="classic"` (JoinGroup/
SyncGroup) or `protocol="consumer"` (KIP-848, ConsumerGroupHeartbeat; Kafka 3.9 preview, 4.0+ GA):

    with JavaConsumer(kafka.bootstrap_servers, "billing", ["orders"], protocol="consumer") as c:
        c.wait_assigned(2)                       # until it owns 2 partitions; returns {("orders", 0), ...}
        c.commit({("orders", 0): 5})             # commitSync with this member's id and epoch
    # leaving the block closes it (the member leaves the group) and checks the process ended cleanly

Extra consumer configs go in `config` (e.g. `{"group.instance.id": "a"}` for a static member). A driver that
fails prints its error, which `commit`/`wait_assigned` raise as AssertionError with the driver's words.
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
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


class JavaConsumer:
    """A KafkaConsumer (Java) subscribed to `topics` in `group`, polling in its own process (ConsumerDriver)."""

    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], *, protocol: str = "classic",
                 version: str = NEWEST, config: Mapping[str, str] | None = None) -> None:
        self.group = group
        self.protocol = protocol
        self.assignment: set[tuple[str, int]] = set()
        self.lines: list[str] = []
        self._replies: queue.Queue[str] = queue.Queue()
        drivers = compiled_drivers(version)
        cp = f"{drivers}:{classpath(resolve(version))}"
        extra = [f"{k}={v}" for k, v in (config or {}).items()]
        self._process = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp,
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j2.level=WARN",
             "ConsumerDriver", bootstrap, group, protocol, ",".join(topics), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, name=f"java-consumer-{group}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            line = raw.rstrip("\n")
            self.lines.append(line)
            if line.startswith("ASSIGNED"):
                items = line[len("ASSIGNED"):].strip()
                self.assignment = {(t, int(p)) for t, p in (i.rsplit(":", 1) for i in items.split(",") if i)}
            elif line.startswith(("COMMITTED", "POSITION", "ERROR", "CLOSED")):
                self._replies.put(line)

    def _send(self, command: str, timeout: float) -> str:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.group}'s Java consumer did not answer {command!r} in {timeout}s; "
                                 f"it printed {self.lines[-5:]}") from None
        if reply.startswith("ERROR"):
            raise AssertionError(f"{self.group}'s Java consumer: {command!r} failed: {reply}")
        return reply

    def wait_assigned(self, partitions: int | None = None, timeout: float = 60.0) -> set[tuple[str, int]]:
        """Until the group gave this member `partitions` partitions (any, if None)."""
        def assigned() -> set[tuple[str, int]] | None:
            if self._process.poll() is not None:
                raise AssertionError(f"{self.group}'s Java consumer exited: {self.lines[-5:]}")
            if partitions is None:
                return self.assignment or None
            return self.assignment if len(self.assignment) == partitions else None

        return wait_until(assigned, timeout, f"{self.group}'s Java consumer's assignment")

    def commit(self, offsets: Mapping[tuple[str, int], int], timeout: float = 60.0) -> None:
        """commitSync of `offsets` as this member (its member id and generation or epoch)."""
        self._send("commit " + ",".join(f"{t}:{p}={o}" for (t, p), o in offsets.items()), timeout)

    def close(self, timeout: float = 60.0) -> None:
        """close(): the member leaves the group; the process exits."""
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

    def __enter__(self) -> JavaConsumer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
