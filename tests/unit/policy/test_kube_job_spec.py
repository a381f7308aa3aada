"""The Job engine's decisions (decisions/kube_job.py): the Job that runs job.py in local mode, what its
status means, and which failures wait for a new spec. Pure functions, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.adapters.kube import owner_reference
from kafka_offset_operator.decisions import kube_job
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import Engine, parse_policy_spec
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.reasons import Reason
from kafka_offsets_model.errors import SpecError
from offset_expiry import results_sink

POLICY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
          "metadata": {"name": "team-a", "namespace": "kafka", "uid": "u-1"}}
SASL_TLS = {"bootstrapServers": "k:9093", "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user", "passwordKey": "pw"}},
            "tls": {"caSecretRef": {"name": "ca"}}}
JOB_SPEC = {"kafka": SASL_TLS, "analysis": {"engine": "Job", "job": {
    "serviceAccount": "spark", "cores": 2, "memory": "3g", "deadline": "30m", "backoffLimit": 2}}}


def job_manifest(spec: dict[str, Any] = JOB_SPEC) -> dict[str, Any]:
    settings = connection_from_spec(SASL_TLS, lambda name: {"username": b"u", "pw": b"p", "ca.crt": b"CA"})
    return kube_job.manifest(POLICY, owner_reference(POLICY), parse_policy_spec(spec), settings, "abcdef12",
                             image="img:1", retention_ms=7 * 86_400_000)


def test_the_job_runs_job_py_in_local_mode_with_the_policys_resources_and_limits() -> None:
    job = job_manifest()
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    meta = job["metadata"]
    assert meta["name"] == "team-a-analysis-abcdef12"  # named and labelled as its SparkApplication would be
    assert meta["labels"][sparkapp.RUN_LABEL] == "abcdef12" and meta["ownerReferences"][0]["uid"] == "u-1"
    spec = job["spec"]
    assert spec["activeDeadlineSeconds"] == 1800 and spec["backoffLimit"] == 2
    assert spec["ttlSecondsAfterFinished"] == kube_job.TTL_S
    # Exit code 2 (job.py refused its input) fails the Job at once: the same input fails the same way.
    [rule] = spec["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [2]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "spark"
    [container] = pod["containers"]
    command = container["command"]
    assert command[:5] == [kube_job.SPARK_SUBMIT, "--master", "local[2]", "--driver-memory", "3g"]
    # Start-up settings as the CLI's session has them: no UI, two waves of the pod's cores as shuffle partitions.
    confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert {"spark.ui.enabled=false", "spark.sql.shuffle.partitions=4", "spark.python.worker.reuse=true"} <= set(confs)
    main = command.index("/opt/kafka-offset-operator/spark/offset_expiry/job.py")
    args = command[main + 1:]
    assert args[args.index("--broker-retention") + 1] == "10080m"
    target = results_sink.parse_target(args[args.index("--results") + 1])
    assert (target.namespace, target.name) == ("kafka", "team-a-analysis-abcdef12-results")
    # 3 GiB of heap, Spark's overhead for a PySpark pod (max(384 MiB, 0.4 x heap)), a Python worker for each of
    # the 2 cores and job.py's own process: local mode runs them all in this pod (issue 22).
    assert container["resources"]["limits"] == {"cpu": "2", "memory": f"{3072 + 1228 + 2 * 768 + 256}Mi"}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    env = {e["name"]: e for e in container["env"]}
    assert env["OFFSET_EXPIRY_KAFKA_SASL_PASSWORD"]["valueFrom"] == {"secretKeyRef": {"name": "user", "key": "pw"}}
    assert "password" not in str(command).lower()
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts[f"{sparkapp.TLS_MOUNT}/ca"]["readOnly"] is True and "/tmp" in mounts
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts[f"{sparkapp.TLS_MOUNT}/ca"]["name"]]["secret"] == {"secretName": "ca"}


def test_the_pod_meets_pod_security_restricted() -> None:
    """The restricted profile's checks (kubernetes.io/docs/concepts/security/pod-security-standards):
    non-root, no privilege escalation, every capability dropped, a RuntimeDefault seccomp profile, no host
    namespaces or host paths, only secret and emptyDir volumes."""
    pod = job_manifest()["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"] == {"drop": ["ALL"]}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    assert all(set(v) - {"name"} <= {"secret", "emptyDir"} for v in pod["volumes"])


def test_a_shared_job_lists_its_members_and_is_owned_by_each() -> None:
    policies = [{**POLICY, "metadata": {**POLICY["metadata"], "name": n, "uid": f"u-{n}"}} for n in ("a", "b")]
    runs = [sparkapp.BatchRun(p, owner_reference(p), 86_400_000) for p in policies]
    spec = parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "analysis": {"engine": "Job"}})
    job = kube_job.batch_manifest(runs, spec, ConnectionSettings("k:9092"), "0000abcd", "k" * 64, image="img:1")
    assert job["metadata"]["name"] == "shared-analysis-0000abcd"
    assert [m.name for m in sparkapp.members_of(job)] == ["a", "b"]
    assert [o["uid"] for o in job["metadata"]["ownerReferences"]] == ["u-a", "u-b"]
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command.count("--policy") == command.count("--results") == 2


def test_runs_share_a_job_only_with_the_same_pod() -> None:
    base = parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "analysis": {"engine": "Job"}})
    bigger = parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "analysis": {"engine": "Job", "job": {"memory": "4g"}}})
    key = kube_job.batch_key("ns", "share", base, "img:1")
    assert key == kube_job.batch_key("ns", "share", base, "img:1")
    assert key != kube_job.batch_key("ns", "share", bigger, "img:1")
    assert key != kube_job.batch_key("other", "share", base, "img:1")
    assert key != kube_job.batch_key("ns", "share", base, "img:2")


def condition(kind: str, reason: str = "", message: str = "", status: str = "True") -> dict[str, Any]:
    return {"status": {"conditions": [{"type": kind, "status": status, "reason": reason, "message": message}]}}


@pytest.mark.parametrize(("job", "phase", "state"), [
    ({}, sparkapp.Phase.RUNNING, ""),
    ({"status": {"active": 1}}, sparkapp.Phase.RUNNING, ""),
    (condition("SuccessCriteriaMet"), sparkapp.Phase.RUNNING, ""),  # the pods still terminate
    (condition("FailureTarget", "DeadlineExceeded"), sparkapp.Phase.RUNNING, ""),
    (condition("Complete"), sparkapp.Phase.COMPLETED, "Complete"),
    (condition("Complete", status="False"), sparkapp.Phase.RUNNING, ""),
    (condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"), sparkapp.Phase.FAILED,
     "BackoffLimitExceeded"),
    (condition("Failed", "DeadlineExceeded"), sparkapp.Phase.FAILED, "DeadlineExceeded"),
    (condition("Failed", "PodFailurePolicy"), sparkapp.Phase.FAILED, "PodFailurePolicy"),
])
def test_what_a_jobs_status_means(job: dict[str, Any], phase: sparkapp.Phase, state: str) -> None:
    got = kube_job.state_of(job)
    assert (got.phase, got.state) == (phase, state)


def test_an_input_error_waits_for_a_new_spec_and_other_failures_are_retried() -> None:
    spec = parse_policy_spec(JOB_SPEC)
    reason, message = kube_job.failure("j", kube_job.state_of(condition(
        "Failed", "PodFailurePolicy", "Container analysis for pod kafka/j-x failed with exit code 2")), spec)
    assert reason is Reason.INVALID_SPEC and message.startswith("spec.analysis: ")  # the field, then the problem
    assert "kubectl logs job/j" in message
    reason, message = kube_job.failure("j", kube_job.state_of(condition("Failed", "DeadlineExceeded", "too long")), spec)
    assert reason is Reason.ANALYSIS_JOB_FAILED and "spec.analysis.job.deadline (1800 s)" in message
    reason, message = kube_job.failure("j", kube_job.state_of(condition("Failed", "BackoffLimitExceeded", "limit")), spec)
    assert reason is Reason.ANALYSIS_JOB_FAILED and "BackoffLimitExceeded" in message




def test_the_default_engine_is_the_operators_and_an_explicit_one_wins() -> None:
    unset = {"kafka": {"bootstrapServers": "k:9092"}}
    assert parse_policy_spec(unset).engine is Engine.LOCAL
    assert parse_policy_spec(unset, Engine.JOB).engine is Engine.JOB
    assert parse_policy_spec({**unset, "analysis": {"engine": "Local"}}, Engine.JOB).engine is Engine.LOCAL
    defaults = parse_policy_spec({**unset, "analysis": {"engine": "Job"}}).job
    assert (defaults.deadline_ms, defaults.backoff_limit, defaults.resources.cores) == (3_600_000, 1, 1)
    with pytest.raises(SpecError, match=r"spec\.analysis\.job\.deadline"):
        parse_policy_spec({**unset, "analysis": {"engine": "Job", "job": {"deadline": "0s"}}})
