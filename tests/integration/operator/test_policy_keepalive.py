"""Keep-alive proven on the sandbox broker with its clock (docs/keep-alive.md): protected groups keep their
offsets past the broker's retention, per group kind, while unprotected twins lose theirs; and the reason a
plain re-commit is not enough for an Empty classic group with a protocol type.

The scan is the reference analysis (the Spark job's oracle, same rules); keep-alive itself runs exactly as
the policy's reconciler runs it (reconcilers.keepalive.run_pass over adapters.kafka_admin). The weeks of a
protected group's life are fixtures, each one step further (nothing due, due, past retention, kept alive
run after run); each test proves what one step does."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from analysis_reference import analyze_records
from brokers import make_topics, sandbox_broker, seed_kip848_group
from kafka import TopicPartition
from kafka_clients import GroupConsumer, admin_commit, committed, empty_group, member
from waiting import wait_until

from kafka_offset_operator.adapters.kafka_admin import KafkaAdmin
from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.decisions.keepalive import lead_ms
from kafka_offset_operator.model.connection import ConnectionSettings
from kafka_offset_operator.model.offsets import TP, Committed, GroupInfo
from kafka_offset_operator.model.report import Report, from_rows
from kafka_offset_operator.reconcilers.keepalive import (
    BLOCKED,
    REBASED,
    RECOMMITTED,
    RESUMED,
    UNNEEDED,
    KeepAliveResult,
    audit_body,
    run_pass,
)
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord
from kafka_sandbox import SandboxBroker

HOUR_MS = 3_600_000
RETENTION_MS = 7 * 24 * HOUR_MS
PROTECT = {"protect": {"groups": ["billing-*", "batch-*", "modern-*"], "keepAlive": True}}
INVOICES = {("invoices", 0): 3, ("invoices", 1): 4}
PROTECTED = ("billing-monthly", "batch-standalone", "modern-batch")


OPERATOR = "system:serviceaccount:kafka-offset-operator:kafka-offset-operator"
POLICY_BODY = {"metadata": {"namespace": "kafka", "name": "guard"}}
WHO = audit_body(POLICY_BODY, OPERATOR, OPERATOR)  # mode Auto: the operator asks and approves


class MemoryStore:
    """reconcilers.keepalive.RebaseBackupStore in a dict: the operator keeps it in the backup store (RebaseBackups)."""

    def __init__(self) -> None:
        self.backups: dict[str, dict[TP, Committed]] = {}

    def load_all(self) -> dict[str, dict[TP, Committed]]:
        return {g: dict(o) for g, o in self.backups.items()}

    def save(self, group: str, offsets: Mapping[TP, Committed]) -> str:
        self.backups[group] = dict(offsets)
        return f"rebase-{group}"

    def backup_name(self, group: str) -> str | None:
        return f"rebase-{group}" if group in self.backups else None

    def drop(self, group: str) -> None:
        self.backups.pop(group, None)


def admin(broker: SandboxBroker) -> KafkaAdmin:
    return KafkaAdmin(ConnectionSettings(broker.bootstrap_servers), timeout_ms=5000)


def describe(broker: SandboxBroker, group: str) -> GroupInfo:
    with admin(broker) as a:
        return a.describe_group(group)


def scan(broker: SandboxBroker) -> Report:
    """The reference analysis of the broker's whole __consumer_offsets, as the operator reads a report."""
    with OffsetsTopicReader(broker.bootstrap_servers) as reader:
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    report = analyze_records(records, parse_policy(PROTECT), now_ms=broker.clock.now_ms(),
                             retention_ms=RETENTION_MS, existing_topics=None)
    return from_rows(report["summary"], report["offsets"])


def keep_alive(broker: SandboxBroker, store: MemoryStore) -> dict[str, str]:
    """One keep-alive pass, as the policy's reconciler runs it after an analysis: group -> outcome."""
    report = scan(broker)
    with admin(broker) as a:
        results = run_pass(a, store, report.protected, broker.clock.now_ms(), lead_ms(RETENTION_MS, HOUR_MS),
                           who=WHO)
    return {r.group: r.outcome for r in results}


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def audit_lines() -> Iterator[list[str]]:
    """The audit lines (logger kafka_offset_operator.audit, as `run` logs it at INFO) written meanwhile."""
    handler = Lines()
    logger = logging.getLogger("kafka_offset_operator.audit")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def lines_of(lines: list[str], call: str, group: str) -> list[str]:
    return [line for line in lines if line.startswith(f"{call} ") and f" group={group} " in line]


def committed_by_group(broker: SandboxBroker, *groups: str) -> dict[str, dict[tuple[str, int], int]]:
    return {group: committed(broker.bootstrap_servers, group) for group in groups}


# -- a protected group's weeks, step by step (once per module: each test reads what its step recorded)


@dataclass
class Groups:
    """One protected group of each kind and unprotected twins, all at INVOICES, and the keep-alive store."""

    broker: SandboxBroker
    store: MemoryStore


@pytest.fixture(scope="module")
def groups() -> Iterator[Groups]:
    with sandbox_broker() as broker:
        make_topics(broker, {"invoices": 2})
        empty_group(broker.bootstrap_servers, "billing-monthly", INVOICES)  # classic, protocol "consumer", Empty
        empty_group(broker.bootstrap_servers, "unprotected-monthly", INVOICES)  # its unprotected twin
        admin_commit(broker.bootstrap_servers, "batch-standalone", INVOICES)  # a simple group
        admin_commit(broker.bootstrap_servers, "unprotected-standalone", INVOICES)
        seed_kip848_group(broker, "modern-batch", INVOICES)  # KIP-848, Empty
        yield Groups(broker, MemoryStore())


@pytest.fixture(scope="module")
def nothing_due(groups: Groups) -> dict[str, str]:
    """The first pass, right after the commits: its outcomes."""
    return keep_alive(groups.broker, groups.store)


@dataclass
class Due:
    outcomes: dict[str, str]
    billing: GroupInfo  # billing-monthly right after the pass
    backups: dict[str, dict[TP, Committed]]  # the store right after the pass
    audit: list[str] = field(default_factory=list)  # the audit lines the pass wrote


@pytest.fixture(scope="module")
def due(groups: Groups, nothing_due: dict[str, str]) -> Due:
    """Four days later, within half the retention of expiry: the second pass."""
    groups.broker.clock.advance(days=4)
    with audit_lines() as lines:
        outcomes = keep_alive(groups.broker, groups.store)
    return Due(outcomes, describe(groups.broker, "billing-monthly"), dict(groups.store.backups), lines)


@pytest.fixture(scope="module")
def past_retention(groups: Groups, due: Due) -> dict[str, dict[tuple[str, int], int]]:
    """Eight days after the groups became Empty or committed, once the broker's expiration ran: what every
    group has committed."""
    groups.broker.clock.advance(days=4)
    groups.broker.expire_offsets()
    return committed_by_group(groups.broker, *PROTECTED, "unprotected-monthly", "unprotected-standalone")


@dataclass
class KeptAlive:
    outcomes: dict[str, str]  # the pass after the retention passed
    committed: dict[str, dict[tuple[str, int], int]]  # five more days and an expiration later


@pytest.fixture(scope="module")
def kept_alive(groups: Groups, past_retention: dict[str, dict[tuple[str, int], int]]) -> KeptAlive:
    outcomes = keep_alive(groups.broker, groups.store)
    groups.broker.clock.advance(days=5)
    groups.broker.expire_offsets()
    return KeptAlive(outcomes, committed_by_group(groups.broker, *PROTECTED))


def test_nothing_is_due_while_expiry_is_more_than_half_the_retention_away(nothing_due: dict[str, str]) -> None:
    assert nothing_due == {}  # expiry is 7 days away


def test_due_groups_are_rebased_or_recommitted_by_kind(due: Due) -> None:
    assert due.outcomes == {"billing-monthly": REBASED, "batch-standalone": RECOMMITTED, "modern-batch": RECOMMITTED}


def test_a_rebased_consumer_group_is_a_simple_group_and_its_backup_is_dropped(due: Due) -> None:
    assert (due.billing.state, due.billing.protocol_type) == ("Empty", "")  # a simple group now
    assert due.backups == {}  # the backup is dropped once the offsets are back


def test_every_write_of_keep_alive_has_its_audit_line_naming_the_policy_and_who_approved(due: Due) -> None:
    """Issue 18 item 4: the rebase's DeleteGroups and OffsetCommit, each re-commit: one line each, in the
    OffsetDeletion's format, with the policy, the backup and the operator as requester and approver."""
    who = f"approvedBy={OPERATOR} requestedBy={OPERATOR}"
    [deleted] = lines_of(due.audit, "DeleteGroups", "billing-monthly")
    assert deleted == ("DeleteGroups ConsumerGroupOffsetPolicy kafka/guard group=billing-monthly partitions=2 ok=2 "
                       "errors=none before=[invoices:0=3,invoices:1=4] after=[none] backup=rebase-billing-monthly "
                       f"{who}")
    [back] = lines_of(due.audit, "OffsetCommit", "billing-monthly")
    assert back == ("OffsetCommit ConsumerGroupOffsetPolicy kafka/guard group=billing-monthly partitions=2 ok=2 "
                    "errors=none before=[none] after=[invoices:0=3,invoices:1=4] backup=rebase-billing-monthly "
                    f"{who}")
    for group in ("batch-standalone", "modern-batch"):  # re-commits of unchanged offsets: the same before and after
        [line] = lines_of(due.audit, "OffsetCommit", group)
        assert ("ok=2 errors=none before=[invoices:0=3,invoices:1=4] after=[invoices:0=3,invoices:1=4] "
                f"backup=none {who}") in line, line
    assert len(due.audit) == 4, due.audit  # nothing else was changed


def test_protected_groups_outlive_the_broker_retention_and_unprotected_twins_do_not(
        past_retention: dict[str, dict[tuple[str, int], int]]) -> None:
    for group in PROTECTED:
        assert past_retention[group] == INVOICES, group
    assert past_retention["unprotected-monthly"] == {}
    assert past_retention["unprotected-standalone"] == {}


def test_every_protected_group_is_recommitted_run_after_run(kept_alive: KeptAlive) -> None:
    assert kept_alive.outcomes == {
        "billing-monthly": RECOMMITTED, "batch-standalone": RECOMMITTED, "modern-batch": RECOMMITTED}
    for group in PROTECTED:
        assert kept_alive.committed[group] == INVOICES, group


def test_the_returning_job_resumes_from_the_kept_offsets(groups: Groups, kept_alive: KeptAlive) -> None:
    # The monthly job comes back: it joins the (simple) group and resumes from the kept offsets (a lost
    # position would restart at 0: auto.offset.reset is earliest).
    assert first_offsets_read(groups.broker, "billing-monthly") == {("invoices", 0): 3, ("invoices", 1): 4}
    assert describe(groups.broker, "billing-monthly").protocol_type == "consumer"  # Empty consumer group again


def first_offsets_read(broker: SandboxBroker, group: str) -> dict[tuple[str, int], int]:
    """Where a member of `group` reading invoices starts on each partition."""
    with GroupConsumer(broker.bootstrap_servers, group, ["invoices"]) as consumer:
        wait_until(lambda: len({r.partition for r in consumer.received}) == 2, 20, "records of both partitions")
        records = list(consumer.received)
    first: dict[tuple[str, int], int] = {}
    for r in records:
        first.setdefault((r.topic, r.partition), r.offset)
    return first


# -- single steps


def test_a_recommit_alone_does_not_postpone_an_empty_consumer_groups_expiry(broker: SandboxBroker) -> None:
    """Why a rebase is needed: the admin OffsetCommit refreshes the commit time, but an Empty classic group
    with a protocol type expires from the time it became Empty (currentStateTimestamp)."""
    make_topics(broker, {"invoices": 2})
    empty_group(broker.bootstrap_servers, "monthly", INVOICES)
    broker.clock.advance(days=4)
    admin_commit(broker.bootstrap_servers, "monthly", INVOICES)
    broker.clock.advance(days=3)  # 7 days after it became Empty, 3 days after the re-commit
    broker.expire_offsets()
    assert committed(broker.bootstrap_servers, "monthly") == {}


def test_an_interrupted_rebase_is_finished_without_overwriting_newer_commits(broker: SandboxBroker) -> None:
    make_topics(broker, {"invoices": 2})
    empty_group(broker.bootstrap_servers, "billing-monthly", INVOICES)
    store = MemoryStore()
    # An operator that saved its backup and deleted the group, then died before committing it back:
    with admin(broker) as a:
        store.save("billing-monthly", a.committed_offsets("billing-monthly"))
        assert a.delete_group("billing-monthly") is None
    # ... and meanwhile the job started, found no offsets, and commits partition 0 itself while it runs.
    with member(broker.bootstrap_servers, "billing-monthly", ["invoices"]) as consumer:
        consumer.commit({("invoices", 0): 1})
        assert keep_alive(broker, store) == {"billing-monthly": BLOCKED}  # members: nothing can be committed
        assert "billing-monthly" in store.backups
    with audit_lines() as lines:
        assert keep_alive(broker, store) == {"billing-monthly": RESUMED}
    assert committed(broker.bootstrap_servers, "billing-monthly") == {("invoices", 0): 1, ("invoices", 1): 4}  # 0 kept as it was
    assert store.backups == {}
    # The DeleteGroups the dead operator sent is audited again (at-least-once), then the re-commit of 1 alone.
    [deleted] = lines_of(lines, "DeleteGroups", "billing-monthly")
    assert deleted.endswith(f"backup=rebase-billing-monthly approvedBy={OPERATOR} requestedBy={OPERATOR} "
                            "confirmed=after-restart"), deleted
    [back] = lines_of(lines, "OffsetCommit", "billing-monthly")
    assert "partitions=1 ok=1 errors=none before=[none] after=[invoices:1=4]" in back and "confirmed" not in back


def test_a_rebase_done_before_the_operator_died_gets_its_audit_lines_on_the_next_run(broker: SandboxBroker) -> None:
    """The operator deleted the group and committed the backup back, then died before its audit lines (and
    before dropping the backup): the next run finds every offset back in a group that is simple now, so both
    changes happened; their lines are written, marked confirmed after a restart. A backup of a group that was
    never deleted (still a consumer group) is dropped without a line."""
    make_topics(broker, {"invoices": 2})
    empty_group(broker.bootstrap_servers, "billing-monthly", INVOICES)
    empty_group(broker.bootstrap_servers, "billing-weekly", INVOICES)
    store = MemoryStore()
    with admin(broker) as a:
        store.save("billing-monthly", a.committed_offsets("billing-monthly"))
        assert a.delete_group("billing-monthly") is None
        store.save("billing-weekly", a.committed_offsets("billing-weekly"))  # died before its DeleteGroups
    admin_commit(broker.bootstrap_servers, "billing-monthly", INVOICES)
    with audit_lines() as lines:
        keep_alive(broker, store)
    assert store.backups == {}
    assert [line.split(" group=")[0] for line in lines] == [
        "DeleteGroups ConsumerGroupOffsetPolicy kafka/guard", "OffsetCommit ConsumerGroupOffsetPolicy kafka/guard"]
    assert all(line.endswith("confirmed=after-restart") and "billing-monthly" in line for line in lines), lines


# -- the verdict from fresh facts (decisions/fresh_verdict.py): what the group did since the scan


def scan_with_snapshot(broker: SandboxBroker) -> Report:
    """scan(), with the report's snapshot (each __consumer_offsets partition's end offset when it was read), as
    the analysis reports it and the policy passes it to keep-alive."""
    with OffsetsTopicReader(broker.bootstrap_servers) as reader:
        tps = [TopicPartition("__consumer_offsets", p) for p in reader.partitions]
        ends = reader._consumer.end_offsets(tps)
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    report = analyze_records(records, parse_policy(PROTECT), now_ms=broker.clock.now_ms(),
                             retention_ms=RETENTION_MS, existing_topics=None,
                             snapshot={tp.partition: int(end) for tp, end in ends.items()})
    return from_rows(report["summary"], report["offsets"])


def keep_alive_after(broker: SandboxBroker, report: Report) -> dict[str, KeepAliveResult]:
    with admin(broker) as a:
        results = run_pass(a, MemoryStore(), report.protected, broker.clock.now_ms(), lead_ms(RETENTION_MS, HOUR_MS),
                           snapshot=report.summary["snapshot"])
    return {r.group: r for r in results}


def test_partitions_the_group_committed_itself_since_the_scan_are_not_re_committed(broker: SandboxBroker) -> None:
    """A simple group due for a re-commit commits partition 0's unchanged position after the scan: its expiry
    restarted, so keep-alive re-commits only partition 1 (and does not race the consumer on partition 0)."""
    make_topics(broker, {"invoices": 2})
    admin_commit(broker.bootstrap_servers, "batch-standalone", INVOICES)
    broker.clock.advance(days=4)
    report = scan_with_snapshot(broker)
    sent = broker.faults.count("OffsetCommit", group="batch-standalone")
    admin_commit(broker.bootstrap_servers, "batch-standalone", {("invoices", 0): 3})  # after the scan
    result = keep_alive_after(broker, report)["batch-standalone"]
    assert result.outcome == RECOMMITTED and result.partitions == 1, result
    assert "1 committed by the group itself since the scan left as they are" in result.message
    assert sent.hits == 2  # the consumer's commit, and keep-alive's of partition 1 alone


def test_a_group_that_went_through_a_rebalance_since_the_scan_is_not_rebased(broker: SandboxBroker) -> None:
    """An Empty consumer group due for a rebase: its consumer ran (joined, committed, left) after the scan,
    so it became Empty again and its expiry moved. The rebase (DeleteGroups and a re-commit) is not needed:
    not done; the next run decides from a new scan."""
    make_topics(broker, {"invoices": 2})
    empty_group(broker.bootstrap_servers, "billing-monthly", INVOICES)
    broker.clock.advance(days=4)
    report = scan_with_snapshot(broker)
    empty_group(broker.bootstrap_servers, "billing-monthly", INVOICES)  # after the scan
    result = keep_alive_after(broker, report)["billing-monthly"]
    assert result.outcome == UNNEEDED and "metadata was rewritten" in result.message, result
    assert describe(broker, "billing-monthly").protocol_type == "consumer"  # not rebased
