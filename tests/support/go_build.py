"""Build pinned Go binaries once, from the Go module proxy, into a cache outside the repo: the plumbing the
real control plane (kube_build.py) and the image tests' registry (registry_build.py) share.

A module folder in the repo pins what is built (its go.mod and committed go.sum); `build_once` runs `go build`
for each step into a temporary folder beside the target, writes a stamp `.built-<digest of the pins>` and
moves the folder into place, so an interrupted build leaves nothing that looks built, and binaries built from
other pins are rebuilt. Nothing built is committed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class NoGo(Exception):
    """The Go toolchain is missing: nothing can be built here."""


def go() -> str:
    found = shutil.which("go")
    if found is None:
        raise NoGo("no Go toolchain on PATH (the real Kubernetes control plane and the image tests' registry are "
                   "built with go)")
    return found


def required(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires of `module` (a `require` line, in a block or alone)."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod} does not require {module}")
    return match.group(1)


def pins_digest(files: Iterable[Path]) -> str:
    """A digest of the pins (go.mod and go.sum files, in order): the stamp's name, so other pins rebuild."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def built(directory: Path, digest: str, binaries: Sequence[str]) -> bool:
    """Whether `directory` holds `binaries` built from the pins of `digest`."""
    return (directory / f".built-{digest}").exists() and all((directory / b).exists() for b in binaries)


@dataclass(frozen=True)
class Step:
    """One `go build` invocation: packages of one module into one directory (each binary named, as go names
    it, after its package's last path element)."""

    module: Path
    packages: tuple[str, ...]
    ldflags: str
    tags: str = ""


def build_once(target: Path, digest: str, steps: Sequence[Step], renames: Mapping[str, str] | None = None,
               label: str = "go") -> Path:
    """Run `steps` into a fresh folder, rename binaries (`renames`: go's name -> ours), stamp it with
    `digest` and move it to `target` (replacing what was there). Static binaries (CGO_ENABLED=0), -trimpath,
    the local toolchain and the committed go.sum only (-mod=readonly). Raises NoGo without Go and
    CalledProcessError when a build fails."""
    go_bin = go()
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    out = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        for step in steps:
            print(f"[{label}] go build {' '.join(step.packages)}", file=sys.stderr, flush=True)
            tags = ["-tags", step.tags] if step.tags else []
            subprocess.run([go_bin, "build", "-trimpath", *tags, "-ldflags", step.ldflags, "-o", f"{out}/",
                            *step.packages], cwd=step.module, env=env, check=True)
        for theirs, ours in (renames or {}).items():
            (out / theirs).rename(out / ours)
        (out / f".built-{digest}").touch()
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return target


def main(argv: Sequence[str], label: str, find: Callable[[], Path | None], build: Callable[[], Path],
         cache: Path) -> int:
    """The command line both build scripts share: build if need be and print where (`--check`: exit 1 and
    say why when Go is missing or nothing is built)."""
    try:
        if "--check" in argv:
            found = find()
            go()
            if found is None:
                print(f"[{label}] not built yet ({cache})", file=sys.stderr)
                return 1
            print(found)
            return 0
        print(build())
        return 0
    except NoGo as exc:
        print(f"[{label}] {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"[{label}] the build failed: {exc}", file=sys.stderr)
        return 1
