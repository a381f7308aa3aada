"""Shared SparkApplications (issue 12): which runs share one, what the application looks like, when the
operator deletes it, and job.py's pairing of one --policy, --results and --broker-retention per member. Pure
functions and argument checks: no cluster, no Spark."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from kafka_offset_operator.decisions import spark_application as sparkapp
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.engines.spark_application import shared_owner
from offset_expiry import job, results_sink

KAFKA = {"bootstrapServers": "k:9093", "securityProtocol": "SASL_SSL",
         "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user", "passwordKey": "pw"}}}
Phase = sparkapp.Phase


def policy(name: str, uid: str, namespace: str = "kafka") -> dict[str, Any]:
    return {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": name, "namespace": namespace, "uid": uid}}


def spec(**spark: Any) -> Any:
    return parse_policy_spec({"kafka": KAFKA, "analysis": {"engine": "SparkApplication", "sparkApplication": spark}})


def test_only_runs_of_one_namespace_and_one_application_shape_share() -> None:
    key = sparkapp.batch_key("kafka", "share", spec(), "img:1")
    assert key == sparkapp.batch_key("kafka", "share", spec(), "img:1")
    assert key != sparkapp.batch_key("other", "share", spec(), "img:1")  # namespaced owners, Secrets, accounts
    assert key != sparkapp.batch_key("kafka", "other-credentials", spec(), "img:1")
    assert key != sparkapp.batch_key("kafka", "share", spec(), "img:2")
    assert key != sparkapp.batch_key("kafka", "share", spec(serviceAccount="sa"), "img:1")
    assert key != sparkapp.batch_key("kafka", "share", spec(executor={"instances": 3}), "img:1")


def test_a_shared_application_is_owned_by_every_member_and_names_each_ones_policy_results_and_retention() -> None:
    settings = connection_from_spec(KAFKA, lambda name: {"username": b"u", "pw": b"p"})
    members = [policy("team-a", "u-a"), policy("team-b", "u-b")]
    runs = [sparkapp.BatchRun(m, shared_owner(m), r) for m, r in zip(members, (7 * 86_400_000, 60_000), strict=True)]
    app = sparkapp.batch_manifest(runs, spec(), settings, "abcdef12", "k" * 64, image="img:1")
    meta = app["metadata"]
    name = meta["name"]
    assert name == "shared-analysis-abcdef12"
    assert [o["uid"] for o in meta["ownerReferences"]] == ["u-a", "u-b"]
    assert not any(o["controller"] for o in meta["ownerReferences"])  # at most one controller per object
    assert meta["labels"][sparkapp.BATCH_LABEL] == "k" * 63 and sparkapp.POLICY_LABEL not in meta["labels"]
    assert sparkapp.members_of(app) == [sparkapp.BatchMember("team-a", "u-a", f"{name}-results-0"),
                                        sparkapp.BatchMember("team-b", "u-b", f"{name}-results-1")]
    args = app["spec"]["arguments"]
    policies = [args[i + 1] for i, a in enumerate(args) if a == "--policy"]
    results = [results_sink.parse_target(args[i + 1]) for i, a in enumerate(args) if a == "--results"]
    retentions = [args[i + 1] for i, a in enumerate(args) if a == "--broker-retention"]
    assert [dict(parse_qsl(urlsplit(p).query))["key"] for p in policies] == ["policy-0.yaml", "policy-1.yaml"]
    assert {urlsplit(p).path for p in policies} == {f"/{name}-policy"}
    assert [(r.name, r.owner and r.owner["uid"]) for r in results] == [(f"{name}-results-0", "u-a"),
                                                                       (f"{name}-results-1", "u-b")]
    assert retentions == ["10080m", "1m"]
    env = {e["name"]: e for e in app["spec"]["driver"]["env"]}  # the first member's Secrets, by reference
    assert env["OFFSET_EXPIRY_KAFKA_SASL_PASSWORD"]["valueFrom"] == {"secretKeyRef": {"name": "user", "key": "pw"}}


MEMBERS = {"a", "b"}


@pytest.mark.parametrize(("phase", "alive", "unread", "keep_failed", "dispose"), [
    (Phase.RUNNING, {"a", "b"}, set(), True, False),
    (Phase.RUNNING, {"b"}, set(), True, False),  # one member deleted: the other's run goes on
    (Phase.RUNNING, set(), set(), True, True),  # every member gone: nobody waits for it
    (Phase.COMPLETED, {"a", "b"}, {"b"}, True, False),  # b has not read its results yet
    (Phase.COMPLETED, {"a"}, {"b"}, True, True),  # ... and b is gone
    (Phase.COMPLETED, {"a", "b"}, set(), True, True),
    (Phase.FAILED, {"a", "b"}, set(), True, False),  # kept for its logs ...
    (Phase.FAILED, {"a", "b"}, set(), False, True),  # ... until a member's next run
    (Phase.FAILED, set(), set(), True, True),
])
def test_when_a_shared_application_goes(phase: Phase, alive: set[str], unread: set[str], keep_failed: bool,
                                        dispose: bool) -> None:
    assert sparkapp.batch_disposal(phase, MEMBERS, alive, unread, keep_failed=keep_failed) is dispose


def test_a_members_results_configmap_is_named_by_its_place_whatever_the_annotation_says() -> None:
    app = {"metadata": {"name": "shared-analysis-1", "annotations": {
        sparkapp.MEMBERS_ANNOTATION: '[{"name": "a", "uid": "u", "results": "kafka-offset-backup-x"}]'}}}
    assert sparkapp.members_of(app) == [sparkapp.BatchMember("a", "u", "shared-analysis-1-results-0")]


def test_an_unreadable_members_annotation_lists_no_member() -> None:
    assert sparkapp.members_of({"metadata": {"annotations": {sparkapp.MEMBERS_ANNOTATION: "{nope"}}}) == []
    assert sparkapp.members_of({"metadata": {}}) == []


CM = "configmap://kafka/app-results-{}"


@pytest.mark.parametrize(("argv", "message"), [
    (["--policy", "a.yaml", "--policy", "b.yaml", "--results", CM.format(0)],
     "--results: a shared run needs one configmap://NAMESPACE/NAME per --policy, in order"),
    (["--policy", "a.yaml", "--policy", "b.yaml", "--results", "/tmp/a.json", "--results", "/tmp/b.json"],
     "--results: a shared run needs one configmap://NAMESPACE/NAME per --policy, in order"),
    (["--policy", "a.yaml", "--results", CM.format(0), "--results", CM.format(1)],
     "--results: given 2 times for one --policy"),
    (["--policy", "a.yaml", "--policy", "b.yaml", "--results", CM.format(0), "--results", CM.format(1),
      "--broker-retention", "1d", "--broker-retention", "2d", "--broker-retention", "3d"],
     "--broker-retention: given 3 times for 2 --policy (give it once, or once per --policy)"),
])
def test_job_py_pairs_one_results_and_retention_with_each_policy(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                               message: str) -> None:
    assert job.main(["--bootstrap-server", "127.0.0.1:1", *argv]) == 2
    assert capsys.readouterr().err == f"offset_expiry.job: error: {message}\n"
