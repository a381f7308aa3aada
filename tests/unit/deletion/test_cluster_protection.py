"""decisions/protection.py: protection is the cluster's, and a policy whose cluster is not known may protect."""

from __future__ import annotations

from typing import Any

from kafka_offset_operator.decisions.protection import (
    ProtectionVerdict,
    Protector,
    protector,
    refusal,
    verdict,
)


def policy(name: str, patterns: list[str], cluster: str | None, generation: int = 2, recorded_for: int = 2,
           namespace: str = "team-b") -> dict[str, Any]:
    status = {"kafkaCluster": {"id": cluster, "observedGeneration": recorded_for}} if cluster else {}
    return {"metadata": {"name": name, "namespace": namespace, "generation": generation},
            "spec": {"protect": {"groups": patterns}}, "status": status}


def test_a_recorded_cluster_counts_only_for_the_generation_it_was_read_for() -> None:
    assert protector(policy("p", ["billing-*"], "C1")) == Protector("team-b", "p", ("billing-*",), "C1")
    assert protector(policy("p", ["billing-*"], "C1", generation=3)) == Protector("team-b", "p", ("billing-*",), None)
    assert protector(policy("p", [], "C1")) is None


def test_any_policy_on_the_same_cluster_protects_whoever_asks() -> None:
    found = [protector(policy("guard", ["billing-*"], "C1")), protector(policy("other", ["ops-*"], "C1")),
             protector(policy("elsewhere", ["billing-*"], "C2"))]
    protectors = [p for p in found if p is not None]
    assert verdict(protectors, "C1", "billing-eu") == ProtectionVerdict(by=(("team-b/guard", "billing-*"),))
    assert verdict(protectors, "C2", "billing-eu") == ProtectionVerdict(by=(("team-b/elsewhere", "billing-*"),))
    assert verdict(protectors, "C3", "billing-eu").allowed
    assert verdict(protectors, "C1", "ledger").allowed


def test_an_unknown_cluster_is_not_a_reason_to_change() -> None:
    unknown = Protector("team-b", "new", ("billing-*",), None)
    assert verdict([unknown], "C1", "billing-eu") == ProtectionVerdict(unknown=(("team-b/new", "billing-*"),))
    # a target cluster without an id cannot be told apart: every matching policy protects it
    assert verdict([Protector("team-b", "p", ("billing-*",), "C1")], None, "billing-eu").by


def test_the_refusal_names_the_policy_its_pattern_and_the_cluster() -> None:
    found = ProtectionVerdict(by=(("team-b/guard", "billing-*"),))
    assert refusal("billing-eu", "C1", found) == (
        "group billing-eu is protected on Kafka cluster C1 by ConsumerGroupOffsetPolicy team-b/guard "
        "(spec.protect.groups pattern 'billing-*'); nothing changed")
    assert "not known yet" in refusal("billing-eu", "C1", ProtectionVerdict(unknown=(("team-b/new", "billing-*"),)))
