"""The image tests use the operator tests' harness (operator_harness.py: the emulated API and its client)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
