"""The real API server's audit log as the operator tests read it (tests/support/audit_log.py): one call per
request (a watch's two stages are one call), the user's only, from where the reader began, with the
authorizer's decision and the body of a logged write. The events are shaped as kube-apiserver writes them
(audit.k8s.io/v1 Event, one JSON object a line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audit_log import AuditLog

OPERATOR = "system:serviceaccount:kafka-offset-operator:kafka-offset-operator"


def event(audit_id: str, verb: str, resource: str, name: str = "", *, user: str = OPERATOR, stage: str = "ResponseComplete",
          subresource: str = "", group: str = "apps", code: int = 200, decision: str = "allow",
          received: str = "2026-11-27T21:50:00.000001Z", answered: str = "2026-11-27T21:50:00.000900Z",
          body: Any = None) -> dict[str, Any]:
    ref: dict[str, str] = {"resource": resource, "namespace": "t-1", "apiVersion": "v1"}
    if name:
        ref["name"] = name
    if subresource:
        ref["subresource"] = subresource
    if group:
        ref["apiGroup"] = group
    out: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": audit_id, "stage": stage,
        "verb": verb, "user": {"username": user, "groups": ["system:serviceaccounts"]}, "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": code}, "requestReceivedTimestamp": received,
        "stageTimestamp": answered, "annotations": {"authorization.k8s.io/decision": decision}}
    if body is not None:
        out["requestObject"] = body
    return out


def write(path: Path, *events: dict[str, Any]) -> None:
    with path.open("a") as log:
        for e in events:
            log.write(json.dumps(e) + "\n")


def test_calls_are_the_users_own_one_per_request_in_arrival_order(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    write(log, event("before", "get", "deployments", "api", subresource="scale"))
    audit = AuditLog(log, OPERATOR)  # begins at the log's end: the earlier call is not this reader's
    write(log,
          event("w", "watch", "offsetresets", group="kafkaoffsets.dev", stage="ResponseStarted", code=0,
                received="2026-11-27T21:50:01.000000Z"),
          event("p", "patch", "deployments", "api", subresource="scale", received="2026-11-27T21:50:03.000000Z"),
          event("x", "get", "secrets", "s", user="admin", group=""),
          event("s", "patch", "offsetresets", "r", subresource="status", group="kafkaoffsets.dev",
                received="2026-11-27T21:50:02.000000Z", body={"status": {"pausedWorkloads": []}}),
          event("w", "watch", "offsetresets", group="kafkaoffsets.dev", received="2026-11-27T21:50:01.000000Z",
                answered="2026-11-27T21:55:00.000000Z"))
    calls = audit.calls()
    assert [(c.verb, c.resource_path) for c in calls] == [
        ("watch", "offsetresets"), ("patch", "offsetresets/status"), ("patch", "deployments/scale")]
    assert calls[0].answered.minute == 55  # the watch's last stage replaces its first
    assert calls[1].body == {"status": {"pausedWorkloads": []}} and calls[2].body is None
    assert calls[1].answered < calls[2].received


def test_a_refused_call_carries_the_authorizers_answer_and_a_partial_line_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text("")
    audit = AuditLog(log, OPERATOR)
    write(log, event("f", "get", "deployments", "locked", subresource="scale", code=403, decision="forbid"))
    with log.open("a") as partial:
        partial.write('{"kind": "Event", "auditID": "half')
    [refused] = audit.wait(lambda c: c.name == "locked", what="the refused call", timeout=1)
    assert (refused.code, refused.decision, refused.group, refused.namespace) == (403, "forbid", "apps", "t-1")


def test_a_log_not_yet_written_has_no_calls(tmp_path: Path) -> None:
    assert AuditLog(tmp_path / "audit.log", OPERATOR).calls() == []
