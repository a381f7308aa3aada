"""What the Kubernetes fault tests share: the writes an OffsetDeletion makes, as emulator criteria (one per
Kubernetes-visible step), and the end-state checks on Kafka and on the backup store."""

from __future__ import annotations

import base64
import collections
import json
import threading
from collections.abc import Callable
from typing import Any

import kmock
from operator_harness import GROUP_VERSION, NAMESPACE, Kube, KubeApiError

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.model.backups import BACKUP_KEY, BackupRecord, decode
from kafka_offsets_model.codec import decode_record
from offset_expiry import results_sink

BACKUP_LABEL = "kafkaoffsets.dev/backup"
MAIN = kmock.K8sCriteria(subresource=None)  # the object itself, not its status


def _body_has(*parts: bytes) -> Callable[[kmock.Request], bool]:
    return lambda r: all(p in r.body for p in parts)


def status_write(**fields: Any) -> tuple[Any, ...]:
    """A status patch of an OffsetDeletion that sets `fields` (Ellipsis: any value)."""
    return "patch offsetdeletions", kmock.subresource("status"), kmock.data({"status": fields})


# The Kubernetes-visible steps of an approved OffsetDeletion, in the order they happen, each as the criteria of
# its write (with the deletion's name added by the test).
DELETION_STEPS: dict[str, tuple[Any, ...]] = {
    "finalizer-added": ("patch offsetdeletions", MAIN, _body_has(b'"add"', b'"/metadata/finalizers"')),
    "backup-configmap-created": ("create configmaps", kmock.data({"metadata": {"labels": {BACKUP_LABEL: "true"}}})),
    "status-backed-up-target-frozen": status_write(phase="Running", target=..., backup=...),
    "status-delete-started": status_write(deleteStartTime=...),
    "status-succeeded": status_write(phase="Succeeded"),
    "finalizer-removed-on-delete": ("patch offsetdeletions", MAIN, _body_has(b'"remove"', b'"/metadata/finalizers"')),
}


def step_criteria(step: str, name: str) -> tuple[Any, ...]:
    """The criteria of `step`'s write for the OffsetDeletion `name` (its backup: the one it asked for)."""
    if step == "backup-configmap-created":
        return (*DELETION_STEPS[step], kmock.data({"metadata": {"labels": {"kafkaoffsets.dev/source-name": name}}}))
    return (*DELETION_STEPS[step], kmock.name(name))


def deletion(name: str, bootstrap: str, group: str, *, approved: bool = True) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": "OffsetDeletion", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"kafka": {"bootstrapServers": bootstrap}, "group": group, "topics": [{"name": "orders"}],
                     "approved": approved}}


def offset_tombstones(bootstrap: str, group: str) -> collections.Counter[tuple[str, int]]:
    """How many times each partition's committed offset of `group` was deleted: the OffsetCommit tombstones in
    `__consumer_offsets` (an OffsetDelete writes one per partition it deletes; Kafka keeps them all until
    compaction, which never touches the active segment: 100 MiB, offsets.topic.segment.bytes; the sandbox
    does not compact)."""
    counts: collections.Counter[tuple[str, int]] = collections.Counter()
    with OffsetsTopicReader(bootstrap) as reader:
        for rec in reader.records([reader.partition_for(group)], from_beginning=True, follow=False):
            if rec.value is not None:
                continue
            decoded = decode_record(rec.key, None)
            key = decoded["key"]
            if decoded["type"] == "OffsetCommit" and key.get("group") == group:
                counts[(key["topic"], key["partition"])] += 1
    return counts


def backups(kube: Kube, source: str) -> list[BackupRecord]:
    """The stored backups a resource asked for (the backup store's ConfigMaps, decoded)."""
    found = []
    for cm in kube.list("v1", "configmaps"):
        labels = cm["metadata"].get("labels") or {}
        if labels.get(BACKUP_LABEL) == "true" and labels.get("kafkaoffsets.dev/source-name") == source:
            found.append(decode(base64.b64decode(cm["binaryData"][BACKUP_KEY])))
    return found


def assert_deleted_once_with_a_backup(bootstrap: str, kube: Kube, source: str, group: str,
                                      before: dict[tuple[str, int], int]) -> None:
    """Nothing deleted twice, nothing deleted without a stored backup holding its offset from before."""
    tombstones = offset_tombstones(bootstrap, group)
    assert set(tombstones) == set(before), tombstones
    assert all(n == 1 for n in tombstones.values()), f"deleted more than once: {tombstones}"
    stored = [b for b in backups(kube, source) if b.group == group]
    assert len(stored) == 1, stored  # one backup per change, however many visits and processes
    assert {tp: c.offset for tp, c in stored[0].offsets.items()} == before


# -- a policy run without Spark: spark-operator's part played at once, with results the test chooses

APPS = "sparkoperator.k8s.io/v1beta2"
RESULTS = ("good", "missing", "garbage", "truncated", "wrong-schema")


def candidate_rows(group: str, offsets: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    """The analysis' rows for a simple group whose offsets are all candidates (Standalone)."""
    return [{"group": group, "groupType": "classic", "groupState": "Empty", "protocolType": "", "topic": t,
             "partition": p, "offset": o, "commitTimestamp": 1, "candidate": True, "reason": "Standalone"}
            for (t, p), o in sorted(offsets.items())]


class InstantSparkOperator:
    """Completes every SparkApplication at once: writes its results ConfigMaps (as offset_expiry/results_sink.py
    lays them out: parts, then the manifest) holding `rows`, or what `results` says goes wrong with them,
    then status COMPLETED. The analysis itself is not what these tests are about, so nothing runs Spark."""

    def __init__(self, kube: Kube, rows: list[dict[str, Any]], poll_s: float = 0.1) -> None:
        self.kube = kube
        self.rows = rows
        self.results = "good"
        self.poll_s = poll_s
        self.seen: list[str] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="instant-spark-operator", daemon=True)

    def __enter__(self) -> InstantSparkOperator:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self.errors, self.errors

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                for app in self.kube.list(APPS, "sparkapplications"):
                    if app["metadata"]["uid"] not in self.seen:
                        self.seen.append(app["metadata"]["uid"])
                        threading.Thread(target=self._guarded, args=(app,), daemon=True).start()
            except Exception as exc:  # reported at the end
                self.errors.append(exc)
                return

    def _guarded(self, app: dict[str, Any]) -> None:
        try:
            self._complete(app)
        except KubeApiError as exc:
            if exc.status != 404:  # deleted meanwhile
                self.errors.append(exc)
        except Exception as exc:
            self.errors.append(exc)

    def _complete(self, app: dict[str, Any]) -> None:
        args = app["spec"]["arguments"]
        target = results_sink.parse_target(args[args.index("--results") + 1])
        summary = {"recordsScanned": len(self.rows), "groups": 1, "offsets": len(self.rows)}
        doc: dict[str, Any] = {"summary": summary, "offsets": self.rows}
        if self.results == "wrong-schema":
            doc = {"offsets": "all of them"}
        parts = results_sink.split(results_sink.encode(doc))
        manifest = json.dumps(results_sink.manifest(target, parts)).encode()
        if self.results == "truncated":
            parts = [p[: len(p) // 2] for p in parts]
        if self.results == "garbage":
            manifest = b"\x00\x01 not a manifest {"
        state: dict[str, Any] = {"state": "COMPLETED"}
        try:
            if self.results != "missing":
                for i, part in enumerate(parts):
                    self._put(target, target.part_name(i), results_sink.PART_KEY, part)
                self._put(target, target.name, results_sink.MANIFEST_KEY, manifest)
        except KubeApiError as exc:  # the job exits 1 (results_sink raises InputError): the driver failed
            state = {"state": "FAILED", "errorMessage": f"--results: cannot write ConfigMap: HTTP {exc.status}"}
        # driverInfo is in every status spark-operator writes; kubeflow's schema (the real API server) requires it.
        self.kube.patch(APPS, "sparkapplications", app["metadata"]["name"],
                        {"status": {"applicationState": state, "driverInfo": {}}}, subresource="status")

    def _put(self, target: results_sink.Target, name: str, key: str, value: bytes) -> None:
        meta: dict[str, Any] = {"name": name, "namespace": target.namespace, "labels": dict(target.labels)}
        if target.owner is not None:
            meta["ownerReferences"] = [dict(target.owner)]
        self.kube.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                                        "binaryData": {key: base64.b64encode(value).decode()}})


def policy(name: str, bootstrap: str, group: str, mode: str = "Approve") -> dict[str, Any]:
    """A policy on `group` with the SparkApplication engine, a long interval (one run unless it fails)."""
    return {"apiVersion": GROUP_VERSION, "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"kafka": {"bootstrapServers": bootstrap}, "mode": mode, "groups": {"include": [group]},
                     "schedule": {"interval": "1h"},
                     "analysis": {"engine": "SparkApplication", "brokerRetention": "7d",
                                  "sparkApplication": {"image": "example/koo:1"}}}}


# The Kubernetes-visible steps of a policy run (SparkApplication engine), each as the criteria of its write.
POLICY_STEPS: dict[str, tuple[Any, ...]] = {
    "results-configmap-written": ("create configmaps", lambda r: b'"manifest.json"' in r.body),
    "proposal-created": ("create offsetdeletions",),
    "policy-status-written": ("patch consumergroupoffsetpolicies", kmock.subresource("status"),
                              kmock.data({"status": {"lastRun": ...}})),
}
