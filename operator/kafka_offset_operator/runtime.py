"""Assembling and running the operator under Kopf: settings, login, handler registration.

`run_operator` is what both `kafka-offset-operator run` and the integration tests call, so the tests run
the same operator the Deployment runs (in a thread with its own event loop instead of a process).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf
import kubernetes.client

from .adapters.kube import Kube, KubeError, NotFound, load_config
from .context import OperatorContext, OperatorOptions
from .decisions.peering import priority_for_start
from .errors import UserError
from .handlers import backups, consumer_group_offset_policy, offset_deletion, offset_reset
from .model.api import CLUSTER_PEERINGS, PEERING_GROUP, PEERING_KIND, PEERING_VERSION
from .reconcilers.policy_scheduler import SHARED_VISITS

Registrar = Callable[[kopf.OperatorRegistry, OperatorContext], None]

log = logging.getLogger(__name__)

# Loggers that may print connection settings (kafka-python logs its whole config at DEBUG, SASL password
# included): never below INFO, whatever the operator's verbosity; and at WARNING unless it is verbose, with
# Kopf's per-handler "succeeded" lines, so the log says what the operator did (the audit lines), not how
# often it connected.
SECRET_LOGGERS = ("kafka", "kubernetes", "urllib3")
CHATTY_LOGGERS = (*SECRET_LOGGERS, "kopf.objects")


# The handlers of a production operator: each module's `register` adds its handlers to a registry.
REGISTRARS: tuple[Registrar, ...] = (offset_deletion.register, offset_reset.register, consumer_group_offset_policy.register,
                                     backups.register)


def build_settings(options: OperatorOptions, started_ms: int | None = None) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    # Only our own explicit events and warnings become Kubernetes Events, not Kopf's per-handler chatter.
    settings.posting.level = logging.WARNING
    if options.peering is None:
        settings.peering.standalone = True  # one process by construction (a test, the demo, --standalone)
    else:
        # One actor at a time (docs/operator.md): mandatory, so a process starts paused and acts only once it
        # has seen the peering object and no live peer above it; cluster-wide whatever namespaces it serves,
        # so a namespaced process and a cluster-wide one of the same installation see each other.
        settings.peering.standalone = False
        settings.peering.mandatory = True
        settings.peering.clusterwide = True
        settings.peering.name = options.peering
        settings.peering.lifetime = options.peering_lifetime_s
        settings.peering.priority = (options.peering_priority if options.peering_priority is not None else
                                     priority_for_start(started_ms if started_ms is not None else _now_ms()))
        settings.peering.stealth = True  # keep-alives are not news
    # Kopf keeps its bookkeeping in annotations: a structural status schema would prune status.kopf.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    settings.watching.server_timeout = 300
    settings.execution.max_workers = kopf_threads(options)
    return settings


def kopf_threads(options: OperatorOptions) -> int:
    """Kopf's thread pool for sync handlers: wide enough for the Kafka limit (context.kafka_gate) to be the
    bound, not the pool (Python's default is 6 threads on 2 cores)."""
    return max(options.kafka_concurrency + 4, 8)


def api_client_config(options: OperatorOptions) -> kubernetes.client.Configuration:
    """The Kubernetes client's configuration, with a connection pool as wide as the threads that call it at
    once (Kopf's pool and the policies' shared visits): urllib3 keeps 10 by default, so under load a thousand
    OffsetDeletions opened and dropped connections with a "Connection pool is full" warning each
    (docs/performance.md, many policies)."""
    config = load_config(options.kubeconfig)
    config.connection_pool_maxsize = kopf_threads(options) + SHARED_VISITS
    return config


def build_registry(ctx: OperatorContext, registrars: list[Registrar] | None = None) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(ctx.kube)

    if ctx.options.peering is not None:
        @kopf.on.startup(registry=registry)
        def peer_cluster_wide(settings: kopf.OperatorSettings, **_: Any) -> None:
            """kopf.operator() sets the peering's scope from the operator's (namespaced: a KopfPeering per
            namespace); ours is one cluster-wide object whatever the namespaces (build_settings says why)."""
            settings.peering.clusterwide = True

    for register in REGISTRARS if registrars is None else registrars:
        register(registry, ctx)
    return registry


def connection_info(kube: Kube) -> kopf.ConnectionInfo:
    """Kopf's connection from the same configuration our own client uses (one source of truth)."""
    config = kube.config
    header = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix("authorization")
    parts = header.split(" ", 1) if header else []
    scheme, token = (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        scheme=scheme,
        token=token,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


def quiet_loggers() -> None:
    verbose = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in CHATTY_LOGGERS:
        if verbose and name not in SECRET_LOGGERS:
            continue
        logger = logging.getLogger(name)
        floor = logging.INFO if verbose else logging.WARNING
        if logger.getEffectiveLevel() < floor:
            logger.setLevel(floor)


def _now_ms() -> int:
    return int(time.time() * 1000)


def ensure_peering(kube: Kube, name: str) -> bool:
    """Create the ClusterKopfPeering object `name` unless it exists (True: created). Kopf expects it to be
    there: with mandatory peering and no object, a process would wait, paused, for ever."""
    body = {"apiVersion": f"{PEERING_GROUP}/{PEERING_VERSION}", "kind": PEERING_KIND, "metadata": {"name": name}}
    try:
        created = kube.create_cluster_object(PEERING_GROUP, PEERING_VERSION, CLUSTER_PEERINGS, body)
    except NotFound:
        raise UserError(f"peering: the API does not serve {PEERING_KIND} ({CLUSTER_PEERINGS}.{PEERING_GROUP}): install "
                        "its CRD (crds/clusterkopfpeerings.kopf.dev.yaml, or the Helm chart), or pass "
                        "--standalone if this is the only operator process") from None
    except KubeError as exc:
        raise UserError(f"peering: cannot create {PEERING_KIND} {name!r}: {exc}") from None
    if created:
        log.info("created %s %s for peering", PEERING_KIND, name)
    return created


async def run_operator(
    options: OperatorOptions,
    *,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
    registrars: list[Registrar] | None = None,
) -> None:
    """Run until `stop_flag` is set (or forever). Kopf handles signals when run from the main thread."""
    if not options.clusterwide and not options.namespaces:
        raise ValueError("give namespaces or clusterwide=True")
    quiet_loggers()
    kube = Kube(api_client_config(options))
    ctx = OperatorContext(options, kube)
    try:
        if options.peering is not None:
            await asyncio.to_thread(ensure_peering, kube, options.peering)
        await kopf.operator(
            registry=build_registry(ctx, registrars),
            settings=build_settings(options),
            clusterwide=options.clusterwide,
            namespaces=list(options.namespaces),
            liveness_endpoint=options.liveness_endpoint,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    finally:
        kube.close()
