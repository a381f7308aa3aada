"""Peering (one actor at a time, docs/operator.md): the default priority, the `run` options and the Kopf
settings they become. The processes themselves are in tests/integration/operator/test_peering.py."""

from __future__ import annotations

from typing import cast

import pytest

from kafka_offset_operator.adapters.kube import Kube, NotFound
from kafka_offset_operator.cli import build_parser
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.decisions.peering import priority_for_start
from kafka_offset_operator.errors import UserError
from kafka_offset_operator.runtime import build_settings, ensure_peering


def test_an_older_process_gets_the_higher_priority_above_kopfs_default() -> None:
    older, newer = priority_for_start(1_700_000_000_000), priority_for_start(1_700_000_000_001)
    assert older > newer > 0


def test_an_implausible_start_time_is_refused() -> None:
    with pytest.raises(ValueError, match="start time"):
        priority_for_start(-1)


def test_run_peers_by_default() -> None:
    args = build_parser().parse_args(["run", "-A"])
    assert (args.peering, args.standalone, args.peering_priority, args.peering_lifetime) == (
        "kafka-offset-operator", False, None, 60)


@pytest.mark.parametrize("argv", [["--standalone", "--peering", "x"], ["--peering-lifetime", "0"],
                                  ["--peering-lifetime", "1.5"], ["--peering-priority", "high"]])
def test_bad_peering_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["run", "-A", *argv])
    assert exc.value.code == 2
    assert "--peering" in capsys.readouterr().err


def test_peering_becomes_mandatory_cluster_wide_kopf_peering() -> None:
    options = OperatorOptions(namespaces=("a",), peering="team-a", peering_lifetime_s=20)
    peering = build_settings(options, started_ms=1_700_000_000_000).peering
    assert (peering.standalone, peering.mandatory, peering.clusterwide, peering.name, peering.lifetime) == (
        False, True, True, "team-a", 20)
    assert peering.priority == priority_for_start(1_700_000_000_000)
    assert build_settings(OperatorOptions(namespaces=("a",), peering="p", peering_priority=7)).peering.priority == 7


def test_no_peering_is_kopfs_standalone_mode() -> None:
    assert build_settings(OperatorOptions(namespaces=("a",))).peering.standalone


class _NoPeeringCrd:
    """A Kube whose API does not serve ClusterKopfPeering (its CRD not installed)."""

    def create_cluster_object(self, *_: object) -> bool:
        raise NotFound("404")


def test_a_missing_peering_crd_is_one_line_naming_the_fix() -> None:
    with pytest.raises(UserError, match=r"clusterkopfpeerings\.kopf\.dev.*crds/clusterkopfpeerings\.kopf\.dev\.yaml.*--standalone"):
        ensure_peering(cast(Kube, _NoPeeringCrd()), "kafka-offset-operator")
