"""A real Kubernetes control plane on loopback for the tests: the machinery is the demo's
(kafka_offset_demo/control_plane.py, which the demo's `--real-cluster` runs too); here it is built first if
need be (kube_build.py) and run for a person by `scripts/dev.sh cluster` (this file's main: it prints
`export KUBECONFIG=...` and runs until Ctrl-C). Used by the pytest fixtures in kube_fixtures.py.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kube_build import build

from kafka_offset_demo.control_plane import (
    CONTROLLERS,
    ISSUER,
    Api,
    ApiError,
    CertificateAuthority,
    ControlPlane,
    Issued,
    free_port,
    kubeconfig,
)

__all__ = ["CONTROLLERS", "ISSUER", "Api", "ApiError", "CertificateAuthority", "ControlPlane", "Issued",
           "control_plane", "free_port", "kubeconfig", "main"]


@contextmanager
def control_plane(workdir: Path | None = None) -> Iterator[ControlPlane]:
    """A started control plane (built first if need be), stopped on exit; its API server keeps an audit log
    of what service accounts ask (ControlPlane.audit_log, read by tests/support/audit_log.py)."""
    with tempfile.TemporaryDirectory(prefix="kube-") as tmp:
        plane = ControlPlane(build(), workdir or Path(tmp), audit=True)
        try:
            yield plane.start()
        finally:
            plane.stop()


def main() -> int:
    """`scripts/dev.sh cluster`: a control plane for a person, until Ctrl-C."""
    workdir = Path(os.environ.get("KOO_CLUSTER_DIR") or tempfile.mkdtemp(prefix="kube-cluster-"))
    print(f"[kube] starting etcd, kube-apiserver and kube-controller-manager in {workdir}", file=sys.stderr)
    with control_plane(workdir) as plane:
        print(f"[kube] ready at {plane.url}; logs in {workdir}; Ctrl-C stops it", file=sys.stderr)
        print(f"export KUBECONFIG={plane.kubeconfig}", flush=True)
        try:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            while True:
                plane._alive()
                time.sleep(1)  # watching the processes, not synchronising anything
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave the servers running
            print("[kube] stopping", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
