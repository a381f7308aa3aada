#!/usr/bin/env bash
# One entry point for people and CI: `scripts/dev.sh demo` and `scripts/dev.sh test`; `scripts/dev.sh generate`
# rewrites the files derived from others (CRDs, the chart's copies; see scripts/generate.py);
# `scripts/dev.sh images [operator|spark]` builds the container images and `images --push REGISTRY/PREFIX` pushes
# them (scripts/images.sh, docs/images.md);
# `scripts/dev.sh cluster` runs the real Kubernetes control plane the tests use until Ctrl-C (docs/testing.md).
# `scripts/dev.sh kafka [VERSION]` runs Apache Kafka from Maven Central for a person (docs/testing.md).
# Each creates (or reuses) ./.venv and installs the project into it, so a fresh clone needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"
# Python caches the bytecode of what it imports (__pycache__, beside each module; the venv is installed with
# --no-compile, so only what runs gets compiled). With PYTHONDONTWRITEBYTECODE set, as some shells and CI
# machines set it, nothing is ever cached and every process compiles every module it imports from source:
# an operator process's imports then cost ~7 CPU-s instead of ~2.3, a PySpark worker's ~2.7 instead of ~0.8,
# and the test tier starts hundreds of each (docs/testing.md, "Where the integration tier's CPU goes").
unset PYTHONDONTWRITEBYTECODE

say() { printf '[dev] %s\n' "$*" >&2; }

ensure_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtualenv $VENV"
        "$PY" -m venv "$VENV"
    fi
    # Reinstall only when a dependency list changed: a stamp holds the hash of the four pyproject files.
    local stamp="$VENV/.installed-$(cat offsets_model/pyproject.toml pyproject.toml sandbox/pyproject.toml demo/pyproject.toml | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ]; then
        say "installing the offsets model, the product, the sandbox broker, the demo and the test tools (first run takes a few minutes: pyspark is large)"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        # Four distributions: Kafka's offsets model (offsets_model/, the shared core), the product (.), the test
        # double (sandbox/) and the demo (demo/). --no-compile: byte-compiling all of pyspark up front costs
        # ~35 CPU-s; Python compiles (and caches) only the modules a run imports.
        "$VENV/bin/python" -m pip install --quiet --no-compile -e ./offsets_model -e '.[test,spark]' -e ./sandbox -e ./demo
        rm -f "$VENV"/.installed-* && touch "$stamp"
    fi
}

apt_install() {  # $1: what it is for; then Debian packages. Only as root on Debian; says what it could not do.
    local why="$1"; shift
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        say "$why: install $* (Debian: apt-get install $*)"
        return 0
    fi
    say "installing $* from Debian's packages ($why)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@") \
        >/dev/null 2>&1 || say "could not install $*; tests that need it will be skipped and say so"
}

ensure_system_tools() {
    # kcat is an independent Kafka client (librdkafka) the broker tests talk to; Java 17 runs Spark.
    command -v kcat >/dev/null 2>&1 || apt_install "the broker tests' independent client" kcat
    command -v java >/dev/null 2>&1 || apt_install "Spark needs Java 17" openjdk-17-jre-headless
    # Apache Kafka under test: Maven resolves its jars, javac builds the Java client drivers.
    command -v mvn >/dev/null 2>&1 || apt_install "real Kafka's jars come from Maven Central" maven
    command -v javac >/dev/null 2>&1 || apt_install "the Java Kafka clients the tests drive" openjdk-17-jdk-headless
    # The image tests (docs/images.md) build and push with buildah; they run when its build cache is warm
    # (scripts/images.sh warm) or with KOO_IMAGE_TESTS=1, and say why they skip otherwise.
    if [ "${KOO_IMAGE_TESTS:-}" != 0 ]; then
        command -v buildah >/dev/null 2>&1 || apt_install "the image tests build and push with buildah" buildah
        command -v debootstrap >/dev/null 2>&1 || apt_install "the image tests' local Debian base" debootstrap
    fi
}

say_images() {  # one line before the integration tier: whether the image tests run, and why not
    local why
    if [ "${KOO_IMAGE_TESTS:-}" = 0 ]; then say "image tests: off (KOO_IMAGE_TESTS=0)"; return; fi
    if [ "${KOO_IMAGE_TESTS:-}" = 1 ]; then say "image tests: on (KOO_IMAGE_TESTS=1; a cold build cache is built first)"; return; fi
    if ! command -v buildah >/dev/null 2>&1; then say "image tests: skipped (no buildah)"; return; fi
    if why="$(scripts/images.sh warm 2>&1)"; then say "image tests: on (the build cache is warm)"
    else say "image tests: skipped ($why)"; fi
}

KUBE_BUILD_PID=""
KUBE_BUILD_LOG=""

start_kube_build() {  # the real control plane the tests run against, built once from tests/kube (docs/testing.md)
    # In the background from the start: a cold build is ~22 CPU-minutes of Go, which overlaps pip, the linters,
    # the unit tier and Maven (network-bound) instead of following them; wait_kube_build joins it before pytest.
    if ! command -v go >/dev/null 2>&1; then
        say "no Go toolchain: the tests against a real Kubernetes API server will be skipped"
        return 0
    fi
    if "$PY" tests/support/kube_build.py --check >/dev/null 2>&1; then
        return 0  # built and cached: nothing to wait for
    fi
    KUBE_BUILD_LOG="$(mktemp -t koo-kube-build.XXXXXX)"
    say "Kubernetes control plane: building in the background (once, then cached; log $KUBE_BUILD_LOG)"
    "$PY" tests/support/kube_build.py >"$KUBE_BUILD_LOG" 2>&1 &
    KUBE_BUILD_PID=$!
}

wait_kube_build() {
    [ -n "$KUBE_BUILD_PID" ] || return 0
    say "Kubernetes control plane: waiting for the build"
    if ! wait "$KUBE_BUILD_PID"; then
        cat "$KUBE_BUILD_LOG" >&2
        say "the Kubernetes control plane build failed (above)"
        KUBE_BUILD_PID=""
        return 1
    fi
    KUBE_BUILD_PID=""
    rm -f "$KUBE_BUILD_LOG"
}

stop_kube_build() {  # on an early failure (a lint, the unit tier): the Go cache keeps what was compiled
    if [ -n "$KUBE_BUILD_PID" ]; then
        kill "$KUBE_BUILD_PID" 2>/dev/null || true
        wait "$KUBE_BUILD_PID" 2>/dev/null || true
    fi
}

cmd="${1:-}"
shift || true
case "$cmd" in
    test)
        # The tiers (docs/testing.md): with no arguments, the unit tier first (`-m unit`, stopping at the first
        # failure), then the integration tier (`-m "not unit"`) in KOO_TEST_WORKERS parallel pytest-xdist
        # workers (default 2; 0 runs it in this process). With arguments, pytest runs exactly those.
        trap stop_kube_build EXIT
        start_kube_build
        ensure_venv
        ensure_system_tools
        export PATH="$PWD/$VENV/bin:$PATH"
        # mypy's cache outside the clone (it checks every entry against its source's hash): a fresh clone's
        # check takes seconds instead of ~45 CPU-s.
        export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$HOME/.cache/kafka-offset-operator/mypy}"
        say "ruff";          ruff check offsets_model operator spark sandbox demo tests bench scripts
        say "mypy";          mypy
        say "import-linter"; lint-imports
        workers="${KOO_TEST_WORKERS:-2}"
        if [ "$#" -eq 0 ]; then
            parallel=()
            [ "$workers" = 0 ] || parallel=(-n "$workers")
            say "pytest: the unit tier"
            pytest -m unit -x -q "${parallel[@]}" tests/unit  # collects only tests/unit: no pyspark import
        fi
        # Apache Kafka's jars and the Java drivers, before any worker needs them.
        say "Apache Kafka";  PYTHONPATH=tests/support python tests/support/real_kafka.py --resolve
        wait_kube_build
        say_images
        if [ "$#" -eq 0 ]; then
            parallel=()
            # --no-loadscope-reorder: xdist would hand out the files with the most tests first; the order is
            # tests/support/file_order.py's, the longest first
            [ "$workers" = 0 ] || parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
            say "pytest: the integration tier (${workers/#0/no} parallel workers)"
            pytest -m "not unit" "${parallel[@]}"
        else
            say "pytest";    pytest "$@"
        fi
        ;;
    generate)
        ensure_venv
        exec "$VENV/bin/python" scripts/generate.py "$@"
        ;;
    cluster)
        ensure_venv
        export PATH="$PWD/$VENV/bin:$PATH"
        exec "$VENV/bin/python" tests/support/kube_cluster.py
        ;;
    images)
        exec scripts/images.sh "$@"
        ;;
    kafka)  # Apache Kafka from Maven Central on 127.0.0.1 (tests/support/real_kafka.py); Ctrl-C stops it
        ensure_venv
        PYTHONPATH=tests/support exec "$VENV/bin/python" tests/support/real_kafka.py "$@"
        ;;
    demo)
        ensure_venv
        exec "$VENV/bin/kafka-offset-demo" "$@"
        ;;
    *)
        echo "usage: scripts/dev.sh demo | test [pytest args] | cluster | kafka [VERSION] | generate [--check] | images [operator|spark|names] | images --push REGISTRY/PREFIX" >&2
        exit 2
        ;;
esac
