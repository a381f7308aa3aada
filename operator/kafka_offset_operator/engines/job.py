"""What the analysis engines share: one run's inputs, how it is cancelled, and how it fails."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..decisions.policy_spec import PolicySpec
from ..model.connection import ConnectionSettings
from ..model.reasons import Reason


class CancelFlag(Protocol):
    """threading.Event, or Kopf's daemon `stopped` flag."""

    def is_set(self) -> bool: ...


class AnalysisFailed(Exception):
    """An analysis that did not produce a report. `reason` is the status condition's reason."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class AnalysisCancelled(Exception):
    """The run was cancelled (its policy was deleted or the operator is stopping)."""


@dataclass(frozen=True)
class Job:
    """One analysis run of one policy."""

    policy_body: Mapping[str, Any]
    spec: PolicySpec
    settings: ConnectionSettings
    retention_ms: int
    # Scan sharing (issue 12, decisions/scan_sharing.py): the key of the cluster and credentials (None: this
    # run scans alone), and how long it waits for other policies' runs to join its scan.
    share_key: str | None = None
    share_window_ms: int = 0


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]


def client_settings(settings: ConnectionSettings, tls_paths: Mapping[str, str]) -> dict[str, str]:
    """kafka-python settings for the analysis' own clients (secrets included: for the worker's stdin only)."""
    out = {"security_protocol": settings.security_protocol}
    if settings.sasl_mechanism:
        out["sasl_mechanism"] = settings.sasl_mechanism
        out["sasl_plain_username"] = settings.username or ""
        out["sasl_plain_password"] = str.__str__(settings.password) if settings.password else ""
    out.update(tls_paths)
    return out
