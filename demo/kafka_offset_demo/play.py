"""`kafka-offset-demo`: the README's first command (`scripts/dev.sh demo`). The whole product on one machine, no cluster, Docker or network:

1. the sandbox Kafka broker (a wire-protocol simulator) plays a week of consumer groups (story.py);
2. kmock's emulated Kubernetes API serves our CRDs (or, with --real-cluster, a real kube-apiserver with etcd
   and kube-controller-manager, built once by `scripts/dev.sh cluster`), and the operator runs against it;
3. an example ConsumerGroupOffsetPolicy is applied in DryRun, then switched to Approve;
4. the policy's status and the OffsetDeletions it proposed are printed as tables.

Spark starts once, in local mode (10-40 s, depending on the machine); the rest takes seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from kafka_offset_operator.public import (
    API_VERSION,
    BACKUPS_SELECTOR,
    DELETIONS,
    GROUP,
    POLICIES,
    POLICY_KIND,
    POLICY_LABEL,
    VERSION,
    ConnectionSettings,
    KafkaAdmin,
    Kube,
    NotFound,
    OperatorOptions,
    build_crds,
    find_condition,
    load_config,
    parse_iso,
    run_cli,
    run_operator,
    shared_engine,
)
from offset_expiry.session import JavaMissing, check_java

from .control_plane import ApiError, ControlPlane, built_binaries, kubeconfig
from .emulated_cluster import EmulatedCluster
from .story import POLICY_SPEC, STORY, Story, story_broker

PROG = "kafka-offset-demo"
NAMESPACE = "kafka"
POLICY = "stale-offsets"
PROMISE_GROUP = "reporting-old"  # the proposal the demo approves, deletes and restores
RUN_TIMEOUT_S = 300.0


# What a user of --stay-up meets on kmock's emulated API that a real API server does differently (issue 20);
# said in the demo's own output so nobody takes it for Kubernetes' behaviour. `scripts/dev.sh cluster` starts
# a real control plane (docs/real-cluster.md).
EMULATOR_GAPS = (
    "Not faithful on this emulated API (a real one: scripts/dev.sh cluster, docs/real-cluster.md):\n"
    "  kubectl create namespace / create configmap   fail with the emulator's own error text\n"
    "  writes into a namespace that does not exist    accepted (a real API server refuses them)\n"
    "  kubectl delete                                 may wait on its watch: add --wait=false\n"
    "  --field-selector, and kubectl describe's Events  not filtered: other objects' Events may show\n"
    "  a 404                                          says 'not found in the Kubernetes server ... kmock'\n"
    "  CEL rules, RBAC, garbage collection            imitated by the demo, not the API server's own\n"
)


class DemoUsageError(Exception):
    """What stops the demo: one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, metavar="SECONDS",
                   help=f"give up when an analysis takes longer than this (default {RUN_TIMEOUT_S:.0f})")
    p.add_argument("--stay-up", action="store_true",
                   help="after the story, keep the broker, the Kubernetes API and the operator running and print the "
                        "KUBECONFIG to try kubectl with; Ctrl-C (or SIGTERM) stops them. Runs on the real control "
                        "plane where it is built (see --real-cluster), else on the emulated API")
    api = p.add_mutually_exclusive_group()
    api.add_argument("--real-cluster", action="store_true",
                     help="run on a real kube-apiserver, etcd and kube-controller-manager (built once from Go by "
                          "`scripts/dev.sh cluster` into ~/.cache/kafka-offset-operator/kube/) instead of kmock's "
                          "emulated API; the default with --stay-up where they are built")
    api.add_argument("--emulated-api", action="store_true",
                     help="run on kmock's emulated API even with --stay-up where the real control plane is built")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except DemoUsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


class StoryProgress:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.start = time.monotonic()

    def say(self, text: str) -> None:
        self.out.write(f"[{time.monotonic() - self.start:5.1f}s] {text}\n")
        self.out.flush()


def run(args: argparse.Namespace) -> int:
    try:
        check_java()
    except JavaMissing as exc:
        raise DemoUsageError(str(exc)) from None
    binaries = built_binaries()
    real = args.real_cluster or (args.stay_up and not args.emulated_api and binaries is not None)
    if real and binaries is None:
        raise DemoUsageError("--real-cluster: no Kubernetes control plane is built here; `scripts/dev.sh cluster` builds "
                        "it (needs Go 1.26+), or leave the option out to use the emulated API")
    _quiet_logs()
    return Demo(sys.stdout, args.timeout, args.stay_up, binaries if real else None, operator_log()).play()


def _quiet_logs() -> None:
    """The demo prints its own story; libraries only speak up for real trouble."""
    logging.basicConfig(level=logging.CRITICAL)
    for name in ("kopf", "kafka", "kubernetes", "urllib3", "aiohttp", "asyncio", "kmock", "py4j"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def operator_log() -> Path:
    """The operator's own log, as `kafka-offset-operator run` writes it (its audit trail: one line per backup and
    per change of offsets, logger kafka_offset_operator.audit), in a file the demo names and leaves behind; the
    terminal keeps the demo's story."""
    fd, name = tempfile.mkstemp(prefix="koo-demo-operator-", suffix=".log")
    os.close(fd)
    handler = logging.FileHandler(name)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("kafka_offset_operator")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    logger.propagate = False
    return Path(name)


@dataclass(frozen=True)
class Kubernetes:
    """The API the demo runs on: where it listens, the admin kubeconfig, what it is (for people), and what
    kubectl does differently there than on a cluster (said with --stay-up)."""

    url: str
    kubeconfig: Path
    what: str
    gaps: str


@contextlib.contextmanager
def emulated_api(tmp: Path) -> Iterator[Kubernetes]:
    cluster = EmulatedCluster()
    try:
        cluster.start()
        yield Kubernetes(cluster.url, cluster.write_kubeconfig(tmp / "kubeconfig"),
                         "emulated Kubernetes API (kmock)", EMULATOR_GAPS)
    finally:
        if cluster.emulator is not None:
            cluster.stop()


@contextlib.contextmanager
def real_api(tmp: Path, binaries: Path, timeout_s: float) -> Iterator[Kubernetes]:
    """etcd, kube-apiserver and kube-controller-manager on loopback, with the namespace and our CRDs."""
    plane = ControlPlane(binaries, tmp / "kube")
    try:
        try:
            _start_real(plane, timeout_s)
        except (ApiError, RuntimeError, OSError) as exc:
            raise DemoUsageError(f"the real control plane did not start: {str(exc).splitlines()[0]}") from None
        config = tmp / "kubeconfig"  # the admin's, in the demo's namespace as kubectl's default
        config.write_text(yaml.safe_dump(kubeconfig(plane.url, plane.ca.pem, "admin", plane.admin, namespace=NAMESPACE)))
        config.chmod(0o600)
        yield Kubernetes(plane.url, config, f"real Kubernetes API server {binaries.name} (etcd, "
                         "kube-apiserver, kube-controller-manager; no scheduler or kubelet: pods stay Pending)", "")
    finally:
        plane.stop()


def _start_real(plane: ControlPlane, timeout_s: float) -> None:
    """Start it, create the demo's namespace and our CRDs, and wait until the API server serves them."""
    plane.start()
    plane.create_namespace(NAMESPACE)
    crds = list(build_crds().values())
    for crd in crds:
        plane.api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    deadline = time.monotonic() + timeout_s
    for crd in crds:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        while not any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in (plane.api.request("GET", path).get("status") or {}).get("conditions") or ()):
            if time.monotonic() > deadline:
                raise DemoUsageError(f"CRD {crd['metadata']['name']} not Established after {timeout_s:.0f}s")
            time.sleep(0.2)  # polling cadence; the deadline decides


class Demo:
    def __init__(self, out: TextIO, timeout_s: float, stay_up: bool = False, real: Path | None = None,
                 log: Path | None = None) -> None:
        self.out = out
        self.timeout_s = timeout_s
        self.stay_up = stay_up
        self.real = real  # the real control plane's binaries, or None: the emulated API
        self.log = log  # the operator's log file (its audit lines), or None: not kept
        self.progress = StoryProgress(out)
        self.cpu_start = time.process_time()

    def play(self) -> int:
        say = self.progress.say
        self.out.write("kafka-offset-operator demo: a week of consumer groups, a policy, and what the operator does\n\n")
        tmp = Path(tempfile.mkdtemp(prefix="koo-demo-"))
        if self.real is not None:
            say("starting the real control plane (etcd, kube-apiserver, kube-controller-manager) ...")
        try:
            # The API outlives the broker and the story: it is stopped last, as it is started first.
            kubernetes = real_api(tmp, self.real, self.timeout_s) if self.real is not None else emulated_api(tmp)
            with kubernetes as api, story_broker() as broker:
                say(f"sandbox Kafka broker on {broker.bootstrap_servers} (a wire-protocol simulator, not a real broker)")
                if self.log is not None:
                    say(f"the operator's log, with its audit lines (every backup and change of offsets): {self.log}")
                with Story(broker):
                    say("played six days of consumer-group activity on it:")
                    self._story_table()
                    self._play(broker.bootstrap_servers, api)
            return 0
        finally:
            shared_engine().close()
            shutil.rmtree(tmp, ignore_errors=True)

    def _play(self, servers: str, api: Kubernetes) -> None:
        say = self.progress.say
        kube = Kube(load_config(api.kubeconfig))
        say(f"{api.what} on {api.url}, serving the CRDs of crds/")
        operator = OperatorThread(api.kubeconfig)
        operator.start()
        say(f"operator started under Kopf, watching namespace {NAMESPACE}")
        try:
            self._apply(kube, {"kafka": {"bootstrapServers": servers}, **POLICY_SPEC, "mode": "DryRun"})
            say(f"applied ConsumerGroupOffsetPolicy {NAMESPACE}/{POLICY} in mode DryRun; "
                "the analysis starts Spark (local mode) ...")
            first = self._wait_run(kube, None)
            say(f"DryRun analysis done: {first['lastRun']['candidates']} candidate offsets, nothing proposed, "
                "nothing written to Kafka")
            self._say_keep_alive(first)
            kube.patch_object(GROUP, VERSION, POLICIES, NAMESPACE, POLICY, {"spec": {"mode": "Approve"}})
            say("switched the policy to mode Approve ...")
            status = self._wait_run(kube, first["lastRun"]["completionTime"])
            created = status["lastRun"]["deletionsCreated"]
            say(f"Approve analysis done: {created} OffsetDeletions proposed, waiting for approval")
            self._say_keep_alive(status)
            children = self._wait_children(kube, created)
            promise = self._approve_delete_restore(kube, servers, children, api.kubeconfig)
            self._report(status, children, promise)
            self._timing()
            if self.stay_up:
                self._wait_for_stop(servers, api)
        finally:
            operator.stop()
            kube.close()

    def _report(self, status: Mapping[str, Any], children: Sequence[Mapping[str, Any]], promise: Sequence[str]) -> None:
        self.out.write("\n")
        self._policy_table(status)
        self._deletions_table(children)
        self.out.write("\nThe safety promise, played on one proposal (docs/safety.md)\n")
        for line in promise:
            self.out.write(f"  {line}\n")
        approve = f"kubectl -n {NAMESPACE} patch offsetdeletion NAME --type merge -p '{{\"spec\":{{\"approved\":true}}}}'"
        if self.stay_up:
            self.out.write(f"\nThe other proposals wait: approving one runs it (backup first, restore possible):\n  {approve}\n")
        else:
            self.out.write("\nThe other proposals wait for approval. To approve one yourself, and try kubectl on all of "
                           f"this, run the demo with --stay-up ({PROG} --stay-up).\n")
        self.out.flush()

    def _timing(self) -> None:
        """The demo's own figures (the README's are checked against the recorded ones: tests/unit/test_figures.py)."""
        wall, cpu = time.monotonic() - self.progress.start, time.process_time() - self.cpu_start
        self.out.write(f"\nThe demo took {wall:.0f} s of wall time ({cpu:.0f} s of CPU in this process, Spark's JVM apart)")
        if self.log is not None:
            self.out.write(f"; the operator's audit lines are in {self.log}")
        self.out.write(".\n")
        self.out.flush()

    def _wait_for_stop(self, bootstrap: str, api: Kubernetes) -> None:
        """Everything stays up until Ctrl-C or SIGTERM; the temporary kubeconfig lives as long."""
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        self.out.write(
            f"\nThe demo stays up: sandbox Kafka on {bootstrap}, {api.what} on {api.url}, the operator "
            f"running. In another terminal:\n"
            f"  export KUBECONFIG={api.kubeconfig}\n"
            f"  kubectl get kafka                      # policies and OffsetDeletions (category kafka)\n"
            f"  kubectl get od -o wide\n"
            f"  kubectl explain cgop.spec.rules\n"
            f"  kubectl get configmaps -l {BACKUPS_SELECTOR}\n"
            f"{api.gaps}"
            f"Ctrl-C stops it.\n")
        self.out.flush()
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
        self.out.write(f"stopping: operator, {'real control plane' if self.real else 'emulated API'}, sandbox broker\n")

    def _say_keep_alive(self, status: Mapping[str, Any]) -> None:
        """What keep-alive did (Approve, Auto) or would do (DryRun), from the run's Ready condition."""
        _, _, kept = _condition(status, "Ready").get("message", "").partition("keep-alive: ")
        if kept:
            self.progress.say(f"keep-alive of protected groups: {kept}")

    # -- talking to the emulated API

    def _apply(self, kube: Any, spec: Mapping[str, Any]) -> None:
        kube.create_object(GROUP, VERSION, POLICIES, NAMESPACE, {
            "apiVersion": API_VERSION, "kind": POLICY_KIND,
            "metadata": {"name": POLICY, "namespace": NAMESPACE}, "spec": dict(spec)})

    def _poll(self, check: Callable[[], dict[str, Any] | None], what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while True:
            found = check()
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise DemoUsageError(f"timed out after {self.timeout_s:.0f}s waiting for {what}")
            time.sleep(0.2)  # polling cadence; the deadline decides

    def _wait_run(self, kube: Any, after: str | None) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            status = kube.get_custom(POLICIES, NAMESPACE, POLICY).get("status") or {}
            ready = _condition(status, "Ready")
            last = (status.get("lastRun") or {}).get("completionTime")
            if ready.get("status") == "True" and last and last != after:
                return dict(status)
            if ready.get("status") == "False" and ready.get("reason") not in (None, "AnalysisRunning"):
                raise DemoUsageError(f"the policy's analysis failed: {ready.get('reason')}: {ready.get('message')}")
            return None

        return self._poll(check, "the policy's analysis")

    def _wait_children(self, kube: Any, count: int) -> list[dict[str, Any]]:
        def check() -> dict[str, Any] | None:
            found = kube.list_objects(GROUP, VERSION, DELETIONS, NAMESPACE, {POLICY_LABEL: POLICY})
            if len(found) >= count and all((d.get("status") or {}).get("phase") for d in found):
                return {"items": found}
            return None

        return list(self._poll(check, "the OffsetDeletions' first status")["items"])

    def _approve_delete_restore(self, kube: Any, servers: str, children: Sequence[Mapping[str, Any]],
                                kubeconfig: Path) -> list[str]:
        """Approve one proposal, show its results and where its backup is, delete the OffsetDeletion, and
        restore its offsets from the backup alone (the `restore` command)."""
        say = self.progress.say
        child = next(c for c in children if c["spec"]["group"] == PROMISE_GROUP)
        name, group = child["metadata"]["name"], child["spec"]["group"]
        before = _committed(servers, group)
        kube.patch_object(GROUP, VERSION, DELETIONS, NAMESPACE, name, {"spec": {"approved": True}})
        say(f"approved OffsetDeletion {name} (group {group}) ...")

        def finished() -> dict[str, Any] | None:
            status = kube.get_custom(DELETIONS, NAMESPACE, name).get("status") or {}
            return status if status.get("phase") in ("Succeeded", "PartiallyFailed", "Failed") else None

        status = self._poll(finished, f"OffsetDeletion {name}")
        backup = status["backup"]["name"]
        lines = [f"OffsetDeletion {name} approved: {status['phase']}, {status['deleted']} offsets of group {group} "
                 f"deleted; per partition:"]
        lines += [f"  {r['topic']}[{r['partition']}]  {r['status']}" for r in status["results"] if "partition" in r]
        lines.append(f"its backup: ConfigMap {NAMESPACE}/{backup} (kubectl get configmaps -l {BACKUPS_SELECTOR})")
        kube.delete_object(GROUP, VERSION, DELETIONS, NAMESPACE, name)

        def gone() -> dict[str, Any] | None:
            try:
                kube.get_custom(DELETIONS, NAMESPACE, name)
            except NotFound:
                return {}
            return None

        self._poll(gone, f"OffsetDeletion {name} to be deleted")
        say(f"deleted OffsetDeletion {name}; restoring group {group} from its backup alone ...")
        lines.append(f"kubectl delete offsetdeletion {name}: gone; the backup stays, and the group has "
                     f"{len(_committed(servers, group))} committed offsets")
        lines.append(f"$ kafka-offset-operator restore --backup {NAMESPACE}/{backup} --execute")
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = run_cli(["restore", "--backup", f"{NAMESPACE}/{backup}", "--kubeconfig", str(kubeconfig),
                             "--execute"])
        lines += [f"  {line}" for line in buffer.getvalue().splitlines()]
        after = _committed(servers, group)
        if code != 0 or after != before:
            raise DemoUsageError(f"the restore of group {group} did not bring its offsets back ({before} -> {after})")
        lines.append(f"group {group} has its {len(after)} offsets back, exactly as before the deletion")
        return lines

    # -- tables

    def _story_table(self) -> None:
        self._table(["GROUP", "WHAT HAPPENED", "KIND"], [list(row) for row in STORY], indent="    ")

    def _policy_table(self, status: Mapping[str, Any]) -> None:
        last = status["lastRun"]
        ready, degraded = _condition(status, "Ready"), _condition(status, "Degraded")
        reasons = ", ".join(f"{r} {n}" for r, n in last["candidatesByReason"].items() if n) or "none"
        self.out.write(f"ConsumerGroupOffsetPolicy {NAMESPACE}/{POLICY}\n")
        self._table(["FIELD", "VALUE"], [
            ["mode", "Approve"],
            ["Ready", f"{ready.get('status')} ({ready.get('reason')})"],
            ["", ready.get("message", "")],
            ["Degraded", f"{degraded.get('status')} ({degraded.get('reason')})"],
            ["last run", f"{last['completionTime']}, engine {last['engine']}"],
            ["scanned", f"{last['recordsScanned']} records of __consumer_offsets, {last['groupsSeen']} groups, "
                        f"{last['offsets']} committed offsets"],
            ["candidates", f"{last['candidates']} ({reasons})"],
            ["deletions", f"{last['deletionsCreated']} created by this run"],
            ["next run", status.get("nextRunTime", "-")],
        ], indent="  ", show_header=False)
        self.out.write("\nTop candidate groups (status.topCandidates)\n")
        self._table(["GROUP", "PARTITIONS", "TOPICS", "REASON", "BROKER EXPIRES THEM"], [
            [c["group"], str(c["partitions"]), ", ".join(c["topics"]), c["reason"], _relative(c.get("brokerExpiresAt"))]
            for c in status.get("topCandidates") or ()
        ], indent="  ")

    def _deletions_table(self, children: Sequence[Mapping[str, Any]]) -> None:
        self.out.write("\nOffsetDeletions created by the policy\n")
        rows = []
        for d in sorted(children, key=lambda d: d["spec"]["group"]):
            topics = " ".join(f"{t['name']}{t.get('partitions', '')}".replace(" ", "") for t in d["spec"]["topics"])
            rows.append([d["metadata"]["name"], d["spec"]["group"], topics, (d.get("status") or {}).get("phase", "-"),
                         str(d["spec"].get("approved", False)).lower()])
        self._table(["NAME", "GROUP", "TOPICS[PARTITIONS]", "PHASE", "APPROVED"], rows, indent="  ")

    def _table(self, header: list[str], rows: list[list[str]], indent: str = "", show_header: bool = True) -> None:
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for line in [header, *rows] if show_header else rows:
            self.out.write(indent + "  ".join(str(v).ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n")


def _relative(when: str | None) -> str:
    """"in 1d 4h" from an RFC 3339 time (the broker's expiry, which the policy's rules come before)."""
    at = parse_iso(when)
    if at is None:
        return "never"
    minutes = max(0, (at - int(time.time() * 1000)) // 60_000)
    days, rest = divmod(minutes, 1440)
    return f"in {days}d {rest // 60}h" if days else f"in {rest // 60}h {rest % 60}m"


def _committed(servers: str, group: str) -> dict[tuple[str, int], int]:
    with KafkaAdmin(ConnectionSettings(servers)) as admin:
        return {tp: c.offset for tp, c in admin.committed_offsets(group).items()}


def _condition(status: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The operator's own lookup (decisions.conditions.find), {} when the status has no such condition yet."""
    return dict(find_condition(status.get("conditions"), kind) or {})


class OperatorThread:
    """The operator (the same run_operator as `kafka-offset-operator run`) in a thread with its own loop."""

    def __init__(self, kubeconfig: Path) -> None:
        self.options = OperatorOptions(namespaces=(NAMESPACE,), kubeconfig=kubeconfig, retry_interval=1.0)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(run_operator(self.options, stop_flag=self._stop, ready_flag=self._ready))
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise DemoUsageError(f"the operator did not start: {self._error!r}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


if __name__ == "__main__":
    sys.exit(main())
