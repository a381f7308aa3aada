"""docs/kafka-semantics.md's table of the cited methods' bytecode per Kafka version is what the jars under test
say: tests/support/kafka_method_fingerprints.py re-run over every version's jars (one javap JVM per version)
prints the same table. A new cited method, a new version or a changed jar must change the doc with it.

It needs every version's jars, so it runs where the matrix runs (KOO_KAFKA_VERSIONS with an older version than
the newest: CI's matrix stage) and resolves the jars it lacks itself; a run of the newest version alone skips it
with one line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import kafka_method_fingerprints as fp
import pytest
import real_kafka

DOC = Path(__file__).resolve().parents[3] / "docs" / "kafka-semantics.md"
pytestmark = [pytest.mark.slow, pytest.mark.matrix]  # six javap JVMs: about 30 CPU-s

BLOCK = re.compile(r"<!-- cited-methods-bytecode:begin -->\n(.*?)<!-- cited-methods-bytecode:end -->", re.S)


def test_the_docs_table_is_the_bytecode_of_the_jars_under_test() -> None:
    if real_kafka.versions_under_test() == [real_kafka.NEWEST]:
        pytest.skip("the cited methods' bytecode table is checked with the version matrix "
                    "(KOO_KAFKA_VERSIONS=all; CI's matrix stage)")
    if shutil.which("javap") is None:
        pytest.skip("the cited methods' bytecode table needs javap (a JDK)")
    try:
        for version in fp.VERSIONS:
            real_kafka.resolve(version)
    except real_kafka.Unavailable as exc:
        pytest.skip(f"the cited methods' bytecode table needs every version's jars: {exc}")
    assert fp.jars_present() is None, fp.jars_present()
    found = BLOCK.search(DOC.read_text())
    assert found is not None, "docs/kafka-semantics.md lost its cited-methods-bytecode block"
    table = fp.markdown(fp.fingerprints(), fp.VERSIONS)
    assert found.group(1) == table, (
        "the jars' bytecode no longer matches docs/kafka-semantics.md: re-run "
        "`python tests/support/kafka_method_fingerprints.py`, explain each new change of letter, and paste the table")
