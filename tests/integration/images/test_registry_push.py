"""The push path of the README (`scripts/dev.sh images --push REGISTRY/PREFIX`, buildah push) against a real OCI
registry: CNCF Distribution's `registry`, built from the Go module proxy (tests/support/registry_build.py,
cached like the control plane) and started here on loopback over plain HTTP.

The images pushed are two tiny ones built from scratch under the two images' names (each holds the static
registry binary as its command, so a container of the pulled copy has something to run): a real build of the
two product images takes about 25 minutes cold here, and the push path does not depend on what an image holds.
Both are pushed by scripts/images.sh (KOO_NO_BUILD=1: what the store holds), pulled back with buildah into a
second, empty store, their digests compared with the registry's and the local ones, and the pulled operator
image's command run from the pulled copy.

Opt-in with the other image tests (KOO_IMAGE_TESTS=1); needs buildah, root and Go (or the cached registry).
About 1 CPU-minute warm (two tiny images, vfs storage); the registry build, once, about 2 CPU-minutes more.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import registry_build
from image_harness import ROOT, SCRIPT
from kube_build import NoGo

BUILDAH_OPTS = shlex.split(os.environ.get("KOO_BUILDAH_OPTS", "--storage-driver vfs"))
TAG = "push-test"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def missing() -> str | None:
    if os.environ.get("KOO_IMAGE_TESTS") != "1":
        return "image tests are opt-in: KOO_IMAGE_TESTS=1 (this one builds a registry from the Go module proxy)"
    if shutil.which("buildah") is None:
        return "buildah is not installed (Debian: apt-get install buildah)"
    if os.geteuid() != 0:
        return "not root: buildah's chroot isolation needs root"
    if registry_build.built() is None and shutil.which("go") is None:
        return "no Go toolchain: the registry is built from the Go module proxy"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]


def buildah(*args: str, store: Path | None = None, timeout: float = 600) -> str:
    roots = ["--root", str(store / "root"), "--runroot", str(store / "run")] if store else []
    done = subprocess.run(["buildah", *BUILDAH_OPTS, *roots, *args], capture_output=True, text=True, timeout=timeout)
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


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


@dataclass(frozen=True)
class Tiny:
    operator: str
    spark: str


@pytest.fixture(scope="module")
def tiny_images(registry_binary: Path) -> Iterator[Tiny]:
    """Two images from scratch under the product images' names (another prefix and tag), each with the static
    registry binary as its command and a file naming which it is."""
    prefix = f"localhost/koo-push-{uuid.uuid4().hex[:6]}"
    names = Tiny(f"{prefix}/kafka-offset-operator:{TAG}", f"{prefix}/kafka-offset-operator-spark:{TAG}")
    for name in (names.operator, names.spark):
        ctr = buildah("from", "scratch")
        try:
            buildah("copy", ctr, str(registry_binary), "/registry")
            buildah("config", "--entrypoint", '["/registry"]', "--cmd", "--version", "--label", f"which={name}", ctr)
            buildah("commit", "--quiet", ctr, name)
        finally:
            subprocess.run(["buildah", *BUILDAH_OPTS, "rm", ctr], capture_output=True, timeout=120)
    try:
        yield names
    finally:
        for name in (names.operator, names.spark):
            subprocess.run(["buildah", *BUILDAH_OPTS, "rmi", "-f", name], capture_output=True, timeout=120)


def test_images_sh_pushes_both_and_they_come_back_the_same(registry: Registry, tiny_images: Tiny, tmp_path: Path) -> None:
    env = {**os.environ, "KOO_BUILDER": "buildah", "KOO_NO_BUILD": "1", "KOO_PUSH_TLS_VERIFY": "false",
           "KOO_OPERATOR_IMAGE": tiny_images.operator, "KOO_SPARK_IMAGE": tiny_images.spark}
    prefix = f"{registry.address}/team"
    done = subprocess.run([str(SCRIPT), "--push", prefix], capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    second = tmp_path / "store"  # an empty store: what is pulled can only come from the registry
    for local in (tiny_images.operator, tiny_images.spark):
        name = local.rsplit("/", 1)[1]  # kafka-offset-operator[-spark]:push-test
        assert f"pushed {prefix}/{name}" in done.stderr
        repository, tag = f"team/{name}".split(":")
        pushed = registry.manifest_digest(repository, tag)
        pulled_id = buildah("pull", "--quiet", "--tls-verify=false", f"docker://{prefix}/{name}", store=second)
        digest = buildah("inspect", "--type", "image", "--format", "{{.FromImageDigest}}", pulled_id, store=second)
        assert digest == pushed, (name, digest, pushed)
        # The same image: its config (the image ID) is the one built here.
        assert pulled_id == buildah("inspect", "--type", "image", "--format", "{{.FromImageID}}", local)
    # The operator's pulled copy runs, from the second store.
    ctr = buildah("from", "--quiet", f"{prefix}/kafka-offset-operator:{TAG}", store=second)
    out = buildah("run", "--isolation", "chroot", ctr, "--", "/registry", "--version", store=second)
    assert "registry" in out and registry_build.VERSION.lstrip("v") in out, out
