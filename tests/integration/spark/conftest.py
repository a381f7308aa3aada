"""The Spark suites' seeded Apache Kafka (tests/support/seeded_kafka.py)."""

from __future__ import annotations

from seeded_kafka import seeded_kafka

__all__ = ["seeded_kafka"]
