"""`run --scan-share-window` and `--kafka-concurrency` (issue 12): parsed, bounded, and a bad value is a
one-line usage error (exit code 2)."""

from __future__ import annotations

import pytest

from kafka_offset_operator.cli import build_parser
from kafka_offset_operator.context import OperatorContext, OperatorOptions


def parse(*argv: str) -> object:
    return build_parser().parse_args(["run", "-A", *argv])


def test_defaults() -> None:
    args = parse()
    assert args.scan_share_window == 5.0 == OperatorOptions().scan_share_window_s  # type: ignore[attr-defined]
    assert args.kafka_concurrency == 8 == OperatorOptions().kafka_concurrency  # type: ignore[attr-defined]


def test_values() -> None:
    args = parse("--scan-share-window", "off", "--kafka-concurrency", "2")
    assert args.scan_share_window is None and args.kafka_concurrency == 2  # type: ignore[attr-defined]
    assert parse("--scan-share-window", "0").scan_share_window == 0.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("argv", [("--scan-share-window", "-1"), ("--scan-share-window", "soon"),
                                  ("--kafka-concurrency", "0"), ("--kafka-concurrency", "many")])
def test_bad_values_are_usage_errors(argv: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(*argv)
    assert exit_.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_the_gate_has_the_configured_width() -> None:
    ctx = OperatorContext(OperatorOptions(kafka_concurrency=2), kube=None)  # type: ignore[arg-type]
    assert ctx.kafka_gate.acquire(blocking=False) and ctx.kafka_gate.acquire(blocking=False)
    assert not ctx.kafka_gate.acquire(blocking=False)
