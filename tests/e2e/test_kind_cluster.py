"""tests/e2e/kind-e2e.sh under pytest: the product on a real cluster (kind, Strimzi, spark-operator, our images
and chart). It needs a container engine, kind and helm, and pulls images and charts from the network, so it
runs only when asked (KOO_E2E=1) and is skipped with the reason otherwise (CI has no container engine)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("kind-e2e.sh")
MISSING = [tool for tool in ("docker", "kind", "kubectl", "helm") if shutil.which(tool) is None]


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KOO_E2E") != "1", reason="the kind end-to-end run is opt-in: KOO_E2E=1 (needs Docker, kind, helm, network)")
@pytest.mark.skipif(bool(MISSING), reason=f"missing for the kind end-to-end run: {', '.join(MISSING)}")
def test_the_product_on_a_kind_cluster() -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "[e2e] passed" in done.stderr
