"""The SparkApplication engine's decisions: the `sparkoperator.k8s.io/v1beta2` SparkApplication that runs
offset_expiry/job.py in the cluster (kubeflow spark-operator), and what its status means. No I/O.

- The application is owned by the policy (ownerReference), labelled with the policy and the run id, so the
  operator finds a run again after a restart and Kubernetes removes it with the policy.
- The policy's analysis spec travels in a ConfigMap (`--policy configmap://...`), the results come back in
  ConfigMaps (`--results configmap://...`, offset_expiry/results_sink.py); credentials come from the
  policy's Secrets as environment variables and mounted files (offset_expiry/client_env.py), on the driver
  and the executors (both read Kafka). The driver's service account needs get/create on ConfigMaps.
- spark-operator's states (status.applicationState.state): "" and SUBMITTED, RUNNING, PENDING_RERUN,
  INVALIDATING, SUCCEEDING, UNKNOWN are still running; COMPLETED is done; FAILED, SUBMISSION_FAILED and
  FAILING are failures (applicationState.errorMessage says why).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from offset_expiry.client_env import PREFIX

from ..model.api import MANAGED_BY, POLICY_LABEL, RUN_LABEL
from ..model.connection import ConnectionSettings, SecretKey
from .policy_spec import PodResources, PolicySpec
from .times import iso

SPARK_GROUP = "sparkoperator.k8s.io"
SPARK_VERSION = "v1beta2"
SPARK_PLURAL = "sparkapplications"
SPARK_RELEASE = "4.0.0"  # spec.sparkVersion: informational for spark-operator
DEFAULT_MAIN_FILE = "local:///opt/kafka-offset-operator/spark/offset_expiry/job.py"
TLS_MOUNT = "/etc/kafka-offset-operator/tls"

RUNNING_STATES = frozenset({"", "SUBMITTED", "RUNNING", "PENDING_RERUN", "INVALIDATING", "SUCCEEDING", "UNKNOWN"})
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


def application_name(policy: str, run_id: str) -> str:
    return f"{_dns_label(policy)[:40].rstrip('-')}-analysis-{run_id[:8]}"


def policy_configmap_name(app: str) -> str:
    return f"{app}-policy"


def results_configmap_name(app: str) -> str:
    return f"{app}-results"


def run_labels(policy: str, run_id: str) -> dict[str, str]:
    return {**MANAGED_BY, POLICY_LABEL: policy, RUN_LABEL: run_id}


def results_url(policy_body: Mapping[str, Any], owner: Mapping[str, Any], app: str, run_id: str) -> str:
    """Where the driver writes the results: ConfigMaps owned like the application (`owner`)."""
    meta = policy_body["metadata"]
    query = {
        "ownerApiVersion": owner["apiVersion"],
        "ownerKind": owner["kind"],
        "ownerName": owner["name"],
        "ownerUid": owner.get("uid") or "",
        "runId": run_id,
        **{f"label.{k}": v for k, v in run_labels(meta["name"], run_id).items()},
    }
    return f"configmap://{meta['namespace']}/{results_configmap_name(app)}?{urlencode(query)}"


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
    namespace = meta["namespace"]
    arguments = [
        "--bootstrap-server", settings.bootstrap_servers,
        "--policy", f"configmap://{namespace}/{policy_configmap_name(app)}",
        "--results", results_url(policy_body, owner, app, run_id),  # the driver log gets the table for people
    ]
    if retention_ms is not None:
        arguments += ["--broker-retention", f"{retention_ms // 60_000}m"]
    if now_ms is not None:
        arguments += ["--now", _iso_ms(now_ms)]
    env = credential_env(settings)
    secrets = tls_secrets(settings)
    driver = _pod(spec.spark.driver, env, secrets, labels)
    if spec.spark.service_account:
        driver["serviceAccount"] = spec.spark.service_account
    executor = _pod(spec.spark.executor, env, secrets, labels)
    executor["instances"] = spec.spark.executor.instances
    return {
        "apiVersion": f"{SPARK_GROUP}/{SPARK_VERSION}",
        "kind": "SparkApplication",
        "metadata": {"name": app, "namespace": namespace, "labels": labels,
                     "ownerReferences": [dict(owner)]},
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": main_file,
            "arguments": arguments,
            "sparkVersion": SPARK_RELEASE,
            "sparkConf": {"spark.ui.showConsoleProgress": "false",
                          "spark.sql.execution.arrow.pyspark.enabled": "true",
                          "spark.sql.session.timeZone": "UTC"},
            "restartPolicy": {"type": "Never"},
            "driver": driver,
            "executor": executor,
        },
    }


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
