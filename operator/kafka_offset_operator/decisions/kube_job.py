"""The Job engine's decisions: the `batch/v1` Job that runs offset_expiry/job.py with spark-submit in local
mode in one pod of the policy's namespace (the Spark job image, images/spark-job), and what its status means.
No I/O.

Everything but the workload object is the SparkApplication engine's (decisions/spark_application.py): the
names, labels, ownerReferences, job.py's arguments (`run_arguments`, `batch_arguments`), the policy and
results ConfigMaps, the credentials as secretKeyRefs, shared runs' members annotation and disposal. So the
operator hands results back, shares scans and adopts runs after a restart the same way for both.

The Job:
- `backoffLimit` from spec.analysis.job.backoffLimit (1 by default), but exit code 2 (job.py refused its
  input: the same input fails the same way) fails the Job at once (a podFailurePolicy rule), and the policy
  waits for a new spec rather than retrying (`failure`);
- `activeDeadlineSeconds` from spec.analysis.job.deadline: a stuck scan ends as DeadlineExceeded;
- `ttlSecondsAfterFinished`: the operator deletes a Job once its results are read; a failed one stays for
  its logs until the policy's next run, and TTL_S takes any the operator never came back to;
- Pod Security "restricted": non-root (Spark's user 185), no privilege escalation, every capability dropped,
  the RuntimeDefault seccomp profile;
- resources: `cores` CPUs (requests = limits) and memory for everything local mode runs in the pod: the JVM's
  heap, Spark's own overhead for a PySpark pod, a Python worker per core and job.py's process
  (spark_memory.job_pod_mib), so the pod's memory limit is the scan's and the operator's memory stays flat.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..model.connection import ConnectionSettings
from ..model.reasons import Reason
from . import spark_application as sparkapp
from .conditions import find
from .policy_spec import JobSettings, PolicySpec
from .spark_application import AppState, BatchRun, Phase
from .spark_memory import job_pod_mib

JOB_GROUP = "batch"
JOB_VERSION = "v1"
JOB_PLURAL = "jobs"
CONTAINER = "analysis"
SPARK_SUBMIT = "/opt/spark/bin/spark-submit"  # the Apache Spark image's
SPARK_USER = 185  # the Apache Spark image's user and group
TTL_S = 86_400  # a finished Job the operator never came back to goes after a day
INPUT_ERROR_EXIT = 2  # job.py: the input was refused (offset_expiry/job.py, argparse's convention)


def main_path(main_file: str) -> str:
    """The job file in the image, from the SparkApplication engine's `local://` URL."""
    return main_file.removeprefix("local://")


def command(settings: JobSettings, main_file: str, arguments: Sequence[str]) -> list[str]:
    """spark-submit in local mode with the pod's cores and heap, then job.py and its arguments."""
    out = [SPARK_SUBMIT, "--master", f"local[{settings.resources.cores}]",
           "--driver-memory", settings.resources.memory]
    for key, value in sparkapp.start_up_conf(settings.resources.cores).items():
        out += ["--conf", f"{key}={value}"]
    return [*out, main_path(main_file), *arguments]


def _volumes(settings: ConnectionSettings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The TLS Secrets as read-only volumes at the paths credential_env names, and a writable /tmp."""
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}]
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}]
    for secret in sparkapp.tls_secrets(settings):
        name = "tls-" + secret["path"].rsplit("/", 1)[-1]
        volumes.append({"name": name, "secret": {"secretName": secret["name"]}})
        mounts.append({"name": name, "mountPath": secret["path"], "readOnly": True})
    return volumes, mounts


def _job(name: str, namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str],
         owners: list[dict[str, Any]], arguments: Sequence[str], spec: PolicySpec, settings: ConnectionSettings,
         image: str, main_file: str) -> dict[str, Any]:
    job = spec.job
    memory = f"{job_pod_mib(job.resources.memory, job.resources.cores, job.resources.memory_overhead)}Mi"
    volumes, mounts = _volumes(settings)
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": SPARK_USER, "runAsGroup": SPARK_USER,
                            "fsGroup": SPARK_USER, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": CONTAINER,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": command(job, main_file, arguments),
            "env": sparkapp.credential_env(settings),
            "resources": {"requests": {"cpu": str(job.resources.cores), "memory": memory},
                          "limits": {"cpu": str(job.resources.cores), "memory": memory}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": True},
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "volumeMounts": mounts,
        }],
        "volumes": volumes,
    }
    if job.service_account:
        pod["serviceAccountName"] = job.service_account
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels), "ownerReferences": owners}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": f"{JOB_GROUP}/{JOB_VERSION}",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": job.backoff_limit,
            "activeDeadlineSeconds": max(1, job.deadline_ms // 1000),
            "ttlSecondsAfterFinished": TTL_S,
            "podFailurePolicy": {"rules": [{
                "action": "FailJob",
                "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [INPUT_ERROR_EXIT]},
            }]},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        },
    }


def manifest(policy_body: Mapping[str, Any], owner: Mapping[str, Any], spec: PolicySpec, settings: ConnectionSettings,
             run_id: str, *, image: str, main_file: str = sparkapp.DEFAULT_MAIN_FILE, retention_ms: int | None = None,
             now_ms: int | None = None) -> dict[str, Any]:
    """One policy's own Job (named and labelled as its SparkApplication would be)."""
    meta = policy_body["metadata"]
    name = sparkapp.application_name(meta["name"], run_id)
    arguments = sparkapp.run_arguments(policy_body, owner, settings, name, run_id, retention_ms=retention_ms,
                                       now_ms=now_ms)
    return _job(name, meta["namespace"], sparkapp.run_labels(meta["name"], run_id), {}, [dict(owner)], arguments,
                spec, settings, image, main_file)


def batch_manifest(runs: Sequence[BatchRun], spec: PolicySpec, settings: ConnectionSettings, run_id: str, key: str,
                   *, image: str, main_file: str = sparkapp.DEFAULT_MAIN_FILE) -> dict[str, Any]:
    """The shared Job of `runs` (one namespace, one batch key), as sparkapp.batch_manifest's application."""
    namespace = runs[0].body["metadata"]["namespace"]
    name = sparkapp.shared_application_name(run_id)
    arguments, members = sparkapp.batch_arguments(runs, settings, name, run_id)
    annotations = {sparkapp.MEMBERS_ANNOTATION: sparkapp.encode_members(members)}
    return _job(name, namespace, sparkapp.batch_labels(key, run_id), annotations, [dict(r.owner) for r in runs],
                arguments, spec, settings, image, main_file)


def batch_key(namespace: str, share_key: str, spec: PolicySpec, image: str) -> str:
    """Equal for two runs exactly when they may share one Job: one namespace, cluster and credentials, and the
    same pod (image, service account, resources, deadline, backoff)."""
    job = spec.job
    parts: list[object] = ["Job", namespace, share_key, image, job.service_account or "", job.resources.cores,
                           job.resources.memory, job.deadline_ms, job.backoff_limit]
    if job.resources.memory_overhead is not None:  # only then: the keys of runs without one stay as they were
        parts.append(job.resources.memory_overhead)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def state_of(job: Mapping[str, Any]) -> AppState:
    """Complete=True: done; Failed=True: failed, its reason (BackoffLimitExceeded, DeadlineExceeded,
    PodFailurePolicy) as the state; anything else (no condition yet, FailureTarget or SuccessCriteriaMet while
    the pods terminate): still running."""
    conditions = (job.get("status") or {}).get("conditions")

    def true(type_: str) -> Mapping[str, Any] | None:
        cond = find(conditions, type_)
        return cond if cond is not None and str(cond.get("status")) == "True" else None

    if true("Complete") is not None:
        return AppState(Phase.COMPLETED, "Complete", "")
    cond = true("Failed")
    if cond is not None:
        reason = str(cond.get("reason") or "Failed")
        return AppState(Phase.FAILED, reason, str(cond.get("message") or f"the Job failed ({reason})"))
    return AppState(Phase.RUNNING, "", "")


def failure(name: str, state: AppState, spec: PolicySpec) -> tuple[Reason, str]:
    """The condition of a failed Job: an input error (exit code 2) waits for a new spec (INVALID_SPEC, its
    message starting with the field), anything else is retried with the operator's backoff."""
    logs = f"`kubectl logs job/{name}` says more"
    if state.state == "PodFailurePolicy":
        return (Reason.INVALID_SPEC, f"spec.analysis: the analysis Job {name} refused its input (exit code "
                f"{INPUT_ERROR_EXIT}: {state.message}); {logs}; fix the spec to run again")
    if state.state == "DeadlineExceeded":
        return (Reason.ANALYSIS_JOB_FAILED, f"the analysis Job {name} ran past spec.analysis.job.deadline "
                f"({spec.job.deadline_ms // 1000} s): {state.message}")
    return Reason.ANALYSIS_JOB_FAILED, f"the analysis Job {name} failed ({state.state}): {state.message}; {logs}"
