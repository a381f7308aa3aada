"""Condition and Event reasons are one enum, and the docs list exactly its members."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_offset_operator.model.reasons import Reason
from kafka_offsets_model.errors import SpecError

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "docs" / "operator.md", ROOT / "docs" / "offset-deletion.md", ROOT / "docs" / "offset-reset.md"]


def documented_in_tables() -> set[str]:
    """The words of every `reason` column in the docs' condition tables."""
    out: set[str] = set()
    for doc in DOCS:
        column = None
        for line in doc.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
            if not cells:
                column = None
            elif "reason" in cells and "condition" in cells:
                column = cells.index("reason")
            elif column is not None and not set(cells[column]) <= set("-"):
                out |= set(re.findall(r"[A-Z][A-Za-z]+", cells[column]))
    return out


def test_every_reason_in_the_condition_tables_is_a_member() -> None:
    tables = documented_in_tables()
    assert tables and tables <= {r.value for r in Reason}


def test_every_member_is_documented() -> None:
    text = "".join(doc.read_text() for doc in DOCS)
    assert [r.value for r in Reason if not re.search(rf"\b{r.value}\b", text)] == []


def test_a_spec_error_defaults_to_invalid_spec() -> None:
    assert SpecError("spec.mode", "bad").reason == Reason.INVALID_SPEC
