"""What one operator process runs with, shared by its handlers and reconcilers: options and the Kubernetes
client."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .adapters.kube import Kube


@dataclass(frozen=True)
class OperatorOptions:
    """How one operator process runs."""

    namespaces: tuple[str, ...] = ()
    clusterwide: bool = False
    kubeconfig: Path | None = None  # None: in-cluster service account, else KUBECONFIG / ~/.kube/config
    liveness_endpoint: str | None = None  # e.g. http://0.0.0.0:8080/healthz
    retry_interval: float = 30.0  # seconds between attempts at unfinished work (Kafka down, group busy)
    kafka_timeout_ms: int = 10_000  # per Kafka request and for the first connection
    large_backup_partitions: int = 1000  # above this, the status refers to the stored backup without a copy
    backup_retention_s: float = 30 * 86_400.0  # how long the backup store keeps a backup
    backup_sweep_interval_s: float = 3600.0  # how often expired backups are looked for
    spark_image: str | None = None  # the SparkApplication engine's default image (else the environment's)
    # One actor at a time (Kopf's peering, docs/operator.md): the ClusterKopfPeering object this process
    # shares with every other process that must not act beside it; None runs standalone (no peering).
    peering: str | None = None
    peering_priority: int | None = None  # None: from the start time, the oldest live process acts
    peering_lifetime_s: int = 60  # a silent peer counts as alive this long: the takeover time after a crash


@dataclass
class OperatorContext:
    """What handlers share: options and the Kubernetes client."""

    options: OperatorOptions
    kube: Kube
