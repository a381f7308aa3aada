"""The Local engine's child process: a warm PySpark local session that runs analyses on request.

    python -m kafka_offset_operator.engines.local_worker

The operator writes one JSON request per line on stdin and reads one `KOO-RESULT {json}` line per request
on stdout (anything else on stdout, e.g. from the JVM, is ignored). Requests carry Kafka credentials, so
they travel only through this pipe: never on a command line, in the environment or on disk (TLS material
excepted: the operator writes it to a private 0700 directory, as for its own Kafka client).

Each request is one scan for one or more policies (its `members`, issue 12: policies of the same cluster and
credentials share it): offset_expiry.analysis.prepare, then execute_many, and each member's report is
written atomically to its own path. The session is kept between requests: Spark's start (10-20 s) is paid
once per worker, not per run. A worker that dies (or is killed to cancel a run) is simply started again.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

RESULT = "KOO-RESULT "


def _answer(out: TextIO, run_id: str, ok: bool, kind: str = "", message: str = "",
            members: dict[str, dict[str, Any]] | None = None) -> None:
    answer: dict[str, Any] = {"runId": run_id, "ok": ok, "kind": kind, "message": message}
    if members is not None:
        answer["members"] = members
    out.write(RESULT + json.dumps(answer) + "\n")
    out.flush()


def handle(request: dict[str, Any], session: list[Any], out: TextIO) -> None:
    """One scan for the request's `members` (one or more policies of the same cluster and credentials, issue
    12): each member's report goes to its own `results` path, and the answer says per member whether it
    has one. A failure of the scan itself (Kafka, Spark) fails every member; a member's bad policy fails it
    alone."""
    from kafka_offsets_model.errors import InputError, SpecError
    from kafka_offsets_model.policy import parse_policy
    from offset_expiry.analysis import AnalysisRequest, execute_many, prepare
    from offset_expiry.output import spark_failure_message
    from offset_expiry.pipeline import PolicyRun
    from offset_expiry.report import write_json_atomically
    from offset_expiry.session import JavaMissing, local_session

    run_id = str(request.get("runId", ""))
    answers: dict[str, dict[str, Any]] = {}
    runs: list[tuple[dict[str, Any], Any]] = []
    for member in request.get("members") or ():
        try:
            runs.append((member, parse_policy(member.get("policy") or {})))
        except (InputError, SpecError) as exc:
            answers[str(member.get("memberId"))] = {"ok": False, "kind": "input", "message": str(exc)}
    try:
        if runs:
            analysis_request = AnalysisRequest(
                bootstrap_servers=request["bootstrapServers"],
                now_ms=request.get("nowMs"),
                retention_ms=request.get("retentionMs"),
                client_settings=dict(request.get("clientSettings") or {}),
            )
            prepared = prepare(analysis_request)
            if not session:
                session.append(local_session("kafka-offset-operator-local",
                                             shuffle_partitions=request.get("shufflePartitions")))
            policy_runs = [PolicyRun(policy, prepared.retention_ms if member.get("retentionMs") is None
                                     else int(member["retentionMs"])) for member, policy in runs]
            for (member, _), analysis in zip(runs, execute_many(session[0], prepared, policy_runs), strict=True):
                write_json_atomically(member["results"], analysis.as_json_report())
                answers[str(member.get("memberId"))] = {"ok": True}
    except (InputError, SpecError) as exc:
        _answer(out, run_id, False, "input", str(exc), answers)
    except JavaMissing as exc:
        _answer(out, run_id, False, "setup", str(exc), answers)
    except Exception as exc:  # a Spark failure: reduced to one line
        _answer(out, run_id, False, "spark", spark_failure_message(exc), answers)
    else:
        _answer(out, run_id, True, members=answers)


def main() -> int:
    out = sys.stdout
    session: list[Any] = []
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            _answer(out, "", False, "input", "the request is not JSON")
            continue
        handle(request, session, out)
    for spark in session:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
