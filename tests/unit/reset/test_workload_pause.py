"""decisions/workload_pause.py with plain data: what is recorded before scaling, when the wait times out,
and what a scale back does with each workload (a person's scaling wins)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_offset_operator.decisions import workload_pause as pause
from kafka_offset_operator.decisions.reset_spec import parse_reset_spec
from kafka_offset_operator.decisions.reset_steps import needs_work
from kafka_offset_operator.model.offsets import GroupInfo, Member
from kafka_offsets_model.errors import SpecError

NOW = "2026-11-25T10:00:00Z"
API, WORKER = pause.Workload("Deployment", "api"), pause.Workload("StatefulSet", "worker")


def _group(*members: tuple[str, str]) -> GroupInfo:
    return GroupInfo("app", "Stable" if members else "Empty", "consumer", "range",
                     tuple(Member(f"m{i}", cid, host, None) for i, (cid, host) in enumerate(members)))


def _recorded(**states: str) -> dict[str, Any]:
    status = pause.record({}, [API, WORKER], {API: 3, WORKER: 0}, "app", NOW, 1).status
    status["pausedWorkloads"] = [{**p, "state": states.get(p["name"], p["state"])} for p in status["pausedWorkloads"]]
    return status


def test_the_replicas_are_recorded_before_anything_is_scaled() -> None:
    outcome = pause.record({"phase": "AwaitingApproval"}, [API, WORKER], {API: 3, WORKER: 0}, "app", NOW, 2)
    assert outcome.status["pausedWorkloads"] == [
        {"kind": "Deployment", "name": "api", "replicas": 3, "state": "Recorded"},
        {"kind": "StatefulSet", "name": "worker", "replicas": 0, "state": "Recorded"}]
    assert (outcome.status["phase"], outcome.status["pauseStartTime"]) == ("Pending", NOW)
    assert [e.reason for e in outcome.events] == ["WorkloadsPaused"]
    after = pause.scaled_down(outcome.status).status
    assert [p["state"] for p in after["pausedWorkloads"]] == ["ScaledDown", "ScaledDown"]
    assert pause.scaled_down({**outcome.status, **after}).status == {}  # once


@pytest.mark.parametrize(("state", "current", "expected"), [
    ("ScaledDown", 0, (3, "Restored")),  # as the operator left it: back to its record
    ("ScaledDown", 3, (None, "Restored")),  # back already (an earlier attempt, before its status write)
    ("Recorded", 3, (None, "Restored")),  # never scaled (stopped between the record and the scale)
    ("ScaledDown", 5, (None, "LeftAsFound")),  # someone scaled it meanwhile: theirs
    ("ScaledDown", 1, (None, "LeftAsFound")),
    ("ScaledDown", None, (None, "Gone")),
])
def test_a_scale_back_never_fights_a_person(state: str, current: int | None, expected: tuple[int | None, str]) -> None:
    entry = pause.Paused("Deployment", "api", 3, state)
    replicas, after = pause.restore_action(entry, current)
    assert (replicas, after.state) == expected
    assert not after.pending


def test_restored_says_what_was_done_once() -> None:
    status = _recorded(api="ScaledDown", worker="ScaledDown")
    entries = [pause.Paused("Deployment", "api", 3, "Restored"), pause.Paused("StatefulSet", "worker", 0, "LeftAsFound",
                                                                            "found at 2 replicas")]
    outcome = pause.restored(status, entries)
    assert [(e.type, e.reason) for e in outcome.events] == [("Normal", "WorkloadsRestored"),
                                                           ("Warning", "WorkloadLeftAsFound")]
    assert pause.restored({**status, **outcome.status}, entries).events == ()  # no repeat


def test_the_deadline_counts_from_the_record() -> None:
    status = _recorded(api="ScaledDown")
    start = pause.deadline_ms(status, 0)
    assert start is not None
    assert not pause.expired(status, 60_000, start + 59_999) and pause.expired(status, 60_000, start + 60_000)
    assert not pause.expired({}, 1, 10**15)  # nothing recorded: no deadline


def test_a_timeout_names_the_members_still_there_and_ends_failed() -> None:
    outcome = pause.timed_out(_recorded(), _group(("cron-1", "/10.0.0.7")), None, "5m", NOW, 1)
    message = outcome.status["conditions"][0]["message"]
    assert outcome.status["phase"] == "Failed" and "cron-1 at /10.0.0.7" in message and "pauseTimeout 5m" in message
    empty = pause.timed_out(_recorded(), _group(), "KafkaUnavailable: down", "5m", NOW, 1)
    assert "is Empty but the reset did not start (KafkaUnavailable: down)" in empty.status["conditions"][0]["message"]


def test_a_missing_workload_names_its_field() -> None:
    outcome = pause.missing({"phase": "AwaitingApproval"}, 1, WORKER, "team-a", NOW, 1)
    degraded = next(c for c in outcome.status["conditions"] if c["type"] == "Degraded")
    assert degraded["message"].startswith("spec.pauseWorkloads[1].name: StatefulSet worker not found in namespace team-a")
    assert "pausedWorkloads" not in outcome.status and outcome.status["phase"] == "Pending"


def test_access_denied_names_the_permission_and_the_opt_in_once() -> None:
    first = pause.access_denied({}, API, "patch", "team-a", "403 Forbidden", NOW, 1, 30)
    message = first.status["conditions"][0]["message"]
    assert "may not patch deployments/scale (apps) in namespace team-a" in message
    assert "pauseWorkloads.enabled=true" in message and "manifests/components/pause-workloads" in message
    assert len(first.events) == 1
    assert pause.access_denied(first.status, API, "patch", "team-a", "403", NOW, 1, 30).events == ()


def test_the_timer_keeps_visiting_a_final_reset_until_its_workloads_are_back() -> None:
    spec = {"approved": True}
    done = {"phase": "Succeeded", "conditions": [{"type": "Degraded", "status": "False", "reason": "AsExpected"}]}
    assert needs_work(spec, {**done, "pausedWorkloads": [{"state": "ScaledDown", "replicas": 1}]}, 1)
    assert not needs_work(spec, {**done, "pausedWorkloads": [{"state": "Restored", "replicas": 1}]}, 1)


def test_the_spec_reads_pause_workloads_and_its_timeout() -> None:
    base = {"group": "g", "allTopics": True, "target": {"latest": True}, "kafka": {"bootstrapServers": "k:9092"}}
    spec = parse_reset_spec({**base, "pauseWorkloads": [{"kind": "Deployment", "name": "api"}], "pauseTimeout": "90s"})
    assert (spec.pause_workloads, spec.pause_timeout_ms) == ((API,), 90_000)
    assert parse_reset_spec(base).pause_timeout_ms == pause.DEFAULT_TIMEOUT_MS
    with pytest.raises(SpecError, match=r"spec.pauseWorkloads\[0\].kind"):
        parse_reset_spec({**base, "pauseWorkloads": [{"kind": "DaemonSet", "name": "api"}]})
    with pytest.raises(SpecError, match="twice"):
        parse_reset_spec({**base, "pauseWorkloads": [{"kind": "Deployment", "name": "api"}] * 2})


def test_the_undo_stops_the_same_consumers() -> None:
    from kafka_offset_operator.decisions.reset_steps import undo_of

    approved = {"kafka": {"bootstrapServers": "k:9092"}, "group": "g", "target": {"latest": True},
                "pauseWorkloads": [{"kind": "Deployment", "name": "api"}], "pauseTimeout": "2m"}
    import yaml

    spec = yaml.safe_load(undo_of("ns", "r", approved, "backup-1")["manifest"])["spec"]
    assert (spec["pauseWorkloads"], spec["pauseTimeout"], spec["approved"]) == (approved["pauseWorkloads"], "2m", False)


def test_pause_timeout_bounds_a_running_reset_until_its_commit_may_have_been_sent() -> None:
    status = _recorded()
    assert pause.applies(status)  # Pending
    running = {**status, "phase": "Running", "backup": {"name": "offsetreset-x"}}
    assert pause.applies(running)  # backed up, waiting for members or Kafka: the consumers are still down
    assert not pause.applies({**running, "commitStartTime": NOW})  # may have been sent: finish first
    assert not pause.applies({**running, "phase": "Succeeded"}) and not pause.applies({"phase": "Running"})
    out = pause.timed_out(running, _group(("billing-7d9f", "/10.0.0.7")), None, "2s", NOW, 1).status
    assert (out["phase"], out["reset"]) == ("Failed", 0) and "backup" not in out  # the backup stays as it is
    message = out["conditions"][-1]["message"]
    assert "billing-7d9f" in message and "backup offsetreset-x kept, no OffsetCommit sent" in message
