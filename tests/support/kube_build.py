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
import os
import sys
from pathlib import Path

import go_build
from go_build import NoGo, Step, go, required

__all__ = ["KUBERNETES_VERSION", "NoGo", "build", "built", "cache_dir", "go", "required", "stamp"]

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "tests" / "kube"
HELM_MODULE = MODULE / "helm"
BINARIES = ("kube-apiserver", "kube-controller-manager", "etcd", "helm")
# Set in both packages Kubernetes' hack/lib/version.sh sets: component-base for the servers' /version,
# client-go for the clients inside them.
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")

KUBERNETES_VERSION = required(MODULE / "go.mod", "k8s.io/kubernetes")
ETCD_VERSION = required(MODULE / "go.mod", "go.etcd.io/etcd/server/v3")
HELM_VERSION = required(HELM_MODULE / "go.mod", "helm.sh/helm/v3")


def cache_dir() -> Path:
    """Where the binaries of this Kubernetes release live (KOO_KUBE_CACHE overrides the parent folder)."""
    base = os.environ.get("KOO_KUBE_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator" / "kube")
    return Path(base) / KUBERNETES_VERSION


def stamp() -> str:
    """A digest of the pins: binaries built from other go.mod/go.sum files are rebuilt."""
    return go_build.pins_digest((MODULE / "go.mod", MODULE / "go.sum", HELM_MODULE / "go.mod", HELM_MODULE / "go.sum"))


def built() -> Path | None:
    """The directory of binaries built from the current pins, or None."""
    directory = cache_dir()
    return directory if go_build.built(directory, stamp(), BINARIES) else None


def kube_ldflags(version: str, build_date: str) -> str:
    major, minor = version.lstrip("v").split(".")[:2]
    values = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
              "buildDate": build_date}
    return " ".join(f"-X {pkg}.{key}={value}" for pkg in VERSION_PACKAGES for key, value in values.items())


def steps(build_date: str) -> list[Step]:
    # Both Kubernetes servers and etcd in one invocation: the go command schedules their shared packages
    # once and links the three in parallel.
    return [
        Step(MODULE, ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
                      "go.etcd.io/etcd/server/v3"),
             kube_ldflags(KUBERNETES_VERSION, build_date) + " -s -w", tags="selinux,notest"),
        Step(HELM_MODULE, ("helm.sh/helm/v3/cmd/helm",),
             f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION} -s -w", tags="selinux,notest"),
    ]


def build() -> Path:
    """The binaries' directory, building them first if they are missing (minutes, cold: see docs/testing.md)."""
    done = built()
    if done is not None:
        return done
    build_date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # go names the binary of go.etcd.io/etcd/server/v3 after "server"
    return go_build.build_once(cache_dir(), stamp(), steps(build_date), renames={"server": "etcd"}, label="kube")


def main(argv: list[str]) -> int:
    return go_build.main(argv, "kube", built, build, cache_dir())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
