"""Building and running the two images on a machine without a container engine: scripts/images.sh builds them
(buildah here, with the local Debian base when no registry answers), `buildah run --isolation chroot
--network host` runs a command in a container of an image, and `read_only_root` runs one the way a Pod with
`readOnlyRootFilesystem: true` and an emptyDir on /tmp would: the image's root bind-mounted read-only in a
private mount namespace, a tmpfs on /tmp, the image's user, environment and entrypoint.

Images are built once per test session (a module fixture calls `build`, which remembers what it built); the
store and the local bases persist between runs, so a second run rebuilds only what changed."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "images.sh"
LOCK = Path.home() / ".cache" / "kafka-offset-operator" / "image-build.lock"
BUILD_TIMEOUT = 1800  # a cold build of both here: about 14 minutes with overlay storage (docs/images.md)


@cache
def buildah_cmd() -> list[str]:
    """buildah with the global options scripts/images.sh uses (its `names`: overlay where it mounts, else vfs;
    KOO_BUILDAH_OPTS overrides), so the tests see the store the builds wrote."""
    return ["buildah", *shlex.split(names().get("BUILDAH_OPTS", "--storage-driver vfs"))]


@cache
def missing() -> str | None:
    """Why the image tests cannot run here, or None (one line, the skip reason). They run when the machine can
    build (buildah, root) and the build cache is warm (`scripts/images.sh warm`: the bases in the store, so a
    build redoes only the product's layers, about a minute); KOO_IMAGE_TESTS=1 runs them from a cold cache
    too (a cold build of both: about 14 minutes here, docs/images.md), KOO_IMAGE_TESTS=0 never."""
    wanted = os.environ.get("KOO_IMAGE_TESTS", "")
    if wanted == "0":
        return "image tests turned off (KOO_IMAGE_TESTS=0)"
    if shutil.which("buildah") is None:
        return "buildah is not installed (Debian: apt-get install buildah debootstrap; scripts/dev.sh does it as root)"
    if os.geteuid() != 0:
        return "not root: buildah's chroot isolation and the local Debian base need root"
    if shutil.which("unshare") is None or shutil.which("chroot") is None:
        return "unshare or chroot is missing (util-linux, coreutils)"
    if wanted == "1":
        if shutil.which("debootstrap") is None and not (os.environ.get("KOO_BASE_IMAGE") and os.environ.get("KOO_SPARK_BASE_IMAGE")):
            return "debootstrap is not installed (the local base when no registry answers; apt-get install debootstrap)"
        return None
    warm = subprocess.run([str(SCRIPT), "warm"], capture_output=True, text=True, timeout=120)
    if warm.returncode != 0:
        reason = (warm.stdout.strip() or warm.stderr.strip()).splitlines()[-1:] or ["scripts/images.sh warm failed"]
        return f"{reason[0]}; KOO_IMAGE_TESTS=1 builds it in the tests"
    return None


@cache
def names() -> dict[str, str]:
    out = subprocess.run([str(SCRIPT), "names"], check=True, capture_output=True, text=True, timeout=60).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


@dataclass(frozen=True)
class Built:
    image: str
    seconds: float  # this session's build (a no-op rebuild when the store already had it)


@cache
def build(which: str) -> Built:
    """`scripts/images.sh <which>` (operator or spark): the image reference it tagged."""
    import time

    start = time.monotonic()
    env = {**os.environ, "KOO_BUILDER": "buildah"}
    # One build at a time on this machine (pytest-xdist workers, other checkouts): the second finds the
    # image the first built ("up to date") instead of building it again beside it.
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run([str(SCRIPT), which], capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=env)
    if done.returncode != 0:
        raise AssertionError(f"scripts/images.sh {which} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    key = {"operator": "OPERATOR_IMAGE", "spark": "SPARK_IMAGE"}[which]
    return Built(names()[key], time.monotonic() - start)


def image_config(image: str, store: Path | None = None) -> dict[str, Any]:
    """The image's OCI config (User, Env, Entrypoint, Cmd, ...)."""
    out = subprocess.run([*buildah_cmd(), *store_options(store), "inspect", "--type", "image", image], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return dict(json.loads(out)["OCIv1"]["config"])


def image_size(image: str) -> str:
    """As `buildah images` reports it ("1.46 GB")."""
    out = subprocess.run([*buildah_cmd(), "images", "--json", image], check=True, capture_output=True, text=True, timeout=60).stdout
    return str(json.loads(out)[0]["size"])


def store_options(store: Path | None) -> list[str]:
    """buildah's global options for a store of its own under `store` (None: the builds' store)."""
    return ["--root", str(store / "root"), "--runroot", str(store / "run")] if store else []


@contextmanager
def container(image: str, store: Path | None = None) -> Iterator[str]:
    """A working container of `image` (buildah from) in `store` (store_options), removed afterwards."""
    name = f"koo-test-{uuid.uuid4().hex[:8]}"
    subprocess.run([*buildah_cmd(), *store_options(store), "from", "--quiet", "--pull=never", "--name", name, image],
                   check=True, capture_output=True, timeout=300)
    try:
        yield name
    finally:
        subprocess.run([*buildah_cmd(), *store_options(store), "rm", name], capture_output=True, timeout=300)


def run_argv(ctr: str, argv: Sequence[str], volumes: Sequence[tuple[Path, str]] = (), store: Path | None = None
             ) -> list[str]:
    """The command line running `argv` in the container, as the image's user, on the host's network."""
    mounts = [arg for src, dst in volumes for arg in ("-v", f"{src}:{dst}")]
    return [*buildah_cmd(), *store_options(store), "run", "--isolation", "chroot", "--network", "host", *mounts, ctr,
            "--", *argv]


def run(ctr: str, argv: Sequence[str], timeout: float = 300, volumes: Sequence[tuple[Path, str]] = ()
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(run_argv(ctr, argv, volumes), capture_output=True, text=True, timeout=timeout)


@contextmanager
def mounted(ctr: str) -> Iterator[Path]:
    path = subprocess.run([*buildah_cmd(), "mount", ctr], check=True, capture_output=True, text=True, timeout=120).stdout.strip()
    try:
        yield Path(path)
    finally:
        subprocess.run([*buildah_cmd(), "umount", ctr], capture_output=True, timeout=120)


_READ_ONLY = """\
set -eu
r="$1"; user="$2"; shift 2
mount --bind "$r" "$r"
mount -o remount,bind,ro "$r"
mount -t tmpfs -o mode=1777,size=512m tmpfs "$r/tmp"
mount --rbind /dev "$r/dev"
mount -t proc proc "$r/proc"
mount -t sysfs -o ro sysfs "$r/sys"
cp "$KOO_FILES"/* "$r/tmp/" && chmod a+r "$r"/tmp/*
exec chroot --userspec="$user" "$r" "$@"
"""


def read_only_root_argv(rootfs: Path, config: dict[str, Any], argv: Sequence[str]) -> list[str]:
    """`argv` (after the image's entrypoint) in `rootfs` mounted read-only, with a fresh tmpfs on /tmp holding
    the files of $KOO_FILES, as the image's user with only the image's environment."""
    user = str(config.get("User") or "0")
    if ":" not in user:
        user = f"{user}:{user}"
    command = ["/usr/bin/env", "-i", *config.get("Env", []), *config.get("Entrypoint", []), *argv]
    return ["unshare", "--mount", "--propagation", "private", "--fork", "--kill-child",
            "sh", "-c", _READ_ONLY, "sh", str(rootfs), user, *command]
