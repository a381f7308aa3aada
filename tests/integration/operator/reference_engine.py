"""The plain-Python reference analysis (tests/support/analysis_reference.py: the Spark job's test oracle,
same rules) in place of the operator's engine, for policy tests whose point is what follows an analysis
(proposals, approvals, conditions), not Spark: it reads the broker's whole __consumer_offsets over the wire,
as the engines do, and costs a second where a Local run costs a Spark start."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from analysis_reference import analyze_records
from kafka import KafkaAdminClient

from kafka_offset_operator.adapters.offsets_topic import OffsetsTopicReader
from kafka_offset_operator.engines.job import CancelFlag, Job
from kafka_offset_operator.model.report import Report, from_rows
from kafka_offset_operator.reconcilers import policy_visit
from kafka_offsets_model.policy import parse_policy
from kafka_offsets_model.raw import RawRecord


def reference_report(bootstrap: str, spec: Any, retention_ms: int, later_ms: int = 0) -> Report:
    """The analysis of `spec` over the broker's __consumer_offsets as of the wall clock plus `later_ms`, with
    the topics the broker's metadata lists (what tells a deleted topic), as the operator reads a report."""
    with OffsetsTopicReader(bootstrap) as reader:
        records = [RawRecord(r.partition, r.offset, r.timestamp, r.key, r.value)
                   for r in reader.records(None, from_beginning=True, follow=False)]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        topics = set(admin.list_topics())
    finally:
        admin.close()
    report = analyze_records(records, parse_policy(spec), now_ms=int(time.time() * 1000) + later_ms,
                             retention_ms=retention_ms, existing_topics=topics)
    return from_rows(report["summary"], report["offsets"])


@contextmanager
def reference_engine(bootstrap: str) -> Iterator[None]:
    """While the block runs, every policy run of an in-process operator is the reference analysis of the
    broker at `bootstrap` (whatever the policy's engine says: its status still names that engine)."""
    def analysis(job: Job, cancel: CancelFlag, *engines: Any) -> Report:
        return reference_report(bootstrap, job.spec.analysis_spec, job.retention_ms)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy_visit, "run_analysis", analysis)
        yield
