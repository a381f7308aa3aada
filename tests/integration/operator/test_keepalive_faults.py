"""Keep-alive's rebase (DeleteGroups, then the admin OffsetCommit of its backup: the one keep-alive step that
removes offsets for a moment) struck by the sandbox broker's faults, as the policy's reconciler runs it
(reconcilers.keepalive over adapters.kafka_admin, in Approve or Auto mode; DryRun sends neither request).

The documented outcome (docs/safety.md, "Fault matrix"): an error answer changes nothing and is reported
Blocked, the next run rebases; a lost request or a lost answer raises (the run is retried) with the backup
still in the store, and the next run's resume_interrupted re-commits only what is missing. The group never
ends without its offsets."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from brokers import make_topics
from kafka_clients import committed, empty_group
from test_policy_keepalive import INVOICES, MemoryStore, admin, audit_lines

from kafka_offset_operator.decisions.keepalive import KeepAlivePlan, Method
from kafka_offset_operator.model.offsets import KafkaFailure
from kafka_offset_operator.reconcilers.keepalive import (
    BLOCKED,
    REBASED,
    RESUMED,
    carry_out,
    resume_interrupted,
)
from kafka_sandbox import SandboxBroker
from kafka_sandbox.faults import Fault

pytestmark = pytest.mark.slow  # a consumer group per case (a join takes a second)

GROUP = "billing-monthly"
LATE_S = 6.0  # beyond the adapter's 5 s request timeout (test_policy_keepalive.admin)

FAULTS: dict[str, Callable[[SandboxBroker, str], Fault]] = {
    "NOT_COORDINATOR": lambda b, api: b.faults.error(api, "NOT_COORDINATOR", group=GROUP),
    "COORDINATOR_LOAD_IN_PROGRESS": lambda b, api: b.faults.error(api, "COORDINATOR_LOAD_IN_PROGRESS", group=GROUP),
    "reset": lambda b, api: b.faults.reset(api, group=GROUP),
    "reset-applied": lambda b, api: b.faults.reset(api, group=GROUP, applied=True),
    "timeout": lambda b, api: b.faults.delay(api, LATE_S, group=GROUP),
}
# (api, fault) -> (what the struck pass gives, what the next run gives)
MATRIX = {
    ("DeleteGroups", "NOT_COORDINATOR"): (BLOCKED, REBASED),
    ("DeleteGroups", "COORDINATOR_LOAD_IN_PROGRESS"): (BLOCKED, REBASED),
    ("DeleteGroups", "reset"): ("KafkaFailure", REBASED),  # nothing deleted: the stale backup is dropped
    ("DeleteGroups", "reset-applied"): ("KafkaFailure", RESUMED),
    ("DeleteGroups", "timeout"): ("KafkaFailure", RESUMED),
    ("OffsetCommit", "NOT_COORDINATOR"): ("KafkaFailure", RESUMED),
    ("OffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"): ("KafkaFailure", RESUMED),
    ("OffsetCommit", "reset"): ("KafkaFailure", RESUMED),
    ("OffsetCommit", "reset-applied"): ("KafkaFailure", None),  # committed: the next run only drops the backup
}


def next_run(broker: SandboxBroker, store: MemoryStore) -> str | None:
    """What the policy's next run does for the group: finish an interrupted rebase, else rebase if due."""
    with admin(broker) as a:
        resumed = resume_interrupted(a, store)
        if resumed:
            return resumed[0].outcome
        if committed(broker.bootstrap_servers, GROUP) == INVOICES and a.describe_group(GROUP).protocol_type:
            result = carry_out(a, store, KeepAlivePlan(GROUP, Method.REBASE))
            return result.outcome if result else None
    return None


@pytest.mark.parametrize(("api", "fault"), list(MATRIX), ids=[f"{a}-{f}" for a, f in MATRIX])
def test_a_fault_during_a_rebase_never_leaves_the_group_without_its_offsets(
        broker: SandboxBroker, api: str, fault: str) -> None:
    make_topics(broker, {"invoices": 2})
    empty_group(broker.bootstrap_servers, GROUP, INVOICES)
    store = MemoryStore()
    struck = FAULTS[fault](broker, api)
    with admin(broker) as a, audit_lines() as lines:
        try:
            first = carry_out(a, store, KeepAlivePlan(GROUP, Method.REBASE))
            outcome = first.outcome if first else None
        except KafkaFailure as failure:
            outcome = "KafkaFailure"
            assert failure.retriable, failure
    broker.faults.clear()
    assert struck.hits == 1
    if fault in ("reset", "reset-applied", "timeout"):  # sent, answer lost: Kafka may have applied it
        assert [line for line in lines if line.startswith(f"{api} ") and "ok=0 errors=" in line
                and "errors=none" not in line], lines
    expected_first, expected_next = MATRIX[(api, fault)]
    assert outcome == expected_first
    if outcome == "KafkaFailure":
        assert {tp: c.offset for tp, c in store.backups[GROUP].items()} == INVOICES  # kept for the next run
    else:
        assert store.backups == {} and committed(broker.bootstrap_servers, GROUP) == INVOICES  # nothing changed
    assert next_run(broker, store) == expected_next
    assert committed(broker.bootstrap_servers, GROUP) == INVOICES
    assert store.backups == {}
