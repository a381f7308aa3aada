"""Several policies on one scan (issue 12): each policy's report from `analyze_facts_many` is the report the
plain-Python reference gives that policy alone, summary and every row, with different group patterns,
protections, rules and broker retentions in the same run. No broker: the records reach Spark from memory
(spark_pipeline.raw_frame)."""

from __future__ import annotations

import pytest
from analysis_reference import analyze_records
from pyspark.sql import SparkSession
from spark_pipeline import raw_frame, results_as_dicts

from kafka_offsets_model.policy import parse_policy
from kafka_sandbox.synthetic import DAY_MS, generate
from offset_expiry.pipeline import PolicyRun, analyze_facts_many, compact, decode

pytestmark = pytest.mark.slow  # Spark

POLICIES = [
    PolicyRun(parse_policy({"groups": {"include": ["classic-*"]}, "rules": {"emptyGroupRetention": "1d"}}), 7 * DAY_MS),
    PolicyRun(parse_policy({"groups": {"exclude": ["simple-1*"]},
                            "rules": {"standaloneRetention": "2d", "deletedTopics": "Delete"},
                            "protect": {"groups": ["billing-*", "classic-1*"]}}), 3 * DAY_MS),
    PolicyRun(parse_policy({"rules": {"emptyGroupRetention": "5d", "unsubscribedTopicRetention": "12h"}}), DAY_MS),
]


def test_each_policy_gets_its_solo_report(spark: SparkSession) -> None:
    topic = generate(20261125, groups=60, partitions=3, topic_partitions=3, commits=2, corrupt_fraction=0.01)
    facts = decode(compact(raw_frame(spark, topic.records)))
    reports = analyze_facts_many(facts, POLICIES, now_ms=topic.now_ms, existing_topics=topic.existing_topics,
                                 snapshot={0: 9})
    assert len(reports) == len(POLICIES)
    candidates = []
    for run, got in zip(POLICIES, reports, strict=True):
        expected = analyze_records(topic.records, policy=run.policy, now_ms=topic.now_ms, retention_ms=run.retention_ms,
                                   existing_topics=topic.existing_topics, snapshot={0: 9})
        assert got["summary"] == expected["summary"]
        assert list(results_as_dicts(got["offsets"])) == expected["offsets"]
        candidates.append(expected["summary"]["candidates"])
    assert len(set(candidates)) == len(POLICIES), candidates  # the policies really differ
