"""Apache Kafka itself under test: its jars from Maven Central, started as Kafka's own scripts start it.

`resolve(version)` copies the runtime classpath of tests/kafka-maven/pom.xml (kafka_2.13, kafka-tools, the Java
clients, Kafka Streams and the log4j2 backend Kafka's POM leaves out) into
~/.cache/kafka-offset-operator/kafka/<version>/libs with Maven, once: a marker holding the POM's hash makes
the second call resolve nothing. `RealKafka` formats a KRaft log directory (kafka.tools.StorageTool format
--standalone, as kafka-storage.sh does) and runs kafka.Kafka (as kafka-server-start.sh does) in combined
broker+controller mode on 127.0.0.1, with a PLAINTEXT listener and a SASL_SSL one (SCRAM-SHA-256/512 and
PLAIN, the sandbox's throwaway certificates), test settings (no initial rebalance delay, replication factor 1
for the internal topics) and every group protocol the version has. It is ready when it answers a metadata
request, polled with a deadline; stop() shuts it down as SIGTERM does for kafka-server-stop.sh.

Nothing here needs pytest: scripts/dev.sh kafka runs `python tests/support/real_kafka.py VERSION`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from kafka_offset_demo.ports import free_port
from kafka_offset_demo.processes import dies_with_parent

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tests" / "kafka-maven" / "pom.xml"
DRIVERS = ROOT / "tests" / "kafka-maven" / "drivers"
CACHE = Path(os.environ.get("KOO_KAFKA_CACHE", Path.home() / ".cache" / "kafka-offset-operator" / "kafka"))

# The newest patch of each minor that Maven Central serves (kafka_2.13); the last is the default.
VERSIONS = ("3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
NEWEST = VERSIONS[-1]

# The secured listener's users: SCRAM credentials are written at format time, PLAIN ones in its JAAS line.
SCRAM_USER, SCRAM_PASSWORD = "koo-scram", "koo-scram-secret-never-logged"
PLAIN_USER, PLAIN_PASSWORD = "koo-plain", "koo-plain-secret-never-logged"


class Unavailable(Exception):
    """Real Kafka cannot run here (no java, no mvn, or Maven could not resolve the version): the
    message is one line saying why, for a skip."""


def versions_under_test(setting: str | None = None) -> list[str]:
    """KOO_KAFKA_VERSIONS: unset or empty is the newest, `all` every version, else a comma list
    (a minor such as `4.1` means its patch in VERSIONS)."""
    raw = (os.environ.get("KOO_KAFKA_VERSIONS", "") if setting is None else setting).strip()
    if not raw:
        return [NEWEST]
    if raw == "all":
        return list(VERSIONS)
    chosen = []
    for item in (v.strip() for v in raw.split(",") if v.strip()):
        full = next((v for v in VERSIONS if v == item or v.startswith(item + ".")), item)
        chosen.append(full)
    return chosen


def _say_default(message: str) -> None:
    print(f"[real-kafka] {message}", file=sys.stderr, flush=True)


def missing_tools() -> str | None:
    """Why real Kafka cannot run on this machine, or None when java, javac (the Java client drivers) and mvn
    are there."""
    for tool, package in (("java", "openjdk-17-jre-headless"), ("javac", "openjdk-17-jdk-headless"), ("mvn", "maven")):
        if shutil.which(tool) is None:
            return f"real Kafka needs `{tool}` (Debian package {package}); not found on PATH"
    return None


def home(version: str) -> Path:
    return CACHE / version


def resolve(version: str, say: Callable[[str], None] = _say_default) -> Path:
    """The directory of `version`'s jars, resolved from Maven Central on first use (into ~/.m2 and then
    the cache). Raises Unavailable with Maven's last error line when it cannot."""
    reason = missing_tools()
    if reason:
        raise Unavailable(reason)
    libs = home(version) / "libs"
    marker = home(version) / ".resolved"
    stamp = hashlib.sha256(POM.read_bytes()).hexdigest()[:16]
    if marker.is_file() and marker.read_text().strip() == stamp and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    say(f"resolving Apache Kafka {version} from Maven Central into {libs} (once; about 130 MB, a minute)")
    started = time.monotonic()
    home(version).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=home(version), prefix="libs.partial-"))  # this process's own
    done = subprocess.run(
        ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies", f"-Dkafka.version={version}",
         "-Dmdep.includeScope=runtime", f"-DoutputDirectory={staging}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        errors = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line] or ["(no output)"]
        raise Unavailable(f"Maven could not resolve Apache Kafka {version}: {errors[0].strip()[:300]}")
    if marker.is_file() and marker.read_text().strip() == stamp:  # another process resolved it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
        return libs
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    marker.write_text(stamp + "\n")
    size = sum(p.stat().st_size for p in libs.iterdir()) / 1e6
    say(f"resolved Apache Kafka {version}: {len(list(libs.iterdir()))} jars, {size:.0f} MB, {time.monotonic() - started:.0f} s")
    return libs


def classpath(libs: Path) -> str:
    """Every jar of libs/, as kafka-run-class.sh builds it."""
    return os.pathsep.join(str(p) for p in sorted(libs.glob("*.jar")))




def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# C1 only and the serial collector: a test broker serves small requests for minutes, where C2's compiles and
# G1's threads cost more than they save (the session's broker, the Spark suites' seeded ones).
SMALL_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def group_settings(version: str) -> dict[str, str]:
    """Broker settings that switch on the group protocols a version has but leaves off by default
    (GroupCoordinatorConfig.GROUP_COORDINATOR_REBALANCE_PROTOCOLS_DEFAULT of that version): KIP-848's
    `consumer` protocol is a preview in 3.9 (default: classic only); 4.1's streams protocol (KIP-1071) is
    early access, listed in the setting and behind unstable API versions, with no streams.version feature
    level yet. From 4.2 the default lists every protocol and 4.4 deprecates the setting, so it is left
    alone; the share (KIP-932) and streams features are set at format time (format_features)."""
    if _minor(version) < (4, 0):
        return {"group.coordinator.rebalance.protocols": "classic,consumer"}
    if _minor(version) == (4, 1):
        return {"group.coordinator.rebalance.protocols": "classic,consumer,streams",
                "unstable.api.versions.enable": "true", "unstable.feature.versions.enable": "true"}
    return {}


def format_features(version: str) -> list[str]:
    """Feature levels given to StorageTool format beyond the release's defaults: share.version=1 from 4.1,
    streams.version=1 from 4.2. (3.9's StorageTool knows no group.version: its KIP-848 preview needs only
    group_settings.)"""
    if _minor(version) == (4, 1):
        return ["--feature", "share.version=1"]
    if _minor(version) >= (4, 2):
        return ["--feature", "streams.version=1", "--feature", "share.version=1"]
    return []


@dataclass
class RealKafka:
    """One Kafka broker+controller process on 127.0.0.1; a context manager that starts and stops it.

    `settings` override the server.properties this writes (e.g. offsets.retention.minutes=1 for an expiry
    fixture). `bootstrap_servers` is the PLAINTEXT listener, `secured_bootstrap_servers` the SASL_SSL one
    (trusting `ca_file`)."""

    version: str = NEWEST
    settings: Mapping[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    say: Callable[[str], None] = _say_default
    heap: str = "512m"
    start_timeout: float = 120.0
    jvm_options: tuple[str, ...] = ()  # extra JVM flags for the broker (e.g. a class-data sharing archive)

    port: int = 0
    secured_port: int = 0
    controller_port: int = 0
    ca_file: Path | None = None
    startup_seconds: float = 0.0
    _process: subprocess.Popen[bytes] | None = None
    _own_workdir: bool = False
    _archive_written: tuple[Path, Path] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def secured_bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.secured_port}"

    @property
    def pid(self) -> int | None:
        """The broker's JVM while it runs (benchmarks read its CPU time from /proc)."""
        return self._process.pid if self._process is not None else None

    @property
    def log_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "logs" / "server.log"

    def __enter__(self) -> RealKafka:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _java(self, main: str, *args: str, libs: Path, jvm: tuple[str, ...] = ()) -> list[str]:
        assert self.workdir is not None
        return [
            "java", *jvm, "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.workdir / 'logs'}",
            "-cp", classpath(libs), main, *args,
        ]  # fmt: skip

    def start(self) -> None:
        libs = resolve(self.version, self.say)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"real-kafka-{self.version}-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        self.port, self.secured_port, self.controller_port = free_port(), free_port(), free_port()
        self._write_tls()
        self._write_log_config()
        properties = self.workdir / "server.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in self._properties().items()))
        started = time.monotonic()
        scram = ["--add-scram", f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]",
                 "--add-scram", f"SCRAM-SHA-256=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"]
        fmt = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "--standalone", "-t", _cluster_id(), "-c", str(properties),
                       *scram, *format_features(self.version), libs=libs, jvm=("-Xmx256m", "-XX:TieredStopAtLevel=1")),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if fmt.returncode != 0:
            raise RuntimeError(f"Kafka {self.version}'s StorageTool format failed: {(fmt.stdout + fmt.stderr).strip()[-2000:]}")
        out = (self.workdir / "logs" / "stdout.log").open("wb")
        self._process = subprocess.Popen(
            self._java("kafka.Kafka", str(properties), libs=libs,
                       jvm=(f"-Xmx{self.heap}", f"-Xms{self.heap}", *self._class_sharing(), *self.jvm_options)),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=dies_with_parent(),
        )
        out.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _class_sharing(self) -> tuple[str, ...]:
        """A class-data sharing archive of the broker's classes (JDK 13+ dynamic CDS, as Kafka's own image
        does): the first broker of a version writes it when it stops, later ones map it and start faster
        (measured: 13-16 s instead of 19-31 s to ready on the loaded 2-core machine). KOO_KAFKA_CDS=0 turns
        it off. A JVM that cannot use the archive ignores it (-Xshare:auto)."""
        if os.environ.get("KOO_KAFKA_CDS", "1") == "0":
            return ()
        archive = home(self.version) / f"broker-{_java_version()}.jsa"
        if archive.is_file():
            return (f"-XX:SharedArchiveFile={archive}",)
        assert self.workdir is not None
        self._archive_written = (self.workdir / "broker.jsa", archive)
        return (f"-XX:ArchiveClassesAtExit={self.workdir / 'broker.jsa'}",)

    def _wait_ready(self) -> None:
        """Until the broker answers metadata with itself in it and finds a group coordinator, or the process died."""
        from kafka import KafkaAdminClient  # late: the module is importable without the clients

        deadline = time.monotonic() + self.start_timeout
        while True:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"Kafka {self.version} exited with {self._process.returncode}: {self._tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=5000)
                try:
                    # FindCoordinator for a group creates __consumer_offsets and answers
                    # COORDINATOR_NOT_AVAILABLE until its partitions are loaded: ready means groups work.
                    if admin.describe_cluster().get("brokers") and admin.describe_groups(["koo-readiness-probe"]):
                        return
                finally:
                    admin.close()
            except Exception:  # not listening yet, or not serving metadata yet
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka {self.version} was not ready after {self.start_timeout} s: {self._tail()}")
            time.sleep(0.1)  # the polling cadence; the deadline decides

    def _tail(self) -> str:
        lines: list[str] = []
        for f in (self.log_file, self.log_file.with_name("stdout.log")):
            if f.is_file():
                lines += f.read_text(errors="replace").splitlines()[-15:]
        return "\n".join(lines)

    def stop(self) -> None:
        """SIGTERM (Kafka's controlled shutdown, as kafka-server-stop.sh), SIGKILL after 30 s."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            if self._archive_written is not None:  # the archive, once whole, where the next broker finds it
                written, final = self._archive_written
                if written.is_file() and process.returncode in (0, 143, -signal.SIGTERM):
                    # Parallel pytest workers' brokers may each write one: each moves its own next to the final
                    # name, then renames it into place (atomic; the last one wins, all are equivalent).
                    partial = final.with_name(f"{final.name}.{os.getpid()}.partial")
                    shutil.move(written, partial)
                    partial.rename(final)
                self._archive_written = None
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _write_tls(self) -> None:
        from kafka_sandbox.certificates import make_certificates

        assert self.workdir is not None
        pki = make_certificates(self.workdir / "pki", name="real-kafka test")
        # Kafka reads PEM key stores from one file: the certificate chain, then the unencrypted PKCS#8 key.
        (self.workdir / "pki" / "server.pem").write_bytes(pki.server_cert.read_bytes() + pki.server_key.read_bytes())
        self.ca_file = pki.ca_cert

    def _write_log_config(self) -> None:
        assert self.workdir is not None
        (self.workdir / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {self.workdir / 'logs' / 'server.log'}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n"
            "logger.kafka.name = kafka\nlogger.kafka.level = INFO\n"
            "logger.state.name = state.change.logger\nlogger.state.level = WARN\n"
        )

    def _properties(self) -> dict[str, str]:
        assert self.workdir is not None
        pki = self.workdir / "pki"
        plain_jaas = (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
                      f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";')
        scram_jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": (f"PLAINTEXT://127.0.0.1:{self.port},SASL_SSL://127.0.0.1:{self.secured_port},"
                          f"CONTROLLER://127.0.0.1:{self.controller_port}"),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},SASL_SSL://127.0.0.1:{self.secured_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
            "log.flush.interval.messages": "9223372036854775807",
            # metadata.max.idle.interval.ms stays at its default: with 0 (no NoOpRecord every 500 ms, an idle
            # broker's CPU 3.4 -> 1.4 CPU-s per 2 min) Kafka 4.1's share groups delivered nothing in 60 s (4 runs of 6).
            # Tests produce records stamped in the past (CreateTime 2026-01-01): time retention (7 days, checked
            # every 5 minutes) would delete those segments mid-test, the active one included, and move the log
            # start to the log end (seen: a reset --to-earliest that planned the end offsets).
            "log.retention.ms": "-1",
            # The secured listener: TLS from PEM files, SASL with SCRAM (credentials in the metadata log) and PLAIN.
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas,
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram_jaas,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram_jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki / "server.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki / "ca.crt"),
            **group_settings(self.version),
        }
        return {**props, **self.settings}


def _java_version() -> str:
    """The running JDK's version (an archive is only valid for the JVM that wrote it)."""
    done = subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                          check=False)
    found = [line.split("=", 1)[1].strip() for line in done.stderr.splitlines() if "java.runtime.version =" in line]
    return (found[0] if found else "unknown").replace("/", "_")


def _cluster_id() -> str:
    """A random cluster id in Kafka's form (a base64url UUID without padding), as `kafka-storage random-uuid`;
    like Kafka's Uuid.randomUuid, never one starting with "-" (the command line would read it as an option)."""
    import base64

    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def main(argv: list[str]) -> int:
    """`scripts/dev.sh kafka [VERSION]`: one broker until Ctrl-C. `--resolve` (scripts/dev.sh test) only
    resolves the versions of KOO_KAFKA_VERSIONS and compiles the Java drivers against them (once, before
    parallel pytest workers would each do it), or says in one line why real Kafka will be skipped."""
    if argv[:1] == ["--resolve"]:
        reason = missing_tools()
        if reason:
            _say_default(f"the real-Kafka tests will be skipped: {reason}")
            return 0
        for v in versions_under_test():
            if v != "sandbox":
                try:
                    resolve(v)
                    from java_clients import compiled_drivers  # late: java_clients imports this module

                    compiled_drivers(v)
                except Unavailable as exc:
                    _say_default(f"the real-Kafka tests of {v} will be skipped: {exc}")
        return 0
    version = versions_under_test(argv[0] if argv else "")[0]
    try:
        broker = RealKafka(version)
        broker.start()
    except Unavailable as exc:
        _say_default(str(exc))
        return 2
    _say_default(f"Apache Kafka {version} is up in {broker.startup_seconds:.1f} s (log: {broker.log_file})")
    print(f"bootstrap (PLAINTEXT): {broker.bootstrap_servers}")
    print(f"bootstrap (SASL_SSL):  {broker.secured_bootstrap_servers}  CA {broker.ca_file}; "
          f"SCRAM-SHA-256/512 user {SCRAM_USER}, PLAIN user {PLAIN_USER} (passwords in tests/support/real_kafka.py)")
    print("Ctrl-C stops it.", flush=True)
    try:
        while broker._process is not None and broker._process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
