"""The push path of the README (`scripts/dev.sh images --push REGISTRY/PREFIX`, buildah push) against a real OCI
registry: CNCF Distribution's `registry`, built from the Go module proxy (tests/support/registry_build.py,
cached like the control plane) and started here on loopback over plain HTTP.

Both product images, built here from images/ (image_harness.build: the same builds the other image tests
use), are pushed by the README's command, pulled back with buildah into a second, empty store, their
manifest digests compared with the registry's and their image IDs with the local ones; then the operator
image's smoke test (operator_smoke: /healthz and an OffsetDeletion reconciled against the sandbox broker and
the emulated API) runs from the pulled copy, in that second store.

Runs with the other image tests (image_harness.missing: buildah, root, a warm build cache or
KOO_IMAGE_TESTS=1); needs Go too (or the cached registry). Costs, warm: the push of both (~1.7 GB
uncompressed, gzip) and the pull back, about 2 CPU-minutes here (docs/images.md); the registry build, once,
about 2 CPU-minutes more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import registry_build
from image_harness import (
    ROOT,
    SCRIPT,
    Built,
    build,
    buildah_cmd,
    container,
    image_config,
    run_argv,
    store_options,
)
from image_harness import missing as images_missing
from kafka_clients import committed
from kube_build import NoGo
from operator_smoke import operator_args, reconciles_a_deletion, smoke_world

from kafka_offset_demo.ports import free_port

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def missing() -> str | None:
    why = images_missing()
    if why is not None:
        return why
    if registry_build.built() is None and shutil.which("go") is None:
        return "no Go toolchain: the registry is built from the Go module proxy"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]


def buildah(*args: str, store: Path | None = None, timeout: float = 900) -> str:
    done = subprocess.run([*buildah_cmd(), *store_options(store), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"buildah {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout.strip()


@dataclass(frozen=True)
class Registry:
    address: str  # host:port on loopback

    def manifest_digest(self, repository: str, tag: str) -> str:
        req = urllib.request.Request(f"http://{self.address}/v2/{repository}/manifests/{tag}", method="HEAD",
                                     headers={"Accept": f"{OCI_MANIFEST},application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(req, timeout=10) as rsp:
            return str(rsp.headers["Docker-Content-Digest"])


@pytest.fixture(scope="module")
def registry_binary() -> Path:
    try:
        return registry_build.build()
    except NoGo as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def registry(registry_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    home = tmp_path_factory.mktemp("registry")
    address = f"127.0.0.1:{free_port()}"
    config = home / "config.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(home / "data")}, "delete": {"enabled": True}},
        "http": {"addr": address}}))
    log = (home / "registry.log").open("wb")
    proc = subprocess.Popen([str(registry_binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (home / "registry.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"http://{address}/v2/", timeout=5) as rsp:
                    if rsp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, "the registry did not answer /v2/ within 60 s"
            time.sleep(0.2)  # polling cadence; the deadline decides
        yield Registry(address)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


@pytest.fixture(scope="module")
def images() -> tuple[Built, Built]:
    return build("operator"), build("spark")


@pytest.fixture
def second_store(tmp_path: Path) -> Iterator[Path]:
    """An empty image store: what is pulled into it can only come from the registry. Emptied afterwards
    (overlay keeps its layers mounted while a container holds them)."""
    store = tmp_path / "store"
    try:
        yield store
    finally:
        subprocess.run([*buildah_cmd(), *store_options(store), "rm", "--all"], capture_output=True, timeout=300)
        subprocess.run([*buildah_cmd(), *store_options(store), "rmi", "--all", "--force"], capture_output=True, timeout=300)


def test_both_images_go_to_a_registry_and_come_back_the_same(registry: Registry, images: tuple[Built, Built],
                                                               second_store: Path, tmp_path: Path) -> None:
    env = {**os.environ, "KOO_BUILDER": "buildah", "KOO_PUSH_TLS_VERIFY": "false"}
    prefix = f"{registry.address}/team"
    start = time.monotonic()
    done = subprocess.run([str(SCRIPT), "--push", prefix], capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    pushed_s = time.monotonic() - start
    assert "is up to date (same inputs)" in done.stderr  # the README's command reused the images built here
    pulled: dict[str, str] = {}
    for built in images:
        name = built.image.rsplit("/", 1)[1]  # kafka-offset-operator[-spark]:<version>
        assert f"pushed {prefix}/{name}" in done.stderr
        repository, tag = f"team/{name}".split(":")
        digest = registry.manifest_digest(repository, tag)
        pulled_id = buildah("pull", "--quiet", "--tls-verify=false", f"docker://{prefix}/{name}", store=second_store)
        assert buildah("inspect", "--type", "image", "--format", "{{.FromImageDigest}}", pulled_id,
                       store=second_store) == digest, name
        # The same image: its config (the image ID) is the one built here.
        assert pulled_id == buildah("inspect", "--type", "image", "--format", "{{.FromImageID}}", built.image), name
        pulled[name.split(":")[0]] = f"{prefix}/{name}"
    print(f"pushed both in {pushed_s:.0f} s, pulled back in {time.monotonic() - start - pushed_s:.0f} s")
    # The operator's smoke test, from the pulled copy in the second store.
    operator = pulled["kafka-offset-operator"]
    config = image_config(operator, store=second_store)
    with smoke_world(tmp_path) as world, container(operator, store=second_store) as ctr:
        os.chmod(world.kubeconfig, 0o644)
        os.chmod(world.kubeconfig.parent, 0o755)  # the image's user reads it through the bind mount
        command = run_argv(ctr, [*config["Entrypoint"], *operator_args("/config/kubeconfig")],
                           volumes=[(world.kubeconfig.parent, "/config")], store=second_store)
        status = reconciles_a_deletion(world, command, "pulled", tmp_path / "operator.log")
        assert status["phase"] == "Succeeded"
        assert committed(world.broker.bootstrap_servers, "pulled") == {}
