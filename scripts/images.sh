#!/usr/bin/env bash
# Builds the two images (images/operator and images/spark-job; docs/images.md) with docker or podman where an
# engine runs, with buildah otherwise (no daemon: what these Debian machines without Docker have).
#
#   scripts/images.sh [build] [operator|spark|all]   build (default: all)
#   scripts/images.sh names                          the image references a build would tag, KEY=VALUE
#   scripts/images.sh base                           only the local bases (below)
#   scripts/images.sh --push REGISTRY/PREFIX [operator|spark|all]
#                                                    build (or reuse) and push to REGISTRY/PREFIX/NAME:TAG
#
# Names and tags come from pyproject.toml: [tool.kafka-offset-operator.images] registry (the one setting the
# manifests and the chart are generated from) and the package version; each can be overridden:
#   KOO_IMAGE_REGISTRY (the registry setting), KOO_IMAGE_TAG (the version),
#   KOO_OPERATOR_IMAGE, KOO_SPARK_IMAGE (the full references).
# Pushing: buildah push (docker/podman push after a tag); KOO_PUSH_TLS_VERIFY=false for a plain-HTTP registry
# (buildah, podman); log in first (buildah login REGISTRY) where the registry asks. KOO_NO_BUILD=1 pushes the
# images the store holds under those names and builds nothing (the registry test's tiny images).
# Bases (the Containerfiles' BASE build argument):
#   KOO_BASE_IMAGE        the operator's (python:3.11-slim-bookworm), KOO_SPARK_BASE_IMAGE the Spark job's (the
#                         Apache Spark Python image, spark:$SPARK_VERSION-...-python3-ubuntu).
#   Either set to "local", or left unset when no registry answers, builds a base from Debian's packages
#   (debootstrap) and, for Spark, a stand-in with PyPI's pyspark laid out as the Spark image lays Spark out.
#   Local bases stay in the image store; KOO_REBUILD_BASE=1 rebuilds them.
# pip inside a build step gets this machine's CA bundle and pip config as build secrets, never in a layer:
#   KOO_PIP_CA (default $PIP_CERT, else $SSL_CERT_FILE when set), KOO_PIP_CONF (default none).
# KOO_BUILDER=docker|podman|buildah picks the tool; KOO_BUILDAH_OPTS the global buildah options (default
# "--storage-driver overlay" where overlay mounts, else "--storage-driver vfs"; `names` prints the choice).
#   scripts/images.sh warm [operator|spark|all]      exit 0 when the build cache is warm (the bases in the store:
#                                                    a build then redoes only the product's layers), else say why
#                                                    on one line and exit 1 (the image tests' gate in CI)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[images] %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

VERSION="$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)"
[ -n "$VERSION" ] || die "no version in pyproject.toml"
SPARK_VERSION="4.1.2"  # the Apache Spark the job image runs on (pyproject: pyspark>=4.1,<5)
SETTING="$(sed -n '/^\[tool\.kafka-offset-operator\.images\]/,/^\[/s/^registry *= *"\(.*\)"/\1/p' pyproject.toml | head -1)"
[ -n "$SETTING" ] || die "no [tool.kafka-offset-operator.images] registry in pyproject.toml"
PUSH_TO=""
if [ "${1:-}" = --push ]; then
    PUSH_TO="${2:-}"; shift 2 || true
    [ -n "$PUSH_TO" ] || die "--push needs REGISTRY/PREFIX, e.g. --push registry.example.com/team"
    PUSH_TO="${PUSH_TO%/}"
fi
REGISTRY="${KOO_IMAGE_REGISTRY:-$SETTING}"
TAG="${KOO_IMAGE_TAG:-$VERSION}"
OPERATOR_IMAGE="${KOO_OPERATOR_IMAGE:-$REGISTRY/kafka-offset-operator:$TAG}"
SPARK_IMAGE="${KOO_SPARK_IMAGE:-$REGISTRY/kafka-offset-operator-spark:$TAG}"
DEFAULT_BASE="docker.io/library/python:3.11-slim-bookworm"
DEFAULT_SPARK_BASE="docker.io/library/spark:$SPARK_VERSION-scala2.13-java17-python3-ubuntu"
LOCAL_BASE="localhost/kafka-offset-operator-base:bookworm"
LOCAL_SPARK_BASE="localhost/kafka-offset-operator-spark-base:$SPARK_VERSION"
DEBIAN_MIRROR="${KOO_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

overlay_works() {  # overlay mounts here (a kernel or container that refuses it gets vfs): a scratch container
    command -v buildah >/dev/null 2>&1 || return 1
    local ctr ok=1
    ctr="$(buildah --storage-driver overlay from scratch 2>/dev/null)" || return 1
    buildah --storage-driver overlay mount "$ctr" >/dev/null 2>&1 && ok=0
    buildah --storage-driver overlay rm "$ctr" >/dev/null 2>&1 || true
    return "$ok"
}

if [ -n "${KOO_BUILDAH_OPTS+set}" ]; then
    read -r -a BUILDAH_OPTS <<<"$KOO_BUILDAH_OPTS"
elif overlay_works; then
    # overlay: a layer is a diff, not a copy of the whole root file system (vfs); with vfs a cold build of the
    # two images took ~25 minutes here, most of it copying roots between steps.
    BUILDAH_OPTS=(--storage-driver overlay)
else
    BUILDAH_OPTS=(--storage-driver vfs)
fi

builder() {
    if [ -n "${KOO_BUILDER:-}" ]; then echo "$KOO_BUILDER"; return; fi
    # The docker client alone is common (these machines have it): only a reachable engine counts.
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then echo docker; return; fi
    if command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then echo podman; return; fi
    if command -v buildah >/dev/null 2>&1; then echo buildah; return; fi
    die "no image builder: install docker, podman or buildah (Debian: apt-get install buildah debootstrap)"
}

BUILDER="$( (builder) 2>/dev/null || true)"  # checked again before a build: `names` needs none

tool() {  # the builder with its global options
    if [ "$BUILDER" = buildah ]; then buildah "${BUILDAH_OPTS[@]}" "$@"; else "$BUILDER" "$@"; fi
}

have_image() {  # in the local store (buildah has no `image inspect`)
    if [ "$BUILDER" = buildah ]; then tool inspect --type image "$1" >/dev/null 2>&1
    else "$BUILDER" image inspect "$1" >/dev/null 2>&1; fi
}

registry_reachable() {  # any HTTP answer from the registry's API root counts (401 included)
    local host="${1%%/*}"
    [ "$host" = docker.io ] && host=registry-1.docker.io
    command -v curl >/dev/null 2>&1 || return 0
    [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "https://$host/v2/" || true)" != 000 ]
}

local_base() {
    if have_image "$LOCAL_BASE" && [ -z "${KOO_REBUILD_BASE:-}" ]; then return; fi
    [ "$BUILDER" = buildah ] || die "the local base is built with buildah (set KOO_BASE_IMAGE to a base you can pull)"
    command -v debootstrap >/dev/null 2>&1 || die "the local base needs debootstrap (apt-get install debootstrap)"
    [ "$(id -u)" = 0 ] || die "the local base needs root (debootstrap into a mounted container)"
    say "building $LOCAL_BASE from Debian bookworm's packages (debootstrap, about a minute)"
    local ctr mnt
    ctr="$(tool from scratch)"
    mnt="$(tool mount "$ctr")"
    # python3-venv: the Containerfiles install into a virtualenv, as they do on python:3.11-slim.
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$mnt" "$DEBIAN_MIRROR" \
        >/dev/null || { tool umount "$ctr"; tool rm "$ctr" >/dev/null; die "debootstrap failed"; }
    rm -rf "$mnt"/var/lib/apt/lists/* "$mnt"/var/cache/apt/*.bin "$mnt"/var/cache/apt/archives/*.deb \
        "$mnt"/usr/share/doc/* "$mnt"/usr/share/man/* "$mnt"/usr/share/locale/* "$mnt"/var/log/*.log
    tool umount "$ctr" >/dev/null
    tool config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
        --cmd /bin/bash --label org.opencontainers.image.description="Debian bookworm minbase with python3 (local)" "$ctr"
    tool commit --quiet --rm "$ctr" "$LOCAL_BASE" >/dev/null
}

local_spark_base() {
    if have_image "$LOCAL_SPARK_BASE" && [ -z "${KOO_REBUILD_BASE:-}" ]; then return; fi
    local_base
    say "building $LOCAL_SPARK_BASE: a stand-in for the Apache Spark Python image (Java 17, PyPI's pyspark $SPARK_VERSION)"
    build images/spark-standin/Containerfile "$LOCAL_SPARK_BASE" --build-arg BASE="$LOCAL_BASE" \
        --build-arg SPARK_VERSION="$SPARK_VERSION"
}

pick_base() {  # $1: the user's choice, $2: the default; prints the base to build FROM ("local" if none pulls)
    local chosen="${1:-}"
    if [ -n "$chosen" ]; then echo "$chosen"; return; fi
    if have_image "$2" || registry_reachable "$2"; then echo "$2"; else echo local; fi
}

secrets=()
pip_secrets() {
    [ -n "$BUILDER" ] || builder >/dev/null  # dies naming what to install
    local ca="${KOO_PIP_CA-${PIP_CERT:-${SSL_CERT_FILE:-}}}" conf="${KOO_PIP_CONF:-}"
    if [ -n "$ca" ]; then [ -f "$ca" ] || die "KOO_PIP_CA: no file $ca"; secrets+=(--secret "id=pip-ca,src=$ca"); fi
    if [ -n "$conf" ]; then [ -f "$conf" ] || die "KOO_PIP_CONF: no file $conf"; secrets+=(--secret "id=pip-conf,src=$conf"); fi
}

inputs_hash() {  # $1 Containerfile, then the build arguments: what the image is made of
    { printf '%s\n' "$@"; cat "$1"
      find pyproject.toml README.md offsets_model operator spark -type f ! -path '*/__pycache__/*' ! -path '*.egg-info/*' \
          -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-32
}

image_label() {  # $1 image, $2 label key
    if [ "$BUILDER" = buildah ]; then
        tool inspect --type image --format "{{index .OCIv1.Config.Labels \"$2\"}}" "$1" 2>/dev/null
    else
        "$BUILDER" image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null
    fi
}

build() {  # $1 Containerfile, $2 tag, then extra arguments
    local file="$1" tag="$2"; shift 2
    local start=$SECONDS hash
    # An image built from the same inputs (sources, Containerfile, arguments) is reused: with vfs storage even
    # a fully cached rebuild costs minutes. KOO_REBUILD=1 builds anyway.
    hash="$(inputs_hash "$file" "$tag" "$@")"
    if [ -z "${KOO_REBUILD:-}" ] && have_image "$tag" && [ "$(image_label "$tag" dev.kafkaoffsets.inputs)" = "$hash" ]; then
        say "$tag is up to date (same inputs)"
        return
    fi
    set -- --label "dev.kafkaoffsets.inputs=$hash" "$@"
    case "$BUILDER" in
        buildah) tool bud --isolation chroot --network host --layers -f "$file" -t "$tag" "${secrets[@]}" "$@" . ;;
        *) "$BUILDER" build -f "$file" -t "$tag" "${secrets[@]}" "$@" . ;;
    esac
    say "built $tag in $((SECONDS - start)) s"
}

build_operator() {
    local base; base="$(pick_base "${KOO_BASE_IMAGE:-}" "$DEFAULT_BASE")"
    if [ "$base" = local ]; then local_base; base="$LOCAL_BASE"; fi
    say "building $OPERATOR_IMAGE FROM $base with $BUILDER"
    build images/operator/Containerfile "$OPERATOR_IMAGE" --build-arg BASE="$base" \
        --build-arg SPARK_IMAGE="$SPARK_IMAGE" --build-arg VERSION="$VERSION"
}

build_spark() {
    local base; base="$(pick_base "${KOO_SPARK_BASE_IMAGE:-}" "$DEFAULT_SPARK_BASE")"
    if [ "$base" = local ]; then local_spark_base; base="$LOCAL_SPARK_BASE"; fi
    say "building $SPARK_IMAGE FROM $base with $BUILDER"
    build images/spark-job/Containerfile "$SPARK_IMAGE" --build-arg BASE="$base" --build-arg VERSION="$VERSION"
}

push() {  # $1 the local image, $2 the reference to push it as
    local start=$SECONDS
    case "$BUILDER" in
        buildah) tool push --tls-verify="${KOO_PUSH_TLS_VERIFY:-true}" "$1" "docker://$2" ;;
        podman) podman tag "$1" "$2" && podman push --tls-verify="${KOO_PUSH_TLS_VERIFY:-true}" "$2" ;;
        *) "$BUILDER" tag "$1" "$2" && "$BUILDER" push "$2" ;;
    esac
    say "pushed $2 in $((SECONDS - start)) s"
}

pushed_name() {  # $1 a built reference: the same name and tag under PUSH_TO
    local last="${1##*/}"
    echo "$PUSH_TO/$last"
}

[ "${1:-}" = build ] && shift
if [ -n "$PUSH_TO" ]; then
    which="${1:-all}"
    case "$which" in operator|spark|all) ;; *) die "usage: scripts/images.sh --push REGISTRY/PREFIX [operator|spark|all]" ;; esac
    if [ -n "${KOO_NO_BUILD:-}" ]; then  # push what the store holds under these names, build nothing
        [ -n "$BUILDER" ] || builder >/dev/null
        for image in $([ "$which" != spark ] && echo "$OPERATOR_IMAGE") $([ "$which" != operator ] && echo "$SPARK_IMAGE"); do
            have_image "$image" || die "KOO_NO_BUILD: no image $image in the store"
        done
    else
        pip_secrets
    fi
    if [ "$which" != spark ]; then
        [ -n "${KOO_NO_BUILD:-}" ] || build_operator
        push "$OPERATOR_IMAGE" "$(pushed_name "$OPERATOR_IMAGE")"
    fi
    if [ "$which" != operator ]; then
        [ -n "${KOO_NO_BUILD:-}" ] || build_spark
        push "$SPARK_IMAGE" "$(pushed_name "$SPARK_IMAGE")"
    fi
    if [ "$PUSH_TO" != "$REGISTRY" ]; then
        say "install them with registry \"$PUSH_TO\": pyproject.toml [tool.kafka-offset-operator.images] then" \
            "scripts/dev.sh generate (kustomize), or helm --set image.registry=$PUSH_TO (docs/images.md)"
    fi
    exit 0
fi
case "${1:-all}" in
    names)
        printf 'OPERATOR_IMAGE=%s\nSPARK_IMAGE=%s\nVERSION=%s\nSPARK_VERSION=%s\nBUILDER=%s\nBUILDAH_OPTS=%s\n' \
            "$OPERATOR_IMAGE" "$SPARK_IMAGE" "$VERSION" "$SPARK_VERSION" "${BUILDER:-none}" "${BUILDAH_OPTS[*]}"
        ;;
    warm)
        [ -n "$BUILDER" ] || { echo "no image builder (docker, podman or buildah)"; exit 1; }
        which="${2:-all}"
        cold=()
        has_base() {  # $1 the user's choice, $2 the default, $3 the local one: no registry is asked
            case "${1:-}" in
                local) have_image "$3" ;;
                "") have_image "$2" || have_image "$3" ;;
                *) have_image "$1" ;;
            esac
        }
        if [ "$which" != spark ] && ! has_base "${KOO_BASE_IMAGE:-}" "$DEFAULT_BASE" "$LOCAL_BASE"; then
            cold+=("${KOO_BASE_IMAGE:-$LOCAL_BASE}")
        fi
        if [ "$which" != operator ] && ! has_base "${KOO_SPARK_BASE_IMAGE:-}" "$DEFAULT_SPARK_BASE" "$LOCAL_SPARK_BASE"; then
            cold+=("${KOO_SPARK_BASE_IMAGE:-$LOCAL_SPARK_BASE}")
        fi
        if [ "${#cold[@]}" -gt 0 ]; then
            echo "the image build cache is cold (no ${cold[*]} in the ${BUILDAH_OPTS[*]} store): scripts/dev.sh images builds it once"
            exit 1
        fi
        ;;
    base) pip_secrets; local_base; local_spark_base ;;
    operator) pip_secrets; build_operator ;;
    spark) pip_secrets; build_spark ;;
    all) pip_secrets; build_operator; build_spark ;;
    *) echo "usage: scripts/images.sh [build] [operator|spark|all] | --push REGISTRY/PREFIX [operator|spark|all] | names | base | warm [operator|spark|all]" >&2; exit 2 ;;
esac
