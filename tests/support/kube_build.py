"""Build the real Kubernetes control plane the tests run against, from the Go module proxy.

tests/kube/go.mod pins k8s.io/kubernetes (with every staging module replaced by the release's v0.X.Y, as a
module importing Kubernetes must) and the etcd release Kubernetes itself requires; tests/kube/helm/go.mod
pins helm. Both go.sum files are committed, so every byte built is pinned. The binaries (kube-apiserver,
kube-controller-manager, etcd, helm) go to ~/.cache/kafka-offset-operator/kube/<version>/ and are built
once: a second call finds them (a stamp names the go.mod/go.sum it was built from) and returns at once.

Built as Kubernetes' own release builds them (hack/lib/golang.sh): CGO_ENABLED=0, -trimpath, tags
selinux,notest, and the version set with -ldflags -X so `kubectl version` reports the release rather than
v0.0.0-master. Nothing built is committed.

    python tests/support/kube_build.py          # build if needed, print the directory
    python tests/support/kube_build.py --check  # exit 1 (and say why) when Go is missing or nothing is built
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tests" / "kube"
HELM_MODULE = MODULE / "helm"
BINARIES = ("kube-apiserver", "kube-controller-manager", "etcd", "helm")
# Set in both packages Kubernetes' hack/lib/version.sh sets: component-base for the servers' /version,
# client-go for the clients inside them.
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


class NoGo(Exception):
    """The Go toolchain is missing: the real control plane cannot be built here."""


def required(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires of `module` (a `require` line, in a block or alone)."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod} does not require {module}")
    return match.group(1)


KUBERNETES_VERSION = required(MODULE / "go.mod", "k8s.io/kubernetes")
ETCD_VERSION = required(MODULE / "go.mod", "go.etcd.io/etcd/server/v3")
HELM_VERSION = required(HELM_MODULE / "go.mod", "helm.sh/helm/v3")


def cache_dir() -> Path:
    """Where the binaries of this Kubernetes release live (KOO_KUBE_CACHE overrides the parent folder)."""
    base = os.environ.get("KOO_KUBE_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator" / "kube")
    return Path(base) / KUBERNETES_VERSION


def stamp() -> str:
    """A digest of the pins: binaries built from other go.mod/go.sum files are rebuilt."""
    digest = hashlib.sha256()
    for path in (MODULE / "go.mod", MODULE / "go.sum", HELM_MODULE / "go.mod", HELM_MODULE / "go.sum"):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def built() -> Path | None:
    """The directory of binaries built from the current pins, or None."""
    directory = cache_dir()
    if (directory / f".built-{stamp()}").exists() and all((directory / b).exists() for b in BINARIES):
        return directory
    return None


def go() -> str:
    found = shutil.which("go")
    if found is None:
        raise NoGo("no Go toolchain on PATH (the real Kubernetes control plane is built from tests/kube with go)")
    return found


def kube_ldflags(version: str, build_date: str) -> str:
    major, minor = version.lstrip("v").split(".")[:2]
    values = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
              "buildDate": build_date}
    return " ".join(f"-X {pkg}.{key}={value}" for pkg in VERSION_PACKAGES for key, value in values.items())


@dataclass(frozen=True)
class Step:
    """One `go build` invocation: packages of one module into one directory."""

    module: Path
    packages: tuple[str, ...]
    ldflags: str


def steps(build_date: str) -> list[Step]:
    # Both Kubernetes servers and etcd in one invocation: the go command schedules their shared packages
    # once and links the three in parallel.
    return [
        Step(MODULE, ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
                      "go.etcd.io/etcd/server/v3"),
             kube_ldflags(KUBERNETES_VERSION, build_date) + " -s -w"),
        Step(HELM_MODULE, ("helm.sh/helm/v3/cmd/helm",),
             f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION} -s -w"),
    ]


def build(log: bool = True) -> Path:
    """The binaries' directory, building them first if they are missing (minutes, cold: see docs/testing.md)."""
    done = built()
    if done is not None:
        return done
    go_bin = go()
    target = cache_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    build_date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        for step in steps(build_date):
            if log:
                print(f"[kube] go build {' '.join(step.packages)}", file=sys.stderr, flush=True)
            subprocess.run([go_bin, "build", "-trimpath", "-tags", "selinux,notest", "-ldflags", step.ldflags,
                            "-o", f"{out}/", *step.packages], cwd=step.module, env=env, check=True)
        (out / "server").rename(out / "etcd")  # go names the binary of go.etcd.io/etcd/server/v3 after "server"
        (out / f".built-{stamp()}").touch()
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return target


def main(argv: list[str]) -> int:
    try:
        if "--check" in argv:
            found = built()
            go()
            if found is None:
                print(f"[kube] not built yet ({cache_dir()})", file=sys.stderr)
                return 1
            print(found)
            return 0
        print(build())
        return 0
    except NoGo as exc:
        print(f"[kube] {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"[kube] the build failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
