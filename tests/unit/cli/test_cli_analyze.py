"""`kafka-offset-operator analyze` at its edges, without Spark: arguments checked before anything starts,
the policy file's shapes, glob warnings, the table's KIND column and summary, and the progress display
(issue 11, "the analyze CLI, tried as a new user would"). What a user sees of a real run is in
tests/integration/cli/test_cli_analyze_process.py."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace
from typing import Any

import pytest
from waiting import wait_until

from kafka_offset_operator import cli
from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy import (
    Policy,
    glob_for,
    looks_like_regex,
    policy_from_yaml,
    regex_pattern_warnings,
    unmatched_pattern_warnings,
)
from offset_expiry import job
from offset_expiry.progress import Progress, bar
from offset_expiry.table import kind, render, summary_lines

PROG = "kafka-offset-operator"
UNREACHABLE = "127.0.0.1:1"  # nothing listens: any test that got as far as Kafka would say so


def analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["analyze", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--output", "/nonexistent-dir/report.json"], "--output: directory /nonexistent-dir does not exist"),
        (["--output", "/"], "--output: / is a directory; give the path of a file to write"),
        (["--broker-retention", "0d"], "--broker-retention: must be longer than 0"),
        (["--broker-retention", "7 days"], "--broker-retention: '7 days' is not a duration"),
        (["--now", "tomorrow"], "--now: 'tomorrow' is not an ISO-8601 time"),
        (["--policy", "/nonexistent-dir/policy.yaml"], "--policy: cannot read /nonexistent-dir/policy.yaml"),
    ],
)
def test_every_argument_is_checked_before_kafka_or_spark(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    started = time.monotonic()
    code, out, err = analyze(capsys, "--bootstrap-server", UNREACHABLE, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"{PROG}: error: {message}") and err.count("\n") == 1, err
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("text", "message"), [
    ("mode: Sometimes\n", "spec.mode: "),
    ("spec:\n  kafka: {bootstrapServers: nope}\n", "spec.kafka.bootstrapServers: "),
    ("kind: ConsumerGroupOffsetPolicy\napiVersion: kafkaoffsets.dev/v1alpha1\nspec: {analysis: {engine: Cloud}}\n",
     "spec.analysis.engine: "),
    ("schedule: {interval: soon}\n", "spec.schedule.interval: "),
])
def test_a_policy_file_is_refused_as_the_crd_would_refuse_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Any, text: str, message: str) -> None:
    """The operator's sections too (mode, kafka, schedule, analysis), not only groups/rules/protect: one line,
    exit 2, before Kafka or Spark."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    code, out, err = analyze(capsys, "--bootstrap-server", UNREACHABLE, "--policy", str(policy))
    assert (code, out) == (2, "")
    assert err.startswith(f"{PROG}: error: --policy {policy}: {message}") and err.count("\n") == 1, err


def test_a_policy_file_without_kafka_is_fine_for_analyze(tmp_path: Any) -> None:
    from kafka_offset_operator.commands.analyze import _policy_file_schema

    policy = policy_from_yaml("mode: Approve\nprotect: {groups: [billing-*]}\n", "p", _policy_file_schema())
    assert policy.protect.groups == ("billing-*",)


@pytest.mark.parametrize("server", ["kafka", "kafka:", "kafka:port", ":9092", "kafka:9092,broker"])
def test_bootstrap_server_must_be_host_port(capsys: pytest.CaptureFixture[str], server: str) -> None:
    code, _, err = analyze(capsys, "--bootstrap-server", server)
    assert code == 2 and err.startswith(f"{PROG}: error: --bootstrap-server: ") and "is not HOST:PORT" in err


def test_format_is_checked_by_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["analyze", "--bootstrap-server", UNREACHABLE, "--format", "xml"])
    assert exited.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_the_spark_job_checks_results_path_too(capsys: pytest.CaptureFixture[str]) -> None:
    code = job.main(["--bootstrap-server", UNREACHABLE, "--results", "/nonexistent-dir/results.json"])
    assert code == 2
    assert capsys.readouterr().err == (
        "offset_expiry.job: error: --results: directory /nonexistent-dir does not exist\n"
    )


SPEC = "groups: {include: ['live-*']}\nrules: {emptyGroupRetention: 2d}\n"


@pytest.mark.parametrize(
    "text",
    [
        SPEC,
        "spec:\n" + "".join(f"  {line}\n" for line in SPEC.splitlines()),
        "metadata: {name: p}\nspec:\n" + "".join(f"  {line}\n" for line in SPEC.splitlines()),
        "apiVersion: kafkaoffsets.dev/v1alpha1\nkind: ConsumerGroupOffsetPolicy\nmetadata: {name: p}\nspec:\n"
        + "".join(f"  {line}\n" for line in SPEC.splitlines()),
    ],
    ids=["bare spec", "spec: wrapped", "manifest without header", "whole manifest"],
)
def test_policy_file_shapes(text: str) -> None:
    policy = policy_from_yaml(text)
    assert policy.groups.include == ("live-*",)
    assert policy.rules.empty_group_retention_ms == 2 * 86_400_000


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("- groups\n", "p.yaml", "got a list; a policy file holds"),
        ("spec: {}\nrules: {}\n", "p.yaml", "top-level spec: next to rules; a policy file holds"),
        ("specs: {}\n", "spec.specs", "unknown field"),
        ("kind: ConfigMap\n", "kind", "expected ConsumerGroupOffsetPolicy, got 'ConfigMap'"),
    ],
)
def test_other_shapes_say_which_are_expected(text: str, field: str, problem: str) -> None:
    with pytest.raises(SpecError) as raised:
        policy_from_yaml(text, "p.yaml")
    assert raised.value.field == field and raised.value.problem.startswith(problem)
    if field != "kind":
        assert "a whole ConsumerGroupOffsetPolicy manifest" in raised.value.problem


@pytest.mark.parametrize(
    ("pattern", "meant"),
    [("^live-.*$", "live-*"), ("team-a.*", "team-a*"), ("orders-.+", "orders-?*"), ("(a|b)-x", None)],
)
def test_regex_looking_patterns(pattern: str, meant: str | None) -> None:
    assert looks_like_regex(pattern) and glob_for(pattern) == meant


@pytest.mark.parametrize("pattern", ["*", "live-*", "team-a-?", "billing-[0-9]*", "a.b"])
def test_globs_are_not_regex_looking(pattern: str) -> None:
    assert not looks_like_regex(pattern)


def test_pattern_warnings_name_the_field() -> None:
    policy = policy_from_yaml("groups: {include: ['^live-.*$', 'team-*'], exclude: ['x-*']}\n")
    assert regex_pattern_warnings(policy) == [
        "spec.groups.include: '^live-.*$' looks like a regular expression, but group patterns are globs "
        "(*, ?, [abc]) matched against the whole group id; did you mean 'live-*'?"
    ]
    assert unmatched_pattern_warnings(policy, {"team-a"}) == [
        "spec.groups.include: '^live-.*$' matches none of the 1 group with committed offsets",
        "spec.groups.exclude: 'x-*' matches none of the 1 group with committed offsets",
    ]
    assert unmatched_pattern_warnings(Policy(), set()) == []  # the default '*' says nothing


def offset(group: str, group_type: str, protocol: str, state: str = "Empty") -> dict[str, Any]:
    return {
        "group": group, "groupType": group_type, "protocolType": protocol, "groupState": state, "topic": "t",
        "partition": 0, "offset": 1, "commitTimestamp": 0, "brokerExpiresAt": None, "candidate": False,
        "reason": "WithinRetention",
    }  # fmt: skip


def summary(**counts: int) -> dict[str, Any]:
    base = {"recordsScanned": 1, "groups": 1, "offsets": 1, "candidates": 0, "skippedRecords": 0}
    return {**base, **counts, "byReason": {}, "snapshot": {"0": 1}, "now": 0, "brokerRetentionMs": 604_800_000}


def test_table_has_a_kind_column() -> None:
    assert [kind(*k) for k in [("classic", ""), ("classic", "consumer"), ("classic", "connect")]] == [
        "simple", "classic", "classic/connect",
    ]  # fmt: skip
    assert [kind(k, k) for k in ("consumer", "streams", "share")] == ["consumer", "streams", "share"]
    text = render(summary(), [offset("standalone", "classic", ""), offset("app", "streams", "streams")], 0)
    rows = [line.split() for line in text.splitlines()[:3]]
    assert rows[0][:3] == ["GROUP", "KIND", "TOPIC"]
    assert sorted((r[0], r[1], r[4]) for r in rows[1:]) == [("app", "streams", "Empty"), ("standalone", "simple", "Empty")]


def test_summary_counts_agree_in_number_and_say_now_and_retention() -> None:
    assert summary_lines(summary()) == [
        "0 deletion candidates among 1 committed offset of 1 group",
        "scanned 1 record in 1 partition of __consumer_offsets; 0 undecodable records skipped",
        "as of 1970-01-01T00:00:00Z, with a broker offset retention of 7d",
    ]
    lines = summary_lines(summary(candidates=1, offsets=2, groups=3, recordsScanned=4, skippedRecords=1))
    assert lines[0] == "1 deletion candidate among 2 committed offsets of 3 groups"
    assert lines[1].endswith("; 1 undecodable record skipped")


class FakeTracker:
    """pyspark's StatusTracker as Progress reads it: jobs with stage ids, stages with task counts."""

    def __init__(self) -> None:
        self.stages: dict[int, SimpleNamespace] = {}

    def getJobIdsForGroup(self, group: str | None) -> list[int]:
        return [0] if self.stages else []

    def getJobInfo(self, job_id: int) -> SimpleNamespace:
        return SimpleNamespace(stageIds=list(self.stages))

    def getStageInfo(self, stage_id: int) -> SimpleNamespace | None:
        return self.stages.get(stage_id)


def stage(done: int, tasks: int) -> SimpleNamespace:
    return SimpleNamespace(numCompletedTasks=done, numTasks=tasks)


def test_progress_counts_records_read_as_the_reading_stage_advances() -> None:
    tracker = FakeTracker()
    tracker.stages[0] = stage(1, 1)  # an earlier job of the session
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    progress = Progress(io.StringIO(), enabled=False, terminal=False)
    progress.phase("analysing")
    progress.watch(spark, records=1000)
    assert progress.line() == "analysing: 0/1000 records read"  # not submitted yet
    tracker.stages[1] = stage(0, 4)
    assert progress.line() == "analysing: 0/1000 records read"
    tracker.stages[1] = stage(3, 4)
    assert progress.line() == "analysing: 750/1000 records read"
    tracker.stages[1] = stage(4, 4)
    tracker.stages[2] = stage(1, 2)
    assert progress.line() == "analysing: all 1000 records read; decoding and deciding, 1 Spark stages done"
    progress.terminal = True
    tracker.stages[1] = stage(1, 4)
    assert progress.line() == f"analysing: {bar(250, 1000)} 250/1000 records read"


def test_progress_draws_one_status_line_on_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet_for_s=0, terminal=True)
    progress.phase("reading")
    with progress:
        wait_until(lambda: "reading" in out.getvalue(), 5, "the status line")
    text = out.getvalue()
    assert text.startswith("\r\x1b[K[analyze ") and "\n" not in text.rpartition("\r\x1b[K")[0]
    assert text.endswith("s\n") and "done in" in text


def test_progress_writes_plain_lines_elsewhere() -> None:
    out = io.StringIO()
    progress = Progress(out, quiet_for_s=0, terminal=False)
    progress.phase("reading")
    with progress:
        wait_until(lambda: "reading" in out.getvalue(), 5, "a progress line")
    assert "\r" not in out.getvalue() and "] reading\n" in out.getvalue()
