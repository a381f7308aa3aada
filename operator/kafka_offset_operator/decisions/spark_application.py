"""The SparkApplication engine's decisions: the `sparkoperator.k8s.io/v1beta2` SparkApplication that runs
offset_expiry/job.py in the cluster (kubeflow spark-operator), and what its status means. No I/O.

- The application is owned by the policy (ownerReference), labelled with the policy and the run id, so the
  operator finds a run again after a restart and Kubernetes removes it with the policy.
- The policy's analysis spec travels in a ConfigMap (`--policy configmap://...`), the results come back in
  ConfigMaps (`--results configmap://...`, offset_expiry/results_sink.py); credentials come from the
  policy's Secrets as environment variables and mounted files (offset_expiry/client_env.py), on the driver
  and the executors (both read Kafka). The driver's service account needs get/create on ConfigMaps.
- Shared runs (issue 12): the policies of ONE namespace whose runs may share a scan (the same
  scan_sharing.share_key: cluster and credentials) and whose applications would be alike (image, service
  account, driver and executor: `batch_key`) run as one application `shared-analysis-<run id>` owned by all
  of them (one ownerReference each, none a controller: Kubernetes deletes it once every owner is gone), its
  members (name, uid, results ConfigMap) in an annotation, so any member finds it again after an operator
  restart. `job.py` gets `--policy`, `--results` and `--broker-retention` once per member, in the same order;
  the policies travel in one ConfigMap, one key per member; each member's results in its own ConfigMaps,
  owned by that member. `batch_disposal` says when the operator deletes a shared application.
- Memory: the executors' pods get Spark's own overhead for a PySpark pod plus a Python worker's share per core
  (`executor.memoryOverhead`, spark_memory.executor_overhead_mib: Spark's alone was outgrown at 5M records);
  the driver's is Spark's.
- spark-operator's states (status.applicationState.state): "" and SUBMITTED, RUNNING, PENDING_RERUN,
  INVALIDATING, SUCCEEDING, UNKNOWN are still running; COMPLETED is done; FAILED, SUBMISSION_FAILED and
  FAILING are failures (applicationState.errorMessage says why).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from offset_expiry.client_env import PREFIX

from ..model.api import GROUP, MANAGED_BY, POLICY_LABEL, RUN_LABEL
from ..model.connection import ConnectionSettings, SecretKey
from ..model.times import iso
from .policy_spec import PodResources, PolicySpec
from .spark_memory import executor_overhead_mib

SPARK_GROUP = "sparkoperator.k8s.io"
SPARK_VERSION = "v1beta2"
SPARK_PLURAL = "sparkapplications"
SPARK_RELEASE = "4.0.0"  # spec.sparkVersion: informational for spark-operator
DEFAULT_MAIN_FILE = "local:///opt/kafka-offset-operator/spark/offset_expiry/job.py"
TLS_MOUNT = "/etc/kafka-offset-operator/tls"

FAILED_STATES = frozenset({"FAILED", "SUBMISSION_FAILED", "FAILING"})
COMPLETED = "COMPLETED"


class Phase(StrEnum):
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


@dataclass(frozen=True)
class AppState:
    phase: Phase
    state: str
    message: str


def _dns_label(text: str) -> str:
    """Lowercase letters, digits and '-', starting with a letter (driver pod and service names)."""
    out = re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")
    return out if out[:1].isalpha() else f"p-{out}"


BATCH_LABEL = f"{GROUP}/batch"  # on a shared application: its batch key (cut to a label value)
MEMBERS_ANNOTATION = f"{GROUP}/members"  # on a shared application: its members, JSON
MAX_SHARE = 100  # policies in one application: bounds its arguments (three per member) and the policies' ConfigMap


def application_name(policy: str, run_id: str) -> str:
    return f"{_dns_label(policy)[:40].rstrip('-')}-analysis-{run_id[:8]}"


def policy_configmap_name(app: str) -> str:
    return f"{app}-policy"


def results_configmap_name(app: str) -> str:
    return f"{app}-results"


def run_labels(policy: str, run_id: str) -> dict[str, str]:
    return {**MANAGED_BY, POLICY_LABEL: policy, RUN_LABEL: run_id}


def results_url(policy_body: Mapping[str, Any], owner: Mapping[str, Any], app: str, run_id: str,
                results: str | None = None) -> str:
    """Where the driver writes the results (ConfigMap `results`, default `<app>-results`): ConfigMaps owned
    like the application (`owner`; a shared run's member: by that member)."""
    meta = policy_body["metadata"]
    query = {
        "ownerApiVersion": owner["apiVersion"],
        "ownerKind": owner["kind"],
        "ownerName": owner["name"],
        "ownerUid": owner.get("uid") or "",
        "runId": run_id,
        **{f"label.{k}": v for k, v in run_labels(meta["name"], run_id).items()},
    }
    return f"configmap://{meta['namespace']}/{results or results_configmap_name(app)}?{urlencode(query)}"


def credential_env(settings: ConnectionSettings) -> list[dict[str, Any]]:
    """Environment variables for the job: literal settings, and secret values as secretKeyRefs to the Secrets
    they were read from (the values never pass through the operator into the SparkApplication)."""
    env: list[dict[str, Any]] = [{"name": f"{PREFIX}SECURITY_PROTOCOL", "value": settings.security_protocol}]
    sources = settings.sources
    if settings.sasl_mechanism:
        env.append({"name": f"{PREFIX}SASL_MECHANISM", "value": settings.sasl_mechanism})
        if sources.username is not None:
            env.append(_secret_env("SASL_USERNAME", sources.username))
        else:  # not a secret: a Strimzi KafkaUser's name
            env.append({"name": f"{PREFIX}SASL_USERNAME", "value": settings.username or ""})
        if sources.password is not None:
            env.append(_secret_env("SASL_PASSWORD", sources.password))
    if sources.ca is not None:
        env.append({"name": f"{PREFIX}SSL_CAFILE", "value": f"{TLS_MOUNT}/ca/{sources.ca.key}"})
    if sources.cert is not None and sources.key is not None:
        env.append({"name": f"{PREFIX}SSL_CERTFILE", "value": f"{TLS_MOUNT}/client/{sources.cert.key}"})
        env.append({"name": f"{PREFIX}SSL_KEYFILE", "value": f"{TLS_MOUNT}/client/{sources.key.key}"})
    return env


def _secret_env(var: str, source: SecretKey) -> dict[str, Any]:
    return {"name": PREFIX + var, "valueFrom": {"secretKeyRef": {"name": source.secret, "key": source.key}}}


def tls_secrets(settings: ConnectionSettings) -> list[dict[str, str]]:
    """spark-operator's `secrets` (mounted Secret volumes) for the TLS files: the CA's Secret, and the one
    holding the client certificate and its key."""
    out = []
    if settings.sources.ca is not None:
        out.append({"name": settings.sources.ca.secret, "path": f"{TLS_MOUNT}/ca", "secretType": "Generic"})
    if settings.sources.cert is not None:
        out.append({"name": settings.sources.cert.secret, "path": f"{TLS_MOUNT}/client", "secretType": "Generic"})
    return out


def _pod(resources: PodResources, env: list[dict[str, Any]], secrets: list[dict[str, str]],
         labels: Mapping[str, str]) -> dict[str, Any]:
    pod: dict[str, Any] = {"cores": resources.cores, "memory": resources.memory, "labels": dict(labels), "env": env}
    if secrets:
        pod["secrets"] = secrets
    return pod


def manifest(policy_body: Mapping[str, Any], owner: Mapping[str, Any], spec: PolicySpec, settings: ConnectionSettings,
             run_id: str, *, image: str, main_file: str = DEFAULT_MAIN_FILE, retention_ms: int | None = None,
             now_ms: int | None = None) -> dict[str, Any]:
    meta = policy_body["metadata"]
    app = application_name(meta["name"], run_id)
    labels = run_labels(meta["name"], run_id)
    arguments = run_arguments(policy_body, owner, settings, app, run_id, retention_ms=retention_ms, now_ms=now_ms)
    return _application(app, meta["namespace"], labels, {}, [dict(owner)], arguments, spec, settings, image, main_file)


def run_arguments(policy_body: Mapping[str, Any], owner: Mapping[str, Any], settings: ConnectionSettings, app: str,
                  run_id: str, *, retention_ms: int | None = None, now_ms: int | None = None) -> list[str]:
    """job.py's arguments for one policy's own run named `app` (shared with the Job engine,
    decisions/kube_job.py): its policy and results ConfigMaps."""
    namespace = policy_body["metadata"]["namespace"]
    arguments = [
        "--bootstrap-server", settings.bootstrap_servers,
        "--policy", f"configmap://{namespace}/{policy_configmap_name(app)}",
        "--results", results_url(policy_body, owner, app, run_id),  # the driver log gets the table for people
    ]
    if retention_ms is not None:
        arguments += ["--broker-retention", f"{retention_ms // 60_000}m"]
    if now_ms is not None:
        arguments += ["--now", _iso_ms(now_ms)]
    return arguments


def start_up_conf(cores: int) -> dict[str, str]:
    """Spark settings every run of the job gets, wherever Spark starts (issue 22; offset_expiry.session does the
    same for the CLI and the Local engine): no UI or console progress, Arrow, UTC, Python workers reused across
    tasks, one Python worker daemon per executor (the SPARK_SIMPLIFIED_TRACEBACK variable that Spark's Python
    runners add to their workers' environment, for every worker: see offset_expiry.session.DEFAULTS), and as
    many shuffle partitions as two waves of the run's cores (Spark's default, 200, is 200 tasks for a shared
    run's few rows, each a Python worker's round trip)."""
    return {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.execution.arrow.pyspark.enabled": "true", "spark.sql.session.timeZone": "UTC",
            "spark.python.worker.reuse": "true", "spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK": "1",
            "spark.sql.shuffle.partitions": str(max(2 * cores, 4))}


def _application(app: str, namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str],
                 owners: list[dict[str, Any]], arguments: list[str], spec: PolicySpec, settings: ConnectionSettings,
                 image: str, main_file: str) -> dict[str, Any]:
    env = credential_env(settings)
    secrets = tls_secrets(settings)
    driver = _pod(spec.spark.driver, env, secrets, labels)
    if spec.spark.service_account:
        driver["serviceAccount"] = spec.spark.service_account
    executor = _pod(spec.spark.executor, env, secrets, labels)
    executor["instances"] = spec.spark.executor.instances
    # Spark's overhead leaves the Python workers next to nothing (spark_memory): the pod gets theirs too.
    resources = spec.spark.executor
    executor["memoryOverhead"] = f"{executor_overhead_mib(resources.memory, resources.cores, resources.memory_overhead)}m"
    metadata: dict[str, Any] = {"name": app, "namespace": namespace, "labels": dict(labels), "ownerReferences": owners}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": f"{SPARK_GROUP}/{SPARK_VERSION}",
        "kind": "SparkApplication",
        "metadata": metadata,
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": main_file,
            "arguments": arguments,
            "sparkVersion": SPARK_RELEASE,
            "sparkConf": start_up_conf(spec.spark.executor.cores * spec.spark.executor.instances),
            "restartPolicy": {"type": "Never"},
            "driver": driver,
            "executor": executor,
        },
    }


# -- shared runs (issue 12)


def batch_key(namespace: str, share_key: str, spec: PolicySpec, image: str) -> str:
    """Equal for two runs exactly when they may share one application: the same namespace (ownerReferences,
    the Secrets the application reads and the driver's service account are all namespaced), the same cluster
    and credentials (`share_key`: then the first member's Secrets hold what every member's hold), and the
    same application (image, service account, driver and executor)."""
    spark = spec.spark
    parts = [namespace, share_key, image, spark.service_account or "",
             [spark.driver.cores, spark.driver.memory], [spark.executor.cores, spark.executor.memory,
                                                        spark.executor.instances]]
    if spark.executor.memory_overhead is not None:  # only then: the keys of runs without one stay as they were
        parts.append(spark.executor.memory_overhead)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def shared_application_name(run_id: str) -> str:
    return f"shared-analysis-{run_id[:8]}"


def member_results_name(app: str, index: int) -> str:
    return f"{app}-results-{index}"


def member_policy_key(index: int) -> str:
    return f"policy-{index}.yaml"


@dataclass(frozen=True)
class BatchMember:
    """One policy of a shared application: who it is (the uid tells a re-created policy of the same name
    apart) and where its results go."""

    name: str
    uid: str
    results: str


@dataclass(frozen=True)
class BatchRun:
    """One member's part of a shared run, as the engine gives it: the policy, the owner reference built for it,
    its analysis spec (the ConfigMap's content) and its broker retention."""

    body: Mapping[str, Any]
    owner: Mapping[str, Any]
    retention_ms: int


def batch_manifest(runs: Sequence[BatchRun], spec: PolicySpec, settings: ConnectionSettings, run_id: str, key: str,
                   *, image: str, main_file: str = DEFAULT_MAIN_FILE) -> dict[str, Any]:
    """The shared application of `runs` (one namespace, one batch key): the first member's connection and
    Secrets (the same share key: the same credentials), every member's policy, results and retention."""
    namespace = runs[0].body["metadata"]["namespace"]
    app = shared_application_name(run_id)
    labels = batch_labels(key, run_id)
    arguments, members = batch_arguments(runs, settings, app, run_id)
    annotations = {MEMBERS_ANNOTATION: encode_members(members)}
    return _application(app, namespace, labels, annotations, [dict(r.owner) for r in runs], arguments, spec, settings,
                        image, main_file)


def batch_arguments(runs: Sequence[BatchRun], settings: ConnectionSettings, app: str,
                    run_id: str) -> tuple[list[str], list[BatchMember]]:
    """job.py's arguments for the shared run `app` of `runs` (shared with the Job engine), and its members."""
    namespace = runs[0].body["metadata"]["namespace"]
    arguments = ["--bootstrap-server", settings.bootstrap_servers]
    members = []
    for index, run in enumerate(runs):
        results = member_results_name(app, index)
        arguments += [
            "--policy", f"configmap://{namespace}/{policy_configmap_name(app)}?{urlencode({'key': member_policy_key(index)})}",
            "--results", results_url(run.body, run.owner, app, run_id, results),
            "--broker-retention", f"{run.retention_ms // 60_000}m",
        ]
        members.append(BatchMember(run.body["metadata"]["name"], str(run.body["metadata"].get("uid") or ""), results))
    return arguments, members


def batch_labels(key: str, run_id: str) -> dict[str, str]:
    return {**MANAGED_BY, BATCH_LABEL: key[:63], RUN_LABEL: run_id}


def encode_members(members: Sequence[BatchMember]) -> str:
    return json.dumps([{"name": m.name, "uid": m.uid, "results": m.results} for m in members], separators=(",", ":"))


def members_of(app: Mapping[str, Any]) -> list[BatchMember]:
    """A shared application's members, from its annotation (none when it is missing or unreadable). The
    results ConfigMap is the one the operator named by the member's place, whatever the annotation says: the
    operator deletes it, and an edited annotation must not point it at another ConfigMap (a backup)."""
    meta = app.get("metadata") or {}
    text = (meta.get("annotations") or {}).get(MEMBERS_ANNOTATION) or "[]"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return []
    if not isinstance(doc, list):
        return []
    return [BatchMember(str(m.get("name", "")), str(m.get("uid", "")), member_results_name(str(meta.get("name", "")), i))
            for i, m in enumerate(doc) if isinstance(m, dict)]


def member_of(app: Mapping[str, Any], uid: str) -> BatchMember | None:
    return next((m for m in members_of(app) if m.uid == uid), None)


def batch_disposal(phase: Phase, members: Collection[str], alive: Collection[str], unread: Collection[str],
                   *, keep_failed: bool) -> bool:
    """Whether the operator deletes a shared application now (with its ConfigMaps). `members`: the uids of
    its members; `alive`: those whose policy still exists and is not being deleted; `unread`: those whose
    results manifest is still there (written, not yet read).

    - Once every member is gone, whatever the phase: nobody waits for it (Kubernetes' garbage collector
      would delete it too, once every owner is gone).
    - A running application of a live member stays: deleting one member never cancels the others' run.
    - A completed one stays while a live member has not read its results (it reads them after an operator
      restart), then goes.
    - A failed one stays for its driver's logs until the next run of one of its members (`keep_failed`
      False) sweeps it, as a policy's own failed application stays until its next run.
    """
    live = set(members) & set(alive)
    if not live:
        return True
    if phase is Phase.RUNNING:
        return False
    if phase is Phase.COMPLETED:
        return not (live & set(unread))
    return not keep_failed


def _iso_ms(ms: int) -> str:
    text = iso(ms // 1000 * 1000)
    return text.replace("Z", f".{ms % 1000:03d}Z") if ms % 1000 else text


def state_of(app: Mapping[str, Any]) -> AppState:
    state_doc = (app.get("status") or {}).get("applicationState") or {}
    state = str(state_doc.get("state") or "")
    message = str(state_doc.get("errorMessage") or "")
    if state == COMPLETED:
        return AppState(Phase.COMPLETED, state, message)
    if state in FAILED_STATES:
        return AppState(Phase.FAILED, state, message or f"the SparkApplication ended in state {state}")
    return AppState(Phase.RUNNING, state, message)
