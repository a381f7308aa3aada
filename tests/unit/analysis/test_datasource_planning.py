"""The data source's planning half stays light (issue 22): Spark's planner processes import the module the
DataSource class lives in, cold, once per kind of planning call; what it imports at module level is what each
of them pays. Its schemas (DDL strings) are the reading half's Arrow schemas."""

from __future__ import annotations

import ast
from pathlib import Path

from offset_expiry import datasource, source
from offset_expiry.pipeline import ASSEMBLED_ARROW, ddl

# pyspark.sql.datasource is imported by Spark's planner modules anyway; the rest is the standard library's.
LIGHT = {"__future__", "base64", "json", "pickle", "collections.abc", "dataclasses", "typing",
         "pyspark.sql.datasource", "kafka_offsets_model.errors", "kafka_offsets_model.raw"}


def _module_level_imports(path: Path) -> set[str]:
    """Imports run when the module is imported: at its top level, outside `if TYPE_CHECKING:`."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


def test_the_planning_module_imports_nothing_heavy_at_import() -> None:
    assert _module_level_imports(Path(datasource.__file__)) <= LIGHT


def test_the_classes_spark_pickles_live_in_the_planning_module() -> None:
    """Pickled by reference: their module is what the planners import."""
    assert source.KafkaSnapshotDataSource.__module__ == "offset_expiry.datasource"
    assert source.KafkaSnapshotReader.__module__ == "offset_expiry.datasource"


def test_the_planning_schemas_are_the_reading_schemas() -> None:
    assert ddl(ASSEMBLED_ARROW) == datasource.ASSEMBLED_DDL
    assert [f.split(" ")[0] for f in datasource.RAW_DDL.split(", ")] == source.RAW_ARROW.names
