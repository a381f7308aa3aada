"""The README's figures for the demo and the tests hold the recorded measurements (docs/measured.toml): a
new measurement that leaves a range must change the README with it, so what a new user reads stays true."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()
MEASURED = tomllib.loads((ROOT / "docs" / "measured.toml").read_text())


def stated(pattern: str) -> tuple[int, int]:
    """The range the README states where `pattern` (one "(\\d+)-(\\d+)" group pair) matches, whitespace-tolerant."""
    found = re.search(pattern.replace(" ", r"\s+"), README)
    assert found is not None, f"README.md no longer says {pattern!r}: keep a range there, checked here"
    low, high = int(found.group(1)), int(found.group(2))
    assert low < high
    return low, high


@pytest.mark.parametrize(("pattern", "seconds", "unit"), [
    (r"on a fresh clone takes about \d+ minutes on 2 cores \((\d+)-(\d+) min\)", MEASURED["demo"]["fresh_clone_s"], 60),
    (r"then the demo itself, about \d+ s \((\d+)-(\d+) s", MEASURED["demo"]["story_s"], 1),
    (r"idle 2-core machine \((\d+)-(\d+) s\)", MEASURED["unit_tier"]["wall_s"], 1),
    (r"-n 2 tests/unit`, (\d+)-(\d+) CPU-seconds", MEASURED["unit_tier"]["warm_cpu_s"], 1),
    (r"-n 2 tests/unit`, (\d+)-(\d+) CPU-seconds", MEASURED["unit_tier"]["cold_cpu_s"], 1),
    (r"`scripts/dev.sh test` takes about \d+ minutes on 2 cores \((\d+)-(\d+) min\)", MEASURED["test"]["wall_s"], 60),
    (r"about \d+ minutes warm on an idle 2-core machine \((\d+)-(\d+) min", MEASURED["ci"]["warm_s"], 60),
    (r"about\s+\d+ minutes on a new machine with every cache empty \((\d+)-(\d+) min\)", MEASURED["ci"]["cold_s"], 60),
])
def test_the_readme_states_a_range_holding_the_measurement(pattern: str, seconds: int, unit: int) -> None:
    low, high = stated(pattern)
    assert low * unit <= seconds <= high * unit, f"measured {seconds} s, README says {low}-{high} x {unit} s"


def test_the_demo_in_ci_stays_within_the_readme_range() -> None:
    low, high = stated(r"then the demo itself, about \d+ s \((\d+)-(\d+) s")
    assert all(low <= s <= high for s in MEASURED["demo"]["ci_story_s"])


def test_the_fresh_clone_figure_is_the_install_plus_the_demo() -> None:
    demo = MEASURED["demo"]
    assert demo["fresh_clone_s"] == pytest.approx(demo["install_s"] + demo["story_s"], abs=30)
