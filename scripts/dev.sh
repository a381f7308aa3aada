#!/usr/bin/env bash
# One entry point for people and CI: `scripts/dev.sh demo` and `scripts/dev.sh test`; `scripts/dev.sh generate`
# rewrites the files derived from others (CRDs, the chart's copies; see scripts/generate.py).
# Each creates (or reuses) ./.venv and installs the project into it, so a fresh clone needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
PY="${PYTHON:-python3}"

say() { printf '[dev] %s\n' "$*" >&2; }

ensure_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtualenv $VENV"
        "$PY" -m venv "$VENV"
    fi
    # Reinstall only when a dependency list changed: a stamp holds the hash of the three pyproject files.
    local stamp="$VENV/.installed-$(cat pyproject.toml sandbox/pyproject.toml demo/pyproject.toml | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ]; then
        say "installing the product, the sandbox broker, the demo and the test tools (first run takes a few minutes: pyspark is large)"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        # The product (.), the test double (sandbox/) and the demo (demo/) are three distributions.
        "$VENV/bin/python" -m pip install --quiet -e '.[test]' -e ./sandbox -e ./demo
        rm -f "$VENV"/.installed-* && touch "$stamp"
    fi
}

ensure_system_tools() {
    # kcat is an independent Kafka client (librdkafka) the broker tests talk to; Java runs Spark.
    if ! command -v kcat >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing kcat from Debian's packages"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null 2>&1 \
            || say "could not install kcat; tests that need it will be skipped and say so"
    fi
    if ! command -v java >/dev/null 2>&1; then
        say "Java 17 is needed by Spark: install it with 'apt-get install openjdk-17-jre-headless'"
    fi
}

cmd="${1:-}"
shift || true
case "$cmd" in
    test)
        ensure_venv
        ensure_system_tools
        export PATH="$PWD/$VENV/bin:$PATH"
        say "ruff";          ruff check operator spark sandbox demo tests bench scripts
        say "mypy";          mypy
        say "import-linter"; lint-imports
        say "pytest";        pytest "$@"
        ;;
    generate)
        ensure_venv
        exec "$VENV/bin/python" scripts/generate.py "$@"
        ;;
    demo)
        ensure_venv
        exec "$VENV/bin/kafka-offset-demo" "$@"
        ;;
    *)
        echo "usage: scripts/dev.sh demo | test [pytest args] | generate [--check]" >&2
        exit 2
        ;;
esac
