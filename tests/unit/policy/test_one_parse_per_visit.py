"""A policy's spec is parsed (and schema-checked) once per due visit (issue 23 §2): the scheduler's parse, which
decides whether the visit needs the analysis slot, is handed to the visit, whether the spec is usable, invalid
or waits for a Secret; the visit parses again only when the spec it re-reads is not the one the scheduler read.

The scheduler's daemon loop runs for real (PolicyScheduler.serve) on an in-memory stand-in for the operator's
Kube adapter; the visit's Kafka preflight answers with a KafkaFailure, so a usable spec's visit goes as far as a
real one would before Kafka (its status says Running, then KafkaUnavailable) without a socket."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import pytest

from kafka_offset_operator.adapters.kube import Kube, NotFound
from kafka_offset_operator.context import OperatorContext, OperatorOptions
from kafka_offset_operator.decisions import policy_spec
from kafka_offset_operator.decisions.conditions import find
from kafka_offset_operator.decisions.policy_spec import PolicySpec
from kafka_offset_operator.decisions.status_patch import merge_patch
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.offsets import KafkaFailure
from kafka_offset_operator.reconcilers.policy_scheduler import PolicyScheduler
from kafka_offset_operator.reconcilers.policy_visit import PolicyVisit

NAMESPACE, NAME = "kafka", "stale"
USABLE = {"kafka": {"bootstrapServers": "kafka:9092"}}
INVALID = {"kafka": {"bootstrapServers": "kafka:9092"}, "mode": "Sometimes"}
NO_SECRET = {"kafka": {"bootstrapServers": "kafka:9092", "securityProtocol": "SASL_PLAINTEXT",
                       "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "absent"}}}}


class OnePolicy:
    """The Kube calls a policy's visit makes, on one policy object in memory; no Secret exists. `after_patch`
    runs after each status write (where a test stops the daemon)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.body: dict[str, Any] = {
            "apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": "u-1", "generation": 1},
            "spec": copy.deepcopy(dict(spec))}
        self.after_patch: Callable[[], None] = lambda: None

    def get_custom(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.body)

    def patch_status(self, plural: str, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        self.body["status"] = merge_patch(self.body.get("status") or {}, patch)
        self.after_patch()
        return copy.deepcopy(self.body)

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes]:
        raise NotFound(f"secrets {name!r} not found")

    def strimzi_reader(self, namespace: str) -> Callable[..., Any]:
        def read(*_args: Any) -> Any:
            raise NotFound("no Strimzi here")
        return read


class Stopped:
    """Kopf's DaemonStopped as the scheduler uses it: truthy once set, waits end at once."""

    def __init__(self) -> None:
        self.set = False

    def __bool__(self) -> bool:
        return self.set

    def is_set(self) -> bool:
        return self.set

    async def wait(self, timeout: float | None = None) -> bool:
        await asyncio.sleep(0)
        return self.set


class KafkaDown(PolicyVisit):
    """The visit as it is, up to Kafka, which does not answer."""

    def _preflight(self, spec: PolicySpec, settings: ConnectionSettings) -> tuple[int, str | None]:
        raise KafkaFailure("KafkaConnectionError", "no broker answers", retriable=True)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every schema check of a policy's spec (the first step of every parse_policy_spec)."""
    checked: list[Any] = []
    check = policy_spec._SPEC.check

    def counted(value: Any, path: str) -> Any:
        checked.append(value)
        return check(value, path)

    monkeypatch.setattr(policy_spec._SPEC, "check", counted)
    yield checked


def scheduler_of(policy: OnePolicy, share_scans: bool) -> PolicyScheduler:
    options = OperatorOptions(namespaces=(NAMESPACE,), retry_interval=1.0,
                              scan_share_window_s=5.0 if share_scans else None)
    scheduler = PolicyScheduler(OperatorContext(options, cast(Kube, policy)))
    scheduler.visit = KafkaDown(OperatorContext(options, cast(Kube, policy)), scheduler.cleanup, poll_s=0.1)
    return scheduler


def serve_one_visit(policy: OnePolicy, scheduler: PolicyScheduler) -> dict[str, Any]:
    """Serve the policy until its first visit has written its outcome (a Ready condition); its status then."""
    stopped = Stopped()

    def settled() -> None:
        stopped.set = find(policy.body["status"].get("conditions"), "Ready") is not None

    policy.after_patch = settled
    try:
        asyncio.run(scheduler.serve(NAMESPACE, NAME, cast(Any, stopped)))
    finally:
        scheduler.close()
    status: dict[str, Any] = policy.body["status"]
    return status


@pytest.mark.parametrize("share_scans", [False, True], ids=["one-slot", "shared-scans"])
@pytest.mark.parametrize(("spec", "reason"), [
    (USABLE, "KafkaUnavailable"),  # the slot, then the visit up to Kafka
    (INVALID, "InvalidSpec"),  # no slot: the condition names the field
    (NO_SECRET, "SecretNotFound"),  # no slot: retried with backoff
], ids=["usable", "invalid", "secret-missing"])
def test_a_due_visit_parses_the_spec_once(parses: list[Any], spec: dict[str, Any], reason: str,
                                          share_scans: bool) -> None:
    policy = OnePolicy(spec)
    status = serve_one_visit(policy, scheduler_of(policy, share_scans))
    ready = find(status.get("conditions"), "Ready")
    assert ready is not None and ready["reason"] == reason, status
    assert parses == [spec], f"the spec was parsed {len(parses)} times in one visit"


def test_a_spec_changed_after_the_schedulers_read_is_parsed_again(parses: list[Any]) -> None:
    """The visit acts on the spec it re-reads, never on a stale parse."""
    policy = OnePolicy(USABLE)
    scheduler = scheduler_of(policy, share_scans=False)
    parse_then_edit = scheduler._can_run

    def edited_meanwhile(body: Mapping[str, Any]) -> Any:
        found = parse_then_edit(body)
        policy.body["spec"] = copy.deepcopy(INVALID)  # someone applies a new spec before the visit re-reads it
        return found

    scheduler._can_run = edited_meanwhile  # type: ignore[method-assign]
    ready = find(serve_one_visit(policy, scheduler).get("conditions"), "Ready")
    assert ready is not None and ready["reason"] == "InvalidSpec"
    assert parses == [USABLE, INVALID]
