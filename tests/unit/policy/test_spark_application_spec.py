"""The SparkApplication engine's decisions and the results' round trip through ConfigMap parts: pure
functions, no cluster."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from kafka_offset_operator.adapters.kube import owner_reference
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offsets_model.errors import InputError
from offset_expiry import results_sink
from offset_expiry.client_env import PREFIX, VARIABLES, settings_from_env

POLICY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
          "metadata": {"name": "9.team-a", "namespace": "kafka", "uid": "u-1"}}
SASL_TLS = {"bootstrapServers": "k:9093", "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user", "passwordKey": "pw"}},
            "tls": {"caSecretRef": {"name": "ca"}}}


def test_the_application_runs_job_py_with_secrets_by_reference() -> None:
    spec = parse_policy_spec({"kafka": SASL_TLS, "analysis": {"engine": "SparkApplication",
                              "sparkApplication": {"serviceAccount": "spark", "executor": {"instances": 3}}}})
    settings = connection_from_spec(SASL_TLS, lambda name: {"username": b"u", "pw": b"p", "ca.crt": b"CA"})
    app = sparkapp.manifest(POLICY, owner_reference(POLICY), spec, settings, "abcdef12", image="img:1",
                            retention_ms=7 * 86_400_000)
    name = app["metadata"]["name"]
    assert name == "p-9-team-a-analysis-abcdef12"  # a DNS label starting with a letter
    assert app["metadata"]["labels"][sparkapp.RUN_LABEL] == "abcdef12"
    assert app["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    driver, executor = app["spec"]["driver"], app["spec"]["executor"]
    assert driver["serviceAccount"] == "spark" and executor["instances"] == 3
    # Two waves of the executors' cores (3 x 1) as shuffle partitions, no UI, Python workers reused (issue 22).
    conf = app["spec"]["sparkConf"]
    assert conf["spark.sql.shuffle.partitions"] == "6" and conf["spark.ui.enabled"] == "false"
    assert conf["spark.python.worker.reuse"] == "true" and conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK"] == "1"  # one Python daemon per executor
    env = {e["name"]: e for e in driver["env"]}
    assert env["OFFSET_EXPIRY_KAFKA_SECURITY_PROTOCOL"]["value"] == "SASL_SSL"
    assert env["OFFSET_EXPIRY_KAFKA_SASL_PASSWORD"]["valueFrom"] == {"secretKeyRef": {"name": "user", "key": "pw"}}
    assert env["OFFSET_EXPIRY_KAFKA_SASL_USERNAME"]["valueFrom"] == {"secretKeyRef": {"name": "user", "key": "username"}}
    assert env["OFFSET_EXPIRY_KAFKA_SSL_CAFILE"]["value"].endswith("/ca/ca.crt")
    assert driver["secrets"] == executor["secrets"] == [
        {"name": "ca", "path": f"{sparkapp.TLS_MOUNT}/ca", "secretType": "Generic"}]
    assert "valueFrom" in str(executor["env"])  # executors read Kafka too
    args = app["spec"]["arguments"]
    assert args[args.index("--broker-retention") + 1] == "10080m"
    target = results_sink.parse_target(args[args.index("--results") + 1])
    assert (target.namespace, target.name, target.run_id) == ("kafka", f"{name}-results", "abcdef12")
    assert target.owner is not None and target.owner["uid"] == "u-1"
    assert target.labels[sparkapp.RUN_LABEL] == "abcdef12"
    assert "secret" not in str(args).lower() and "password" not in str(args).lower()


@pytest.mark.parametrize(("state", "phase"), [
    ("", sparkapp.Phase.RUNNING), ("SUBMITTED", sparkapp.Phase.RUNNING), ("RUNNING", sparkapp.Phase.RUNNING),
    ("PENDING_RERUN", sparkapp.Phase.RUNNING), ("COMPLETED", sparkapp.Phase.COMPLETED),
    ("FAILED", sparkapp.Phase.FAILED), ("SUBMISSION_FAILED", sparkapp.Phase.FAILED),
])
def test_spark_operator_states(state: str, phase: sparkapp.Phase) -> None:
    app = {"status": {"applicationState": {"state": state, "errorMessage": "boom"}}}
    assert sparkapp.state_of(app).phase is phase
    assert sparkapp.state_of({}).phase is sparkapp.Phase.RUNNING


def test_results_survive_the_trip_through_parts() -> None:
    rng = random.Random(7)
    rows = [{"group": f"g{i}", "topic": "t", "partition": i, "offset": rng.randrange(10**9), "candidate": i % 3 == 0,
             "reason": "Protected" if i % 3 == 1 else "EmptyGroup"} for i in range(60_000)]
    summary = {"recordsScanned": 60_000}
    data = results_sink.encode(results_sink.cut_down(summary, rows))
    parts = results_sink.split(data, size=64 * 1024)
    assert len(parts) > 1
    target = results_sink.parse_target("configmap://ns/r?runId=1")
    doc = results_sink.assemble(results_sink.manifest(target, parts), parts)
    assert doc["summary"] == summary and len(doc["offsets"]) == 40_000  # candidates and protected only
    with pytest.raises(ValueError):
        results_sink.assemble(results_sink.manifest(target, parts), parts[:-1])
    with pytest.raises(InputError):
        results_sink.parse_target("configmap://only-namespace")


def env_from_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """settings_from_env's inverse: the environment that sets `settings`."""
    names = {setting: name for name, setting in VARIABLES.items()}
    return {PREFIX + names[k]: v for k, v in settings.items() if k in names and v}


def test_credentials_travel_as_environment_variables() -> None:
    settings = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
                "sasl_plain_password": "p", "ssl_cafile": "/ca.pem"}
    assert settings_from_env(env_from_settings(settings)) == settings
    assert settings_from_env({"OFFSET_EXPIRY_KAFKA_SASL_PASSWORD": "", "HOME": "/"}) == {}


def test_a_strimzi_users_name_is_a_value_and_its_password_a_secret_reference() -> None:
    from kafka_offset_operator.model.connection import (
        ConnectionSettings,
        Masked,
        SecretKey,
        SecretSources,
        TlsFiles,
    )

    settings = ConnectionSettings("events-kafka-bootstrap:9094", "SASL_SSL", "SCRAM-SHA-512", "offsets-admin", Masked("pw"),
                                  TlsFiles(b"CA"), SecretSources(password=SecretKey("spec.kafka.strimzi.user", "offsets-admin", "password"),
                                                                 ca=SecretKey("spec.kafka.strimzi.kafka", "events-cluster-ca-cert", "ca.crt")))
    env = {e["name"]: e for e in sparkapp.credential_env(settings)}
    assert env["OFFSET_EXPIRY_KAFKA_SASL_USERNAME"] == {"name": "OFFSET_EXPIRY_KAFKA_SASL_USERNAME", "value": "offsets-admin"}
    assert env["OFFSET_EXPIRY_KAFKA_SASL_PASSWORD"]["valueFrom"] == {"secretKeyRef": {"name": "offsets-admin", "key": "password"}}
    assert sparkapp.tls_secrets(settings) == [
        {"name": "events-cluster-ca-cert", "path": f"{sparkapp.TLS_MOUNT}/ca", "secretType": "Generic"}]
    assert "pw" not in str(sparkapp.credential_env(settings))
