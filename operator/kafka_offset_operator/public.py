"""The operator's public face for programs that embed it, the demo first (docs/architecture.md): run it in a
thread, call its CLI, reach Kubernetes and Kafka the way it does, read its resources' names and conditions,
write the CRDs. An import-linter contract lets no other package import the operator's internals: what is
not here may change without notice."""

from __future__ import annotations

from .adapters.kafka_admin import KafkaAdmin
from .adapters.kube import Kube, NotFound, load_config
from .cli import main as run_cli
from .context import OperatorOptions
from .decisions.conditions import find as find_condition
from .decisions.status_patch import merge_patch
from .engines.local import shared_engine
from .model.api import (
    API_VERSION,
    BACKUPS_SELECTOR,
    DELETIONS,
    GROUP,
    POLICIES,
    POLICY_KIND,
    POLICY_LABEL,
    VERSION,
)
from .model.connection import ConnectionSettings
from .model.crds import build_crds, kopf_peering_crd
from .model.times import iso, now_iso, parse_iso
from .runtime import run_operator

__all__ = [
    "API_VERSION",
    "BACKUPS_SELECTOR",
    "DELETIONS",
    "GROUP",
    "POLICIES",
    "POLICY_KIND",
    "POLICY_LABEL",
    "VERSION",
    "ConnectionSettings",
    "KafkaAdmin",
    "Kube",
    "NotFound",
    "OperatorOptions",
    "build_crds",
    "find_condition",
    "iso",
    "kopf_peering_crd",
    "load_config",
    "merge_patch",
    "now_iso",
    "parse_iso",
    "run_cli",
    "run_operator",
    "shared_engine",
]
