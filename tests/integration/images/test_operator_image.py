"""The operator image, built here (scripts/images.sh, buildah) and run as a cluster would run it: against the
sandbox broker and the emulated API on loopback it answers /healthz and reconciles an OffsetDeletion, once
under `buildah run` and once with a read-only root file system and only /tmp writable; it runs as a numeric
non-root user and holds the product alone (no test double, demo or tests)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from image_harness import (
    Built,
    build,
    container,
    image_config,
    image_size,
    missing,
    mounted,
    read_only_root_argv,
    run,
    run_argv,
)
from kafka_clients import committed
from operator_smoke import World, operator_args, reconciles_a_deletion, smoke_world

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

TEST_DOUBLES = ("kafka_sandbox", "kafka_offset_demo", "kmock", "tests")


@pytest.fixture(scope="module")
def operator_image() -> Built:
    return build("operator")


@pytest.fixture(scope="module")
def config(operator_image: Built) -> dict[str, Any]:
    return image_config(operator_image.image)


@pytest.fixture(scope="module")
def ctr(operator_image: Built) -> Iterator[str]:
    with container(operator_image.image) as name:
        yield name


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with smoke_world(tmp_path_factory.mktemp("image")) as w:
        yield w


def test_the_image_runs_the_operator_as_a_numeric_non_root_user(config: dict[str, Any], ctr: str) -> None:
    assert config["Entrypoint"] == ["kafka-offset-operator"]
    assert config["Cmd"] == ["run", "--all-namespaces"]
    assert config["User"] == "10001:10001"  # numeric: runAsNonRoot can verify it without a passwd lookup
    assert run(ctr, ["id", "-u"]).stdout.strip() == "10001"


def test_the_image_holds_the_product_and_no_test_double(ctr: str) -> None:
    code = ("import importlib.metadata as m, importlib.util as u; "
            "print(sorted(d.metadata['Name'].lower() for d in m.distributions())); "
            f"print([n for n in {TEST_DOUBLES!r} if u.find_spec(n)])")
    out = run(ctr, ["python", "-c", code])
    assert out.returncode == 0, out.stderr
    dists, found = out.stdout.splitlines()
    assert "kafka-offset-operator" in dists
    for name in ("pyspark", "pyarrow", "pandas", "numpy"):  # the analysis runs in its own pod (issue 21)
        assert f"'{name}'" not in dists
    for name in ("kafka-sandbox", "kafka-offset-demo", "kmock", "pytest"):
        assert f"'{name}'" not in dists
    assert found == "[]"
    ours = ["kafka_sandbox", "kafka_offset_demo", "kmock", "operator_harness.py", "kafka_clients.py", "brokers.py"]
    names = [arg for name in ours for arg in ("-o", "-name", name)][1:]
    listing = run(ctr, ["sh", "-c", 'find / -xdev \\( "$@" \\) -print; ls -d /opt/kafka-offset-operator/venv/lib/*/site-packages/tests 2>/dev/null; true',
                        "sh", *names])
    assert listing.stdout == ""


def test_the_image_has_no_java_and_runs_policies_as_jobs(ctr: str, config: dict[str, Any]) -> None:
    out = run(ctr, ["sh", "-c", "command -v java || echo none"])
    assert out.stdout.strip() == "none"
    assert "KAFKA_OFFSET_OPERATOR_DEFAULT_ENGINE=Job" in config["Env"]


def test_the_image_holds_no_secret_or_machine_file(ctr: str) -> None:
    out = run(ctr, ["sh", "-c", "ls /run/secrets 2>/dev/null; ls /etc/pip.conf /etc/xdg/pip 2>/dev/null; "
                                "env | grep -i -E '^PIP_|CERT' || true"])
    assert out.stdout.strip() == ""


def test_buildah_run_serves_healthz_and_reconciles_a_deletion(world: World, ctr: str, config: dict[str, Any],
                                                               tmp_path: Path) -> None:
    os.chmod(world.kubeconfig, 0o644)
    os.chmod(world.kubeconfig.parent, 0o755)  # the image's user reads it through the bind mount
    command = run_argv(ctr, [*config["Entrypoint"], *operator_args("/config/kubeconfig")],
                       volumes=[(world.kubeconfig.parent, "/config")])
    status = reconciles_a_deletion(world, command, "by-image", tmp_path / "operator.log")
    assert status["phase"] == "Succeeded"
    assert committed(world.broker.bootstrap_servers, "by-image") == {}


def test_a_read_only_root_with_tmp_writable_is_enough(world: World, ctr: str, config: dict[str, Any],
                                                      tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "kubeconfig").write_bytes(world.kubeconfig.read_bytes())
    with mounted(ctr) as rootfs:
        command = read_only_root_argv(rootfs, config, operator_args("/tmp/kubeconfig"))
        os.environ["KOO_FILES"] = str(files)
        try:
            status = reconciles_a_deletion(world, command, "read-only", tmp_path / "operator.log")
        finally:
            del os.environ["KOO_FILES"]
    assert status["phase"] == "Succeeded"
    assert committed(world.broker.bootstrap_servers, "read-only") == {}


def test_size_and_build_time_are_reported(operator_image: Built, capsys: pytest.CaptureFixture[str]) -> None:
    size = image_size(operator_image.image)
    with capsys.disabled():
        print(f"\n{operator_image.image}: {size}, built (or reused) in {operator_image.seconds:.0f} s")
    number, unit = size.split()
    assert unit == "MB" and float(number) < 250  # docs/images.md: the operator alone (no Spark, no JVM)
