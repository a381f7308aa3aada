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

import os
import sys
from pathlib import Path

import go_build
from go_build import Step, required

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tests" / "registry"
PACKAGE = "github.com/distribution/distribution/v3/cmd/registry"
VERSION = required(MODULE / "go.mod", "github.com/distribution/distribution/v3")


def cache_dir() -> Path:
    base = os.environ.get("KOO_REGISTRY_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator" / "registry")
    return Path(base) / VERSION


def stamp() -> str:
    return go_build.pins_digest((MODULE / "go.mod", MODULE / "go.sum"))


def built() -> Path | None:
    """The registry binary built from the current pins, or None."""
    return cache_dir() / "registry" if go_build.built(cache_dir(), stamp(), ("registry",)) else None


def build() -> Path:
    """The registry binary, built first if need be (about 2 CPU-minutes cold)."""
    done = built()
    if done is not None:
        return done
    step = Step(MODULE, (PACKAGE,), "-s -w")  # go names the binary "registry", after the package
    return go_build.build_once(cache_dir(), stamp(), (step,), label="registry") / "registry"


def main(argv: list[str]) -> int:
    return go_build.main(argv, "registry", built, build, cache_dir())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
