"""The policy's decisions as data in / data out: spec parsing, the live re-check, the OffsetDeletions it
proposes, the status it writes, its schedule, and keep-alive plans. No doubles, no I/O."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import pytest

from kafka_offset_operator.decisions import keepalive, policy_status, proposals, schedule
from kafka_offset_operator.decisions.deletion_spec import parse_spec
from kafka_offset_operator.decisions.keepalive import KeepAlivePlan, Method
from kafka_offset_operator.decisions.policy_spec import Engine, Mode, parse_policy_spec
from kafka_offset_operator.model.offsets import Committed, GroupInfo, Member
from kafka_offset_operator.model.report import ReportError, from_rows, read_report
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy import Protection
from offset_expiry.report import write_json

DAY = 86_400_000
NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z
KAFKA = {"bootstrapServers": "kafka:9092"}
POLICY_BODY = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": "ConsumerGroupOffsetPolicy",
               "metadata": {"name": "stale", "namespace": "kafka", "uid": "u-1", "generation": 3}}


def row(group: str, topic: str, partition: int, offset: int, reason: str = "EmptyGroup", *, candidate: bool = True,
        group_type: str = "classic", state: str = "Empty", protocol: str = "consumer",
        expires: int | None = NOW + DAY) -> dict[str, Any]:
    return {"group": group, "groupType": group_type, "groupState": state, "protocolType": protocol,
            "topic": topic, "partition": partition, "offset": offset, "commitTimestamp": NOW - 5 * DAY,
            "brokerExpiresAt": expires, "candidate": candidate, "reason": reason}


SUMMARY = {"recordsScanned": 120, "groups": 4, "offsets": 9, "candidates": 3, "skippedRecords": 1,
           "byReason": {"EmptyGroup": 2, "Standalone": 1, "Protected": 1, "WithinRetention": 5}, "snapshot": {"0": 120}}


# -- spec


def test_a_minimal_spec_gets_the_crd_defaults() -> None:
    spec = parse_policy_spec({"kafka": KAFKA})
    assert (spec.mode, spec.engine, spec.interval_ms, spec.broker_retention_ms) == (Mode.DRY_RUN, Engine.LOCAL, 3_600_000, None)
    assert spec.analysis_spec["groups"] == {"include": ["*"], "exclude": []}


@pytest.mark.parametrize(("spec", "field"), [
    ({"kafka": KAFKA, "mode": "Sometimes"}, "spec.mode"),
    ({"kafka": KAFKA, "schedule": {"interval": "often"}}, "spec.schedule.interval"),
    ({"kafka": KAFKA, "schedule": {"interval": "0s"}}, "spec.schedule.interval"),
    ({"kafka": KAFKA, "rules": {"emptyGroupRetention": "3 days"}}, "spec.rules.emptyGroupRetention"),
    ({"kafka": KAFKA, "analysis": {"engine": "Flink"}}, "spec.analysis.engine"),
    ({"kafka": KAFKA, "analysis": {"brokerRetention": "7"}}, "spec.analysis.brokerRetention"),
    ({"kafka": KAFKA, "analysis": {"sparkApplication": {"executor": {"instances": 0}}}},
     "spec.analysis.sparkApplication.executor.instances"),
    ({"kafka": KAFKA, "analysis": {"sparkApplication": {"driver": {"memory": "lots"}}}},
     "spec.analysis.sparkApplication.driver.memory"),
    ({"kafka": KAFKA, "protect": {"keepAlive": "yes"}}, "spec.protect.keepAlive"),
    ({"mode": "DryRun"}, "spec.kafka"),
])
def test_every_bad_field_is_named(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_policy_spec(spec)
    assert err.value.field == field


# -- results


def test_a_report_is_read_line_by_line_keeping_candidates_and_protected_offsets() -> None:
    rows = [row("a", "t", 0, 5), row("b", "t", 0, 1, "WithinRetention", candidate=False),
            row("keep", "t", 1, 2, "Protected", candidate=False)]
    out = io.StringIO()
    write_json(out, {"summary": SUMMARY, "offsets": rows})
    report = read_report(io.StringIO(out.getvalue()))
    assert [o.group for o in report.candidates] == ["a"]
    assert [o.group for o in report.protected] == ["keep"]
    assert report.candidates_by_reason == {"DeletedTopic": 0, "EmptyGroup": 2, "ExpireTimestamp": 0, "StaleGroup": 0,
                                           "Standalone": 1, "UnsubscribedTopic": 0}
    empty = io.StringIO()
    write_json(empty, {"summary": SUMMARY, "offsets": []})
    assert read_report(io.StringIO(empty.getvalue())).candidates == ()
    with pytest.raises(ReportError):
        read_report(io.StringIO(out.getvalue()[:-20]))  # truncated
    with pytest.raises(ReportError):
        read_report(io.StringIO(json.dumps({"offsets": []})))


# -- live re-check


def proposal(*rows_: dict[str, Any]) -> proposals.Proposal:
    [p] = proposals.proposals(from_rows(SUMMARY, rows_).candidates)
    return p


EMPTY = GroupInfo("g", "Empty", "consumer")
NONE = Protection()


def test_recheck_keeps_partitions_still_at_their_scanned_offset() -> None:
    p = proposal(row("g", "t", 0, 5), row("g", "t", 1, 7), row("g", "u", 0, 1))
    live = {("t", 0): Committed(5), ("t", 1): Committed(9)}  # t-1 committed since the scan, u-0 gone
    result = proposals.recheck(p, EMPTY, live, NONE)
    assert result.proposal is not None and dict(result.proposal.offsets) == {("t", 0): 5}
    assert {(s.topic, s.partition, s.why) for s in result.skipped} == {
        ("t", 1, proposals.COMMITTED_SINCE_SCAN), ("u", 0, proposals.NOT_COMMITTED)}


def test_recheck_drops_groups_whose_premise_changed() -> None:
    member = Member("m", "c", "/h", ("t",))
    stable = GroupInfo("g", "Stable", "consumer", "range", (member,))
    empty_rule = proposal(row("g", "t", 0, 5))
    assert proposals.recheck(empty_rule, stable, {("t", 0): Committed(5)}, NONE).skipped[0].why == proposals.GROUP_ACTIVE
    unsubscribed = proposal(row("g", "t", 0, 5, "UnsubscribedTopic", state="Stable"),
                            row("g", "old", 0, 5, "UnsubscribedTopic", state="Stable"))
    result = proposals.recheck(unsubscribed, stable, {("t", 0): Committed(5), ("old", 0): Committed(5)}, NONE)
    assert result.proposal is not None and set(result.proposal.offsets) == {("old", 0)}
    assert result.skipped[0].why == proposals.SUBSCRIBED
    unknown = GroupInfo("g", "Stable", "consumer", "range", (Member("m", "c", "/h", None),))
    assert proposals.recheck(unsubscribed, unknown, {("old", 0): Committed(5)}, NONE).proposal is None
    standalone = proposal(row("g", "t", 0, 5, "Standalone", protocol=""))
    assert proposals.recheck(standalone, EMPTY, {("t", 0): Committed(5)}, NONE).skipped[0].why == proposals.NOT_SIMPLE
    protected = proposals.recheck(empty_rule, EMPTY, {("t", 0): Committed(5)}, Protection(groups=("g",)))
    assert protected.proposal is None and protected.skipped[0].why == proposals.PROTECTED


def test_kip848_groups_are_compared_by_offset_only() -> None:
    p = proposal(row("m", "t", 0, 5, "UnsubscribedTopic", group_type="consumer", state="Stable"))
    invisible = GroupInfo("m", "Dead", error="GROUP_ID_NOT_FOUND")
    assert proposals.recheck(p, invisible, {("t", 0): Committed(5)}, NONE).proposal is not None


# -- children


def test_children_are_named_by_content_and_approved_per_mode() -> None:
    p = proposal(row("orders-app", "t", 1, 5), row("orders-app", "t", 0, 4))
    assert proposals.children(POLICY_BODY, [p], Mode.DRY_RUN, NOW) == []
    [approve] = proposals.children(POLICY_BODY, [p], Mode.APPROVE, NOW)
    [auto] = proposals.children(POLICY_BODY, [p], Mode.AUTO, NOW)
    assert approve["metadata"]["name"] == auto["metadata"]["name"] == proposals.child_name("stale", p)
    assert approve["metadata"]["name"].startswith("stale-")
    assert (approve["spec"]["approved"], auto["spec"]["approved"]) == (False, True)
    assert approve["spec"]["topics"] == [{"name": "t", "partitions": [0, 1]}]
    scanned = NOW - 5 * DAY
    assert approve["spec"]["expectedOffsets"] == [
        {"topic": "t", "partition": 0, "offset": 4, "reason": "EmptyGroup", "commitTimestamp": scanned},
        {"topic": "t", "partition": 1, "offset": 5, "reason": "EmptyGroup", "commitTimestamp": scanned}]
    assert approve["spec"]["policyRef"] == {"name": "stale"}
    assert parse_spec(auto["spec"]).expected == {("t", 0): 4, ("t", 1): 5}  # the CRD's schema accepts it
    assert "scan" not in approve["spec"]  # without the report's snapshot, no scan facts
    # Not owned by the policy (its deletion must not garbage-collect them): provenance by label and uid.
    assert "ownerReferences" not in approve["metadata"]
    assert approve["metadata"]["labels"]["kafkaoffsets.dev/policy"] == "stale"
    assert approve["metadata"]["annotations"][proposals.POLICY_UID] == "u-1"
    recommitted = proposal(row("orders-app", "t", 1, 5), row("orders-app", "t", 0, 4))
    recommitted = dataclasses.replace(recommitted, commit_times={**recommitted.commit_times, ("t", 1): NOW})
    assert proposals.child_name("stale", recommitted) != proposals.child_name("stale", p)  # same offsets, new commit
    moved = proposal(row("orders-app", "t", 1, 6), row("orders-app", "t", 0, 4))
    assert proposals.child_name("stale", moved) != proposals.child_name("stale", p)  # different offsets, new proposal
    long = proposals.child_name("x" * 80, p)
    assert len(long) <= 63 and long[-11] == "-"


# -- status


def test_a_run_writes_lastrun_top_candidates_and_ready() -> None:
    report = from_rows(SUMMARY, [row("a", "t", 0, 5), row("a", "t", 1, 5), row("b", "u", 0, 1, "Standalone", protocol="")])
    run = policy_status.RunSummary("Local", NOW - 60_000, NOW, report, Mode.APPROVE, deletions_created=2,
                          skipped=(proposals.Skip("b", "u", 0, proposals.COMMITTED_SINCE_SCAN),))
    patch = policy_status.run_succeeded({}, run, NOW + DAY, 3)
    assert patch["lastRun"] == {
        "startTime": "2025-12-31T23:59:00Z", "completionTime": "2026-01-01T00:00:00Z", "engine": "Local",
        "recordsScanned": 120, "skippedRecords": 1, "groupsSeen": 4, "offsets": 9, "candidates": 3,
        "candidatesByReason": {"DeletedTopic": 0, "EmptyGroup": 2, "ExpireTimestamp": 0, "StaleGroup": 0, "Standalone": 1,
                               "UnsubscribedTopic": 0},
        "deletionsCreated": 2}
    assert patch["nextRunTime"] == "2026-01-02T00:00:00Z"
    assert patch["observedGeneration"] == 3
    assert patch["topCandidates"][0] == {"group": "a", "topics": ["t"], "partitions": 2, "reason": "EmptyGroup",
                                         "brokerExpiresAt": "2026-01-02T00:00:00Z"}
    ready, degraded = patch["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "AnalysisSucceeded")
    assert "2 OffsetDeletions created" in ready["message"] and "1 CommittedSinceScan" in ready["message"]
    assert (degraded["type"], degraded["status"]) == ("Degraded", "False")


def test_failures_degrade_and_invalid_specs_wait_for_a_new_generation() -> None:
    failed = policy_status.run_failed({}, "KafkaUnavailable", "cannot reach Kafka", NOW, NOW + 30_000, 3)
    assert [(c["type"], c["status"], c["reason"]) for c in failed["conditions"]] == [
        ("Ready", "False", "KafkaUnavailable"), ("Degraded", "True", "KafkaUnavailable"),
        ("Reconciling", "True", "KafkaUnavailable")]  # retried: kstatus InProgress
    assert schedule.due(3, failed, NOW + 29_000) is False
    assert schedule.due(3, failed, NOW + 30_000) is True
    invalid = policy_status.spec_invalid({}, "spec.mode", "'x' is not one of DryRun, Approve, Auto", "InvalidSpec", NOW, 3)
    assert invalid["conditions"][0]["message"].startswith("spec.mode: ")
    assert [(c["type"], c["status"]) for c in invalid["conditions"]][2:] == [("Stalled", "True")]  # waits for a person
    status = {**invalid, "nextRunTime": None}
    assert schedule.due(3, status, NOW + 10 * DAY) is False  # no crash loop
    assert schedule.due(4, status, NOW) is True  # the spec changed


def test_a_change_of_the_ready_condition_is_one_event_and_a_retry_none() -> None:
    failed = policy_status.run_failed({}, "KafkaUnavailable", "cannot reach Kafka", NOW, NOW + 30_000, 3)
    assert policy_status.ready_event({}, failed) == ("Warning", "KafkaUnavailable", "cannot reach Kafka")
    again = policy_status.run_failed(failed, "KafkaUnavailable", "cannot reach Kafka", NOW + 30_000, NOW + 90_000, 3)
    assert policy_status.ready_event(failed, again) is None  # a retry of the same problem
    invalid = policy_status.spec_invalid(failed, "spec.mode", "'x' is not one of DryRun", "InvalidSpec", NOW, 4)
    assert policy_status.ready_event(failed, invalid) == ("Warning", "InvalidSpec", "spec.mode: 'x' is not one of DryRun")
    running = policy_status.running(invalid, "Local", NOW, 5)
    assert policy_status.ready_event(invalid, running) is None  # Progressing only


def test_backoff_doubles_up_to_the_interval() -> None:
    delays = [schedule.retry_delay_ms(n, 1000, 6000) for n in range(1, 6)]
    assert delays == [1000, 2000, 4000, 6000, 6000]
    assert schedule.retry_delay_ms(50, 30_000, 86_400_000) == schedule.MAX_BACKOFF_MS


# -- keep-alive


def protected(group_type: str = "classic", protocol: str = "consumer", state: str = "Empty",
              expires: int | None = NOW + 3 * DAY) -> keepalive.ProtectedGroup:
    rows = [row("billing", "inv", 0, 5, "Protected", candidate=False, group_type=group_type, state=state,
                protocol=protocol, expires=expires)]
    [group] = keepalive.protected_groups(from_rows(SUMMARY, rows).protected)
    return group


def test_keep_alive_picks_the_mechanism_that_works_for_the_group_kind() -> None:
    lead = keepalive.lead_ms(7 * DAY, 3_600_000)
    assert lead == int(3.5 * DAY)
    empty = GroupInfo("billing", "Empty", "consumer")
    simple = GroupInfo("billing", "Empty", "")
    assert keepalive.plan_group(protected(), empty, NOW, lead).method is Method.REBASE
    assert keepalive.plan_group(protected(protocol=""), simple, NOW, lead).method is Method.RECOMMIT
    assert keepalive.plan_group(protected("consumer"), GroupInfo("billing", "Dead"), NOW, lead).method is Method.RECOMMIT
    busy = GroupInfo("billing", "Stable", "consumer", "range", (Member("m", "c", "/h", ("inv",)),))
    blocked = keepalive.plan_group(protected(state="Stable"), busy, NOW, lead)
    assert blocked.method is None and blocked.blocked and "members" in blocked.blocked
    later = keepalive.plan_group(protected(expires=NOW + 5 * DAY), empty, NOW, lead)
    assert later == KeepAlivePlan("billing", None)  # nothing yet: the run within `lead` of the expiry acts
    assert keepalive.plan_group(protected(expires=None), empty, NOW, lead) == KeepAlivePlan("billing", None)
    assert keepalive.lead_ms(7 * DAY, 5 * DAY) == 7 * DAY  # rare runs: act at every run


def test_earliest_expiries_keep_the_first_groups_of_each_kind() -> None:
    from kafka_offset_operator.model.report import Report, ScannedOffset

    def offset(group: str, partition: int, expires: int | None) -> ScannedOffset:
        return ScannedOffset(group, "classic", "Empty", "consumer", "t", partition, 1, 0, expires, True, "EmptyGroup")

    report = Report({}, (offset("a", 0, 300), offset("a", 1, 100), offset("b", 0, 200), offset("c", 0, None)),
                    (offset("keep", 0, 50),))
    assert policy_status.earliest_expiries(report, 1) == {("candidate", "a"): 100, ("protected", "keep"): 50}
    assert policy_status.earliest_expiries(report, 5) == {("candidate", "a"): 100, ("candidate", "b"): 200,
                                                          ("protected", "keep"): 50}


def test_group_patterns_that_look_like_regexes_or_match_nothing_are_warned_about_in_the_status() -> None:
    """Issue 11: the analyze CLI's warnings about group patterns, carried into the policy's status."""
    spec = parse_policy_spec({"kafka": KAFKA, "groups": {"include": ["^live-.*$", "team-*"], "exclude": ["tmp-*"]}})
    report = from_rows(SUMMARY, [row("team-a", "t", 0, 5), row("live-x", "t", 0, 1, candidate=False,
                                                                 reason="WithinRetention")])
    assert report.groups == {"team-a", "live-x"}
    warnings = policy_status.policy_warnings(spec.policy, report.groups)
    assert warnings == [
        "spec.groups.include: '^live-.*$' looks like a regular expression, but group patterns are globs "
        "(*, ?, [abc]) matched against the whole group id; did you mean 'live-*'?",
        "spec.groups.include: '^live-.*$' matches none of the 2 groups with committed offsets",
        "spec.groups.exclude: 'tmp-*' matches none of the 2 groups with committed offsets",
    ]
    run = policy_status.RunSummary("Local", NOW - 60_000, NOW, report, Mode.DRY_RUN, warnings=tuple(warnings))
    patch = policy_status.run_succeeded({}, run, NOW + DAY, 3)
    assert patch["warnings"] == warnings
    assert "3 warnings about group patterns (status.warnings)" in patch["conditions"][0]["message"]
    clean = policy_status.run_succeeded({}, policy_status.RunSummary("Local", NOW, NOW, report, Mode.DRY_RUN), NOW, 3)
    assert clean["warnings"] == []  # a fixed spec clears them


def test_children_carry_the_facts_of_the_scan_for_the_re_check_before_deleting() -> None:
    """spec.scan: the group's __consumer_offsets partition (abs(javaHashCode) % partitions) and where the
    scan's snapshot of it ended, so the deletion reads only what the group wrote since."""
    from kafka_offsets_model.codec import partition_for

    p = proposal(row("orders-app", "t", 0, 4))
    snapshot = {str(i): 100 + i for i in range(50)}
    [child] = proposals.children(POLICY_BODY, [p], Mode.APPROVE, NOW, snapshot=snapshot)
    home = partition_for("orders-app", 50)
    assert child["spec"]["scan"] == {"time": "2026-01-01T00:00:00Z", "offsetsPartition": home,
                                     "offsetsEndOffset": 100 + home, "groupType": "classic", "groupState": "Empty"}
    parsed = parse_spec(child["spec"])
    assert parsed.scan is not None and (parsed.scan.offsets_partition, parsed.scan.end_offset) == (home, 100 + home)
    assert parsed.reasons == {("t", 0): "EmptyGroup"} and parsed.commit_times == {("t", 0): NOW - 5 * DAY}
