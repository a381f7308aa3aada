"""Keep-alive proven on the sandbox broker with its clock (docs/keep-alive.md): protected groups keep their
offsets past the broker's retention, per group kind, while unprotected twins lose theirs; and the reason a
plain re-commit is not enough for an Empty classic group with a protocol type.

The scan is the reference analysis (the Spark job's oracle, same rules); keep-alive itself runs exactly as
the policy's reconciler runs it (reconcilers.keepalive.run_pass over adapters.kafka_admin)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from operator_kafka import empty_group, live_group, make_topics
from policy_scenario import RETENTION_MS, admin_commit, committed, empty_kip848_group, scan

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.decisions.keepalive import lead_ms
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.offsets import TP, Committed
from kafka_offset_operator.reconcilers.keepalive import BLOCKED, REBASED, RECOMMITTED, RESUMED, run_pass
from kafka_sandbox import SandboxBroker

HOUR_MS = 3_600_000
PROTECT = {"protect": {"groups": ["billing-*", "batch-*", "modern-*"], "keepAlive": True}}
INVOICES = {("invoices", 0): 3, ("invoices", 1): 4}


class MemoryStore:
    """reconcilers.keepalive.BackupStore in a dict: the operator keeps it in a ConfigMap (ConfigMapStore)."""

    def __init__(self) -> None:
        self.backups: dict[str, dict[TP, Committed]] = {}

    def load_all(self) -> dict[str, dict[TP, Committed]]:
        return {g: dict(o) for g, o in self.backups.items()}

    def save(self, group: str, offsets: Mapping[TP, Committed]) -> None:
        self.backups[group] = dict(offsets)

    def drop(self, group: str) -> None:
        self.backups.pop(group, None)


def admin(broker: SandboxBroker) -> KafkaAdmin:
    return KafkaAdmin(ConnectionSettings(broker.bootstrap_servers), timeout_ms=5000)


def keep_alive(broker: SandboxBroker, store: MemoryStore) -> dict[str, str]:
    report = scan(broker, PROTECT)
    with admin(broker) as a:
        results = run_pass(a, store, report.protected, broker.clock.now_ms(), lead_ms(RETENTION_MS, HOUR_MS))
    return {r.group: r.outcome for r in results}


def test_protected_groups_outlive_the_broker_retention_per_group_kind(broker: SandboxBroker) -> None:
    make_topics(broker, {"invoices": 2})
    empty_group(broker, "billing-monthly", INVOICES)  # classic, protocol "consumer", Empty
    empty_group(broker, "unprotected-monthly", INVOICES)  # its unprotected twin
    admin_commit(broker, "batch-standalone", INVOICES)  # a simple group
    admin_commit(broker, "unprotected-standalone", INVOICES)
    empty_kip848_group(broker, "modern-batch", INVOICES)  # KIP-848, Empty
    store = MemoryStore()

    assert keep_alive(broker, store) == {}  # nothing is due yet: expiry is 7 days away

    broker.clock.advance(days=4)  # within half the retention of expiry: due
    assert keep_alive(broker, store) == {
        "billing-monthly": REBASED, "batch-standalone": RECOMMITTED, "modern-batch": RECOMMITTED}
    with admin(broker) as a:
        rebased = a.describe_group("billing-monthly")
    assert (rebased.state, rebased.protocol_type) == ("Empty", "")  # a simple group now
    assert store.backups == {}  # the backup is dropped once the offsets are back

    broker.clock.advance(days=4)  # 8 days after the groups became Empty or committed: past retention
    broker.expire_offsets()
    for group in ("billing-monthly", "batch-standalone", "modern-batch"):
        assert committed(broker, group) == INVOICES, group
    assert committed(broker, "unprotected-monthly") == {}
    assert committed(broker, "unprotected-standalone") == {}

    # Every group is now kept alive by re-commits, run after run.
    assert keep_alive(broker, store) == {
        "billing-monthly": RECOMMITTED, "batch-standalone": RECOMMITTED, "modern-batch": RECOMMITTED}
    broker.clock.advance(days=5)
    broker.expire_offsets()
    for group in ("billing-monthly", "batch-standalone", "modern-batch"):
        assert committed(broker, group) == INVOICES, group

    # The monthly job comes back: it joins the (simple) group and resumes from the kept offsets (a lost
    # position would restart at 0: auto.offset.reset is earliest).
    assert first_offsets_read(broker, "billing-monthly") == {("invoices", 0): 3, ("invoices", 1): 4}
    with admin(broker) as a:
        assert a.describe_group("billing-monthly").protocol_type == "consumer"  # Empty consumer group again


def first_offsets_read(broker: SandboxBroker, group: str) -> dict[tuple[str, int], int]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        consumer.partitions_for_topic("invoices")  # before joining: see operator_kafka._consumer
        consumer.subscribe(["invoices"])
        first: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + 20
        while len(first) < 2 and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                first.setdefault((tp.topic, tp.partition), records[0].offset)
        return first
    finally:
        consumer.close()


def test_a_recommit_alone_does_not_postpone_an_empty_consumer_groups_expiry(broker: SandboxBroker) -> None:
    """Why a rebase is needed: the admin OffsetCommit refreshes the commit time, but an Empty classic group
    with a protocol type expires from the time it became Empty (currentStateTimestamp)."""
    make_topics(broker, {"invoices": 2})
    empty_group(broker, "monthly", INVOICES)
    broker.clock.advance(days=4)
    admin_commit(broker, "monthly", INVOICES)
    broker.clock.advance(days=3)  # 7 days after it became Empty, 3 days after the re-commit
    broker.expire_offsets()
    assert committed(broker, "monthly") == {}


def test_an_interrupted_rebase_is_finished_without_overwriting_newer_commits(broker: SandboxBroker) -> None:
    make_topics(broker, {"invoices": 2})
    empty_group(broker, "billing-monthly", INVOICES)
    store = MemoryStore()
    # An operator that saved its backup and deleted the group, then died before committing it back:
    with admin(broker) as a:
        store.save("billing-monthly", a.committed_offsets("billing-monthly"))
        assert a.delete_group("billing-monthly") is None
    # ... and meanwhile the job started, found no offsets, and commits partition 0 itself while it runs.
    with live_group(broker, "billing-monthly", ["invoices"]) as consumer:
        consumer.commit({TopicPartition("invoices", 0): OffsetAndMetadata(1, "", -1)})
        assert keep_alive(broker, store) == {"billing-monthly": BLOCKED}  # members: nothing can be committed
        assert "billing-monthly" in store.backups
    assert keep_alive(broker, store) == {"billing-monthly": RESUMED}
    assert committed(broker, "billing-monthly") == {("invoices", 0): 1, ("invoices", 1): 4}  # 0 kept as it was
    assert store.backups == {}
