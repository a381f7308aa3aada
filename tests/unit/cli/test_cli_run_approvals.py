"""`run --user` and `--approvals-verified` (issue 18 item 5): from the flags or the environment the install
sets, and verified approvals without the operator's own user name are a one-line error (exit code 2), since
its Auto approvals must name it."""

from __future__ import annotations

import pytest

from kafka_offset_operator import cli
from kafka_offset_operator.cli import build_parser
from kafka_offset_operator.commands.run import USER_ENV, VERIFIED_ENV

OPERATOR = "system:serviceaccount:kafka-offset-operator:kafka-offset-operator"


def test_off_and_unnamed_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(USER_ENV, raising=False)
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    args = build_parser().parse_args(["run", "-A"])
    assert (args.user, args.approvals_verified) == (None, False)


def test_the_installs_environment_sets_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(USER_ENV, OPERATOR)
    monkeypatch.setenv(VERIFIED_ENV, "true")
    args = build_parser().parse_args(["run", "-A"])
    assert (args.user, args.approvals_verified) == (OPERATOR, True)
    assert build_parser().parse_args(["run", "-A", "--user", "me"]).user == "me"


def test_verified_approvals_need_the_operators_name(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(USER_ENV, raising=False)
    assert cli.main(["run", "-A", "--approvals-verified"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--approvals-verified needs the operator's user name" in err
