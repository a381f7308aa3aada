"""The fresh re-check before OffsetDelete and DeleteGroups on Apache Kafka (the session's real broker, issue 18
item 1): the group's side is Kafka's own clients, so what the operator reads right before the change is what
Kafka's group coordinator wrote, not what a test double thinks it writes.

- A KIP-848 group (Kafka's Java consumer, `group.protocol=consumer`) was Empty at the scan and has a member
  again at approval time. DescribeGroups shows such a group as Dead (it is not a classic group), and the new
  member reads another topic, so Kafka's own OffsetDelete would accept: only the re-check's facts (the
  group's records in its `__consumer_offsets` partition since the scan, ConsumerGroupDescribe) keep the
  offsets. Likewise a member back with a broker-side regular expression (SubscriptionPattern) that covers the
  topic.

(A simple group committing its unchanged offset again after the scan is test_fresh_verdict.py's, on the
`kafka` fixture too.) The operator runs on the real kube-apiserver (installed_api.py, a fresh namespace per
test); approvals pass the install's admission policy.

Each would have its offsets deleted (or Kafka's refusal instead of `Skipped`) if the operator acted on the
scan's verdict: the re-check (`OffsetDeletionReconciler._rederive`) is what these tests prove."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from brokers import make_topics
from java_clients import JavaConsumer
from kafka_clients import committed
from kafka_under_test import Kafka
from operator_harness import Kube, OperatorThread, condition
from test_fresh_verdict import approve, proposed, results

pytestmark = [pytest.mark.slow, pytest.mark.real_api]  # an operator under Kopf and a Java consumer per test

Start = Callable[..., OperatorThread]


@pytest.fixture
def real(kafka: Kafka) -> Kafka:
    if not kafka.is_real:
        pytest.skip("the same causes on the sandbox broker: test_fresh_verdict.py")
    return kafka


def emptied_kip848_group(kafka: Kafka, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """A KIP-848 group whose one member (Kafka's Java consumer) committed `offsets` and left: Empty."""
    with JavaConsumer(kafka.bootstrap_servers, group, sorted({t for t, _ in offsets}), protocol="consumer",
                      version=kafka.version) as consumer:
        consumer.wait_assigned(len(offsets))
        consumer.commit(offsets)


def test_a_kip_848_group_with_a_member_again_at_approval_keeps_its_offsets(
        real: Kafka, kube: Kube, start_operator: Start) -> None:
    make_topics(real, {"orders": 1, "payments": 1})
    emptied_kip848_group(real, "modern-back", {("orders", 0): 4})
    start_operator()
    kube.create("offsetdeletions", proposed("modern-back", real, "modern-back", {("orders", 0): 4}, "EmptyGroup",
                                            group_type="consumer"))
    kube.wait_for_phase("modern-back", "AwaitingApproval")
    with JavaConsumer(real.bootstrap_servers, "modern-back", ["payments"], protocol="consumer",
                      version=real.version) as back:
        back.wait_assigned(1)  # a member again, reading payments only: Kafka's OffsetDelete would accept orders
        status = approve(kube, "modern-back")
    why = results(status)[("orders", 0)]
    assert why[0] == "Skipped", status
    assert "ConsumerGroup" in why[1] and "since the scan" in why[1], why  # the records Kafka wrote, named
    assert committed(real.bootstrap_servers, "modern-back") == {("orders", 0): 4}
    assert "skipped 1" in condition(status, "Ready")["message"]


def test_a_kip_848_member_back_with_a_regex_covering_the_topic_keeps_its_offsets(
        real: Kafka, kube: Kube, start_operator: Start) -> None:
    if real.version.startswith("3."):
        pytest.skip(f"SubscriptionPattern (broker-side regular expressions) is Kafka 4.0+; this is {real.version}")
    make_topics(real, {"orders": 1})
    emptied_kip848_group(real, "regex-back", {("orders", 0): 2})
    start_operator()
    kube.create("offsetdeletions", proposed("regex-back", real, "regex-back", {("orders", 0): 2}, "EmptyGroup",
                                            group_type="consumer"))
    kube.wait_for_phase("regex-back", "AwaitingApproval")
    with JavaConsumer(real.bootstrap_servers, "regex-back", (), protocol="consumer", version=real.version,
                      regex="ord.*") as back:
        back.wait_assigned(1)  # Kafka resolved the expression: orders-0 is the member's again
        status = approve(kube, "regex-back")
    why = results(status)[("orders", 0)]
    assert why[0] == "Skipped", status  # not Kafka's GROUP_SUBSCRIBED_TO_TOPIC: nothing was sent
    assert "since the scan" in why[1] or "ord.*" in why[1], why
    assert committed(real.bootstrap_servers, "regex-back") == {("orders", 0): 2}
