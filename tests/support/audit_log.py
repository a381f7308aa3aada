"""What an operator asked the real kube-apiserver, read from its audit log (ControlPlane(audit=True): every
request of a service account, AUDIT_POLICY in kafka_offset_demo/control_plane.py). The real API server's
counterpart of the emulator's request log: each call's verb, resource, subresource, name, when it arrived and
was answered, what the authorizer decided, and, for writes to kafkaoffsets.dev objects, the body sent.

The log is written while a request is served, so a test that has just seen an effect polls for the call
(`AuditLog.wait`) before it counts calls."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube_cluster import ControlPlane
from waiting import wait_until


@dataclass(frozen=True)
class Call:
    """One request, as its audit event (stage ResponseComplete, or ResponseStarted for a watch still open)
    records it."""

    user: str
    verb: str  # RBAC's: get, list, watch, create, update, patch, delete
    group: str  # "" for the core group
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int  # the HTTP status answered (0 while a watch is open)
    decision: str  # the authorizer's: "allow" or "forbid"
    received: datetime.datetime
    answered: datetime.datetime
    body: Any  # the request's object for Request-level events (a patch: the patch), else None

    @property
    def resource_path(self) -> str:
        """resource or resource/subresource, as RBAC names it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class AuditLog:
    """The calls `user` sent from now on (the log's end when made: a module's or a test's calls only, and
    each read parses only what was written since)."""

    def __init__(self, path: Path, user: str) -> None:
        self.path = path
        self.user = user
        self.start = path.stat().st_size if path.exists() else 0

    @classmethod
    def of(cls, plane: ControlPlane, user: str) -> AuditLog:
        assert plane.audit_log is not None, "this control plane keeps no audit log"
        return cls(plane.audit_log, user)

    def calls(self, where: Callable[[Call], bool] = lambda c: True) -> list[Call]:
        """The resource requests for which `where` holds, in the order the API server received them; one per
        request."""
        if not self.path.exists():
            return []
        found: dict[str, Call] = {}
        with self.path.open("rb") as log:
            log.seek(self.start)
            for line in log:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line being written
                ref = event.get("objectRef")
                if event.get("user", {}).get("username") != self.user or not ref:
                    continue
                call = Call(self.user, event["verb"], ref.get("apiGroup", ""), ref.get("resource", ""),
                            ref.get("subresource", ""), ref.get("namespace", ""), ref.get("name", ""),
                            int((event.get("responseStatus") or {}).get("code") or 0),
                            (event.get("annotations") or {}).get("authorization.k8s.io/decision", ""),
                            _time(event["requestReceivedTimestamp"]), _time(event["stageTimestamp"]),
                            event.get("requestObject"))
                if event.get("stage") == "ResponseComplete" or event["auditID"] not in found:
                    found[event["auditID"]] = call
        return sorted((c for c in found.values() if where(c)), key=lambda c: c.received)

    def wait(self, where: Callable[[Call], bool], at_least: int = 1, what: str = "the calls in the audit log",
             timeout: float = 30.0) -> list[Call]:
        """calls(where) once there are at least `at_least` of them."""
        def enough() -> list[Call] | None:
            found = self.calls(where)
            return found if len(found) >= at_least else None

        return wait_until(enough, timeout, what, interval=0.2)
