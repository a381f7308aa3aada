"""go_build.build_once, the one Go-build path of the real control plane (kube_build.py) and the image tests'
registry (registry_build.py), on a module of its own with no dependencies (seconds: nothing is downloaded):
static binaries with our names, a stamp naming the pins, a rebuild only when the pins change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import go_build
import kube_build
import pytest
import registry_build

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")

MAIN = 'package main\n\nimport "fmt"\n\nvar greeting = "unset"\n\nfunc main() { fmt.Println(greeting) }\n'


def module(root: Path, name: str) -> Path:
    folder = root / name
    (folder / "cmd" / name).mkdir(parents=True)
    (folder / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.22\n")
    (folder / "cmd" / name / "main.go").write_text(MAIN)
    return folder


def test_binaries_are_built_stamped_renamed_and_rebuilt_only_for_new_pins(tmp_path: Path) -> None:
    mod = module(tmp_path, "hello")
    target = tmp_path / "cache" / "v1"
    digest = go_build.pins_digest([mod / "go.mod"])
    step = go_build.Step(mod, ("example.com/hello/cmd/hello",), "-s -w -X main.greeting=pinned")
    assert not go_build.built(target, digest, ["hi"])

    assert go_build.build_once(target, digest, [step], renames={"hello": "hi"}, label="test") == target
    assert go_build.built(target, digest, ["hi"])
    assert subprocess.run([target / "hi"], capture_output=True, text=True, check=True).stdout == "pinned\n"
    assert not list(target.parent.glob(".building-*"))  # the temporary folder went into place, nothing left
    if shutil.which("file"):
        assert "statically linked" in subprocess.run(["file", target / "hi"], capture_output=True, text=True).stdout

    (mod / "go.mod").write_text((mod / "go.mod").read_text() + "\n// another pin\n")
    assert not go_build.built(target, go_build.pins_digest([mod / "go.mod"]), ["hi"])  # other pins: rebuild


def test_a_failed_build_leaves_nothing_that_looks_built(tmp_path: Path) -> None:
    mod = module(tmp_path, "broken")
    (mod / "cmd" / "broken" / "main.go").write_text("package main\n\nfunc main() { undefined() }\n")
    target = tmp_path / "cache" / "v1"
    with pytest.raises(subprocess.CalledProcessError):
        go_build.build_once(target, "d", [go_build.Step(mod, ("example.com/broken/cmd/broken",), "")])
    assert not target.exists() and not list(target.parent.glob(".building-*"))


def test_the_cache_keys_are_those_of_the_pins_alone() -> None:
    """A warm cache is found, not rebuilt: the stamp is the digest of the committed go.mod/go.sum files."""
    assert kube_build.stamp() == go_build.pins_digest(
        [kube_build.MODULE / "go.mod", kube_build.MODULE / "go.sum",
         kube_build.HELM_MODULE / "go.mod", kube_build.HELM_MODULE / "go.sum"])
    assert registry_build.stamp() == go_build.pins_digest([registry_build.MODULE / "go.mod",
                                                           registry_build.MODULE / "go.sum"])
    assert kube_build.cache_dir().name == kube_build.KUBERNETES_VERSION
    assert registry_build.cache_dir().name == registry_build.VERSION
