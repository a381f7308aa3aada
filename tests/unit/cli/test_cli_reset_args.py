"""`kafka-offset-operator reset`'s arguments through cli.main: every bad one is one line naming the flag,
exit 2, before any call (the bootstrap address is a closed port: reaching it would say so instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_offset_operator import cli

BASE = ["reset", "--bootstrap-server", "127.0.0.1:1", "--group", "billing"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main([*BASE, *argv])
    except SystemExit as exc:  # argparse's own refusals (_OperatorParser.error)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--all-topics"], "one of the arguments --to-earliest --to-latest"),
        (["--to-earliest"], "one of the arguments --all-topics --topic is required"),
        (["--all-topics", "--to-earliest", "--to-latest"], "not allowed with argument --to-earliest"),
        (["--all-topics", "--shift-by", "x"], "argument --shift-by: invalid int value: 'x'"),
        (["--all-topics", "--to-datetime", "2026-01-31"], "--to-datetime: '2026-01-31' needs a date, a time and an offset"),
        (["--all-topics", "--to-datetime", "soon"], "--to-datetime: 'soon' is not an RFC 3339 time"),
        (["--all-topics", "--by-duration", "PT1H"], "--by-duration: 'PT1H' is not a duration like 7d"),
        (["--all-topics", "--to-offset", "1.5"], "argument --to-offset: invalid int value: '1.5'"),
        (["--all-topics", "--to-latest", "--dry-run", "--execute"], "argument --execute: not allowed with argument --dry-run"),
        (["--all-topics", "--to-datetime", "2026-01-31T12:00:00+25:00"], "--to-datetime: '2026-01-31T12:00:00+25:00' is not an RFC 3339 time"),
        (["--all-topics", "--from-backup", "Bad Name"], "--from-backup: 'Bad Name' is not a ConfigMap name"),
        (["--all-topics", "--from-group", " x"], "--from-group: must not have leading/trailing spaces"),
        (["--topic", "orders:0,x", "--to-latest"], "--topic: 'x' in 'orders:0,x' is not a partition number"),
        (["--topic", "or ders", "--to-latest"], "--topic: 'or ders' is not a Kafka topic name"),
        (["--topic", "a", "--topic", "a:1", "--to-latest"], "--topic: topic a is listed twice"),
        (["--all-topics", "--to-latest", "--backup-retention", "10s"], "--backup-retention: '10s' is shorter than a minute"),
        (["--all-topics", "--to-latest", "--backup-retention", "a week"], "--backup-retention: 'a week' is not a duration"),
        (["--all-topics", "--to-latest", "--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig: /nonexistent/kubeconfig is not a file"),
        (["--all-topics", "--to-latest", "--export", "/nonexistent/dir/plan.csv"], "--export: the directory /nonexistent/dir does not exist"),
        (["--all-topics", "--to-latest", "--export", "/"], "--export: / is a directory"),
        (["--to-current", "--from-file", "plan.csv"], "argument --from-file: not allowed with argument --to-current"),
        (["--to-current"], "one of the arguments --all-topics --topic is required (with --from-file, leave both out"),
        (["--from-file", "/nonexistent/plan.csv"], "--from-file: cannot read /nonexistent/plan.csv: No such file"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert message in err and err.startswith("kafka-offset-operator"), err


def test_a_bad_group_and_a_bad_address(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = cli.main(["reset", "--bootstrap-server", "127.0.0.1:1", "--group", " g", "--all-topics", "--to-latest"])
    assert code == 2 and "--group: must not have leading/trailing spaces" in capsys.readouterr().err
    code = cli.main(["reset", "--bootstrap-server", "kafka", "--group", "g", "--all-topics", "--to-latest"])
    assert code == 2 and "--bootstrap-server: 'kafka' is not HOST:PORT" in capsys.readouterr().err


def test_a_kubeconfig_that_does_not_work_is_found_before_kafka(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--execute and --from-backup need the backup store: its configuration is loaded before any Kafka call
    (the address is a closed port, which would say CONNECTION_FAILED)."""
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    for extra in (["--to-latest", "--execute"], ["--from-backup", "ns/b"]):
        code, out, err = run(capsys, "--all-topics", *extra, "--kubeconfig", str(broken))
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "--kubeconfig: no Kubernetes configuration for the backup store" in err
