"""docs/kafka-semantics.md's table of the cited methods' bytecode per Kafka version is what the jars under test
say: tests/support/kafka_method_fingerprints.py re-run over the cached jars (one javap JVM per version) prints
the same table. A new cited method, a new version or a changed jar must change the doc with it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import kafka_method_fingerprints as fp
import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "kafka-semantics.md"
pytestmark = pytest.mark.slow  # six javap JVMs: about 30 CPU-s

BLOCK = re.compile(r"<!-- cited-methods-bytecode:begin -->\n(.*?)<!-- cited-methods-bytecode:end -->", re.S)


def test_the_docs_table_is_the_bytecode_of_the_jars_under_test() -> None:
    missing = fp.jars_present() if shutil.which("javap") else "javap (a JDK) is not installed"
    if missing is not None:
        pytest.skip(f"the cited methods' bytecode table needs Kafka's cached jars: {missing}")
    found = BLOCK.search(DOC.read_text())
    assert found is not None, "docs/kafka-semantics.md lost its cited-methods-bytecode block"
    table = fp.markdown(fp.fingerprints(), fp.VERSIONS)
    assert found.group(1) == table, (
        "the jars' bytecode no longer matches docs/kafka-semantics.md: re-run "
        "`python tests/support/kafka_method_fingerprints.py`, explain each new change of letter, and paste the table")
