"""The memory the operator gives an analysis' pods (decisions/spark_memory.py, issue 22): Spark's own rule for a
PySpark pod leaves the executor's Python workers next to nothing once the JVM has taken its non-heap share, and
at 5M records a 1g executor was OOM-killed eight times in a row under that limit, and held in a pod of Spark's
overhead plus 512 MiB (docs/performance.md, "An executor under its pod's limit"). These pin the rule (768 MiB
a core: the margin for the readers' path up to 12.5M records) and that both engines use it."""

from __future__ import annotations

import pytest

from kafka_offset_operator.adapters.kube import owner_reference
from kafka_offset_operator.decisions import kube_job, spark_memory
from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.model.kinds.consumer_group_offset_policy import (
    EXECUTOR_OVERHEAD_DOC,
    JOB_OVERHEAD_DOC,
)

POLICY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
          "metadata": {"name": "p", "namespace": "kafka", "uid": "u-1"}}
KAFKA = {"bootstrapServers": "k:9092"}


@pytest.mark.parametrize(("memory", "mib"), [("512m", 512), ("2g", 2048), ("1024", 1024), ("1t", 1024 * 1024)])
def test_memory_in_sparks_notation(memory: str, mib: int) -> None:
    assert spark_memory.memory_mib(memory) == mib


@pytest.mark.parametrize(("heap", "overhead"), [(512, 384), (1024, 409), (2048, 819), (8192, 3276)])
def test_sparks_own_overhead_for_a_pyspark_pod(heap: int, overhead: int) -> None:
    # Spark 4.3 on Kubernetes: max(spark.executor.minMemoryOverhead = 384 MiB, 0.4 x heap) for a non-JVM app.
    assert spark_memory.spark_overhead_mib(heap) == overhead


def test_the_executor_pod_gets_sparks_overhead_and_a_python_worker_per_core() -> None:
    worker = spark_memory.PYTHON_WORKER_MIB
    assert spark_memory.executor_overhead_mib("1g", 1) == 409 + worker
    assert spark_memory.executor_overhead_mib("4g", 2) == 1638 + 2 * worker
    # The default executor (1g, one core): 2201 MiB, more than the 1945 MiB pod that held 5M records (Spark's
    # own, 1433 MiB, was outgrown).
    assert spark_memory.executor_pod_mib("1g", 1) == 1024 + 409 + worker == 2201


def test_the_spark_application_asks_for_the_executors_overhead() -> None:
    spec = parse_policy_spec({"kafka": KAFKA, "analysis": {"engine": "SparkApplication", "sparkApplication": {
        "executor": {"memory": "2g", "cores": 2, "instances": 3}, "driver": {"memory": "1g"}}}})
    settings = connection_from_spec(KAFKA, lambda name: {})
    app = sparkapp.manifest(POLICY, owner_reference(POLICY), spec, settings, "abcdef12", image="img:1")
    executor, driver = app["spec"]["executor"], app["spec"]["driver"]
    assert executor["memory"] == "2g"
    assert executor["memoryOverhead"] == f"{819 + 2 * spark_memory.PYTHON_WORKER_MIB}m"
    assert "memoryOverhead" not in driver  # the driver's Python holds a report partition at a time: Spark's rule


def test_the_job_pod_holds_the_driver_its_python_workers_and_job_py() -> None:
    spec = parse_policy_spec({"kafka": KAFKA, "analysis": {"engine": "Job"}})  # the defaults: 1g, one core
    settings = connection_from_spec(KAFKA, lambda name: {})
    job = kube_job.manifest(POLICY, owner_reference(POLICY), spec, settings, "abcdef12", image="img:1")
    [container] = job["spec"]["template"]["spec"]["containers"]
    expected = 1024 + 409 + spark_memory.PYTHON_WORKER_MIB + spark_memory.DRIVER_PYTHON_MIB
    assert container["resources"]["limits"]["memory"] == f"{expected}Mi" == container["resources"]["requests"]["memory"]
    assert spark_memory.job_pod_mib("1g", 1) == expected


def test_a_policys_own_overhead_wins_and_keeps_runs_with_other_pods_apart() -> None:
    spec = parse_policy_spec({"kafka": KAFKA, "analysis": {
        "engine": "SparkApplication", "sparkApplication": {"executor": {"memoryOverhead": "1536m"}},
        "job": {"memoryOverhead": "2g", "cores": 2}}})
    settings = connection_from_spec(KAFKA, lambda name: {})
    app = sparkapp.manifest(POLICY, owner_reference(POLICY), spec, settings, "abcdef12", image="img:1")
    assert app["spec"]["executor"]["memoryOverhead"] == "1536m"
    job = kube_job.manifest(POLICY, owner_reference(POLICY), spec, settings, "abcdef12", image="img:1")
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["memory"] == f"{1024 + 2048}Mi"
    # Runs share an application or a Job only with the same pods; without an overhead, the keys are as before.
    plain = parse_policy_spec({"kafka": KAFKA})
    assert sparkapp.batch_key("ns", "k", spec, "img:1") != sparkapp.batch_key("ns", "k", plain, "img:1")
    assert kube_job.batch_key("ns", "k", spec, "img:1") != kube_job.batch_key(
        "ns", "k", parse_policy_spec({"kafka": KAFKA, "analysis": {"job": {"cores": 2}}}), "img:1")


def test_the_crds_descriptions_state_the_rule_the_operator_applies() -> None:
    executor, job = EXECUTOR_OVERHEAD_DOC, JOB_OVERHEAD_DOC
    assert f"{spark_memory.PYTHON_WORKER_MIB} MiB per core" in executor and "0.4 x memory" in executor
    assert f"{spark_memory.PYTHON_WORKER_MIB} MiB per core" in job
    assert f"{spark_memory.DRIVER_PYTHON_MIB} MiB for job.py" in job
