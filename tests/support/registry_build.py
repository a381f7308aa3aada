"""Build the OCI registry the image push test pushes to: CNCF Distribution's `registry`
(github.com/distribution/distribution/v3/cmd/registry), from the Go module proxy.

tests/registry/go.mod pins it as a Go tool (`go get -tool ...`), and its go.sum is committed, so every byte
built is pinned, as tests/kube's are for the control plane (kube_build.py). Built once, into
~/.cache/kafka-offset-operator/registry/<version>/registry (a stamp names the go.mod/go.sum it was built
from); a second call returns at once. CGO_ENABLED=0: a static binary, which the test also copies into an
image built from scratch. Nothing built is committed.

    python tests/support/registry_build.py          # build if needed, print the binary's path
    python tests/support/registry_build.py --check  # exit 1 (and say why) when Go is missing or nothing is built
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kube_build import NoGo, go, required

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tests" / "registry"
PACKAGE = "github.com/distribution/distribution/v3/cmd/registry"
VERSION = required(MODULE / "go.mod", "github.com/distribution/distribution/v3")


def cache_dir() -> Path:
    base = os.environ.get("KOO_REGISTRY_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator" / "registry")
    return Path(base) / VERSION


def stamp() -> str:
    digest = hashlib.sha256()
    for path in (MODULE / "go.mod", MODULE / "go.sum"):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def built() -> Path | None:
    """The registry binary built from the current pins, or None."""
    binary = cache_dir() / "registry"
    return binary if (cache_dir() / f".built-{stamp()}").exists() and binary.exists() else None


def build(log: bool = True) -> Path:
    """The registry binary, built first if need be (about 2 CPU-minutes cold)."""
    done = built()
    if done is not None:
        return done
    go_bin = go()
    target = cache_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    out = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        if log:
            print(f"[registry] go build {PACKAGE} {VERSION}", file=sys.stderr, flush=True)
        subprocess.run([go_bin, "build", "-trimpath", "-ldflags", "-s -w", "-o", f"{out}/registry", PACKAGE],
                       cwd=MODULE, env=env, check=True)
        (out / f".built-{stamp()}").touch()
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return target / "registry"


def main(argv: list[str]) -> int:
    try:
        if "--check" in argv:
            go()
            found = built()
            if found is None:
                print(f"[registry] not built yet ({cache_dir()})", file=sys.stderr)
                return 1
            print(found)
            return 0
        print(build())
        return 0
    except NoGo as exc:
        print(f"[registry] {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"[registry] the build failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
