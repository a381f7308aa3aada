"""What one operator process runs with, shared by its handlers and reconcilers: options and the Kubernetes
client."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from .adapters.kube import Kube
from .decisions.policy_spec import Engine


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
    spark_image: str | None = None  # the Job and SparkApplication engines' default image (else the environment's)
    # The engine of a policy whose spec.analysis.engine is unset (`run --default-engine`; the install sets Job).
    default_engine: Engine = Engine.LOCAL
    # Policies of one cluster (and the same credentials; with the SparkApplication engine also one namespace and
    # one application shape) whose runs start within this many seconds share one scan of __consumer_offsets
    # (issue 12, decisions/scan_sharing.py); None: each scans alone, one policy visit at a time (as before sharing).
    scan_share_window_s: float | None = 5.0
    kafka_concurrency: int = 8  # OffsetDeletions and policy re-checks talking to Kafka at once
    # One actor at a time (Kopf's peering, docs/operator.md): the ClusterKopfPeering object this process
    # shares with every other process that must not act beside it; None runs standalone (no peering).
    peering: str | None = None
    peering_priority: int | None = None  # None: from the start time, the oldest live process acts
    peering_lifetime_s: int = 60  # a silent peer counts as alive this long: the takeover time after a crash
    # Who this operator is to the API server (request.userInfo.username): written into its proposals'
    # spec.requestedBy, and spec.approvedBy where Auto mode approves. None: left out.
    user: str | None = None
    # The install ships the ValidatingAdmissionPolicy that verifies spec.approvedBy (model/admission.py): an
    # approval without approvedBy was not verified, so nothing is done for it (decisions/approval.py).
    approvals_verified: bool = False


@dataclass
class OperatorContext:
    """What handlers share: options and the Kubernetes client."""

    options: OperatorOptions
    kube: Kube
    # Held while an OffsetDeletion's or OffsetReset's visit, or a policy's re-check of one group, talks to
    # Kafka: at most options.kafka_concurrency at once in this process, however many objects are due.
    kafka_gate: threading.BoundedSemaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.kafka_gate = threading.BoundedSemaphore(max(1, self.options.kafka_concurrency))
