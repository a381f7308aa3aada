"""The product is only the product: its wheel holds no test double or demo, and what production imports
(the CLI, the operator's runtime) loads no sandbox broker, kmock, demo or Spark module."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TEST_DOUBLES = ("kafka_sandbox", "kafka_offset_demo", "kmock")
SPARK = ("pyspark", "py4j")  # loaded by an analysis only, in its own worker process


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, zipfile.ZipFile]:
    """The product's two wheels, Kafka's offsets model (offsets_model/) and the operator with the Spark job,
    built from a copy of their sources: setuptools writes build/ into the tree it builds."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("offsets_model", "operator", "spark"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for project in (src / "offsets_model", src):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
                        str(project)], check=True, capture_output=True, timeout=600)
    [product] = out.glob("kafka_offset_operator-*.whl")
    [core] = out.glob("kafka_offsets_model-*.whl")
    return {"product": zipfile.ZipFile(product), "core": zipfile.ZipFile(core)}


def _tops(wheel: zipfile.ZipFile) -> set[str]:
    return {name.split("/", 1)[0] for name in wheel.namelist() if not name.split("/", 1)[0].endswith(".dist-info")}


@pytest.mark.slow  # builds the wheels
def test_the_wheel_holds_the_two_product_packages_and_nothing_else(wheels: dict[str, zipfile.ZipFile]) -> None:
    wheel = wheels["product"]
    assert _tops(wheel) == {"kafka_offset_operator", "offset_expiry"}
    names = wheel.namelist()
    assert "kafka_offset_operator/engines/local_worker.py" in names
    assert "offset_expiry/job.py" in names
    for test_only in ("sandbox", "synthetic", "emulated_cluster", "demo", "story", "reference"):
        assert not [n for n in names if test_only in n], test_only


@pytest.mark.slow  # builds the wheels
def test_the_shared_core_is_a_wheel_of_its_own_without_spark_kopf_or_kubernetes(
    wheels: dict[str, zipfile.ZipFile],
) -> None:
    core = wheels["core"]
    assert _tops(core) == {"kafka_offsets_model"}
    names = core.namelist()
    assert "kafka_offsets_model/codec/records.py" in names
    assert "kafka_offsets_model/kafka_messages/ConsumerGroupDescribeResponse.json" in names
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    requires = [line.split(":", 1)[1].strip().lower() for line in core.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")]
    assert not [r for r in requires if r.startswith(("pyspark", "kopf", "kubernetes", "kafka-offset-operator"))]


@pytest.mark.slow  # builds the wheels
def test_no_module_of_the_wheel_imports_a_test_double(wheels: dict[str, zipfile.ZipFile]) -> None:
    for wheel in wheels.values():
        for name in wheel.namelist():
            if name.endswith(".py"):
                text = wheel.read(name).decode()
                for module in TEST_DOUBLES:
                    assert f"import {module}" not in text and f"from {module}" not in text, (name, module)


@pytest.mark.parametrize("module", ["kafka_offset_operator.cli", "kafka_offset_operator.runtime"])
def test_what_production_imports_loads_no_test_double_and_no_spark(module: str) -> None:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                            timeout=120).stdout.split()
    assert module in loaded
    assert [m for m in loaded if m.split(".")[0] in TEST_DOUBLES + SPARK] == []


# Issue 21: the operator image has no Spark. A meta-path finder refuses the `spark` extra's packages, as an
# install without them would (ModuleNotFoundError); the operator must import and start without them.
BLOCK_SPARK = """
import importlib.abc, sys
class NoSpark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('pyspark', 'py4j', 'pyarrow', 'pandas', 'numpy'):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: the operator image has no Spark)", name=name)
        return None
sys.meta_path.insert(0, NoSpark())
"""


def without_spark(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_SPARK + code, *args], capture_output=True, text=True, timeout=120)


def test_the_operator_imports_and_starts_without_spark(tmp_path: Path) -> None:
    """The entry point, the runtime, every handler and the Job and SparkApplication engines import with the
    spark extra missing; `run` gets as far as its kubeconfig (a missing file: its one-line error)."""
    modules = ["kafka_offset_operator.cli", "kafka_offset_operator.runtime", "kafka_offset_operator.handlers.backups",
               "kafka_offset_operator.handlers.consumer_group_offset_policy", "kafka_offset_operator.handlers.offset_deletion",
               "kafka_offset_operator.handlers.offset_reset", "kafka_offset_operator.engines.dispatch",
               "kafka_offset_operator.engines.kube_job", "kafka_offset_operator.engines.spark_application"]
    out = without_spark(f"import importlib\nfor m in {modules!r}: importlib.import_module(m)\nprint('imported')")
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr
    start = "from kafka_offset_operator.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    out = without_spark(start, "run", "--default-engine", "Job", "-n", "team-a", "--kubeconfig", str(tmp_path / "none"))
    assert out.returncode == 2 and "--kubeconfig" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_without_spark_the_local_engine_is_refused_with_a_clear_answer() -> None:
    start = "from kafka_offset_operator.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    out = without_spark(start, "run", "--default-engine", "Local", "-n", "team-a")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--default-engine Local" in out.stderr and "kafka-offset-operator[spark]" in out.stderr
    out = without_spark(start, "analyze", "--bootstrap-server", "127.0.0.1:1", "--policy", "none.yaml")
    assert out.returncode == 2 and "kafka-offset-operator[spark]" in out.stderr and "Traceback" not in out.stderr, out.stderr
    # A policy naming Local gets a condition naming the field (engines/dispatch.py), not a crash.
    code = """
from kafka_offset_operator.decisions.policy_spec import parse_policy_spec
from kafka_offset_operator.engines import dispatch
from kafka_offset_operator.engines.job import AnalysisFailed, Job
from kafka_offset_operator.model.connection import ConnectionSettings
spec = parse_policy_spec({"kafka": {"bootstrapServers": "k:9092"}, "analysis": {"engine": "Local"}})
try:
    dispatch.run(Job({"metadata": {"name": "p", "namespace": "n"}}, spec, ConnectionSettings("k:9092"), 1), None, None, None)
except AnalysisFailed as exc:
    print(exc.reason, exc.message.split(":")[0])
"""
    out = without_spark(code)
    assert out.stdout.strip() == "InvalidSpec spec.analysis.engine", out.stderr
