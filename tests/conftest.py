"""Fixtures every test folder shares: the sandbox broker, Apache Kafka (`kafka`) and the local Spark session.

Folder conftests add only what is theirs (the emulated Kubernetes API and operators in
integration/operator, kcat in integration/sandbox). Helpers tests import are in tests/support.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from brokers import sandbox_broker
from kafka_under_test import Kafka, clean_after, kafka_for_session
from real_kafka import versions_under_test

from kafka_sandbox import SandboxBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The real Kubernetes control plane's fixtures (real_cluster, real_namespace, real_crds): tests/support/kube_fixtures.py;
# the test tiers (`unit` and its guard against sockets, processes and sleeps): tests/support/tiers.py; the
# longest files first for the parallel workers: tests/support/file_order.py.
pytest_plugins = ["kube_fixtures", "tiers", "file_order"]

# Every Spark driver JVM the suite starts (the `spark` fixture, the CLI, the Local engine, `spark-submit job.py`:
# Spark's launcher adds SPARK_SUBMIT_OPTS to each) runs with the C1 compiler only and the serial collector: the
# suite's runs are small, where C2's compilations and G1's threads cost a cold run about a third of its JVM CPU
# and gain nothing (issue 22, docs/performance.md). Results do not depend on it; the product's default stays the
# JVM's own (C2 pays off on large topics).
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> Iterator[SandboxBroker]:
    """A fresh sandbox broker per test (it starts in milliseconds) with the defaults of brokers.DEFAULTS;
    a test changes them with the `broker` marker: `@pytest.mark.broker(offsets_partitions=1)`."""
    marker = request.node.get_closest_marker("broker")
    with sandbox_broker(**(marker.kwargs if marker else {})) as b:
        yield b


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session for the whole run (it takes 10-20 s to start); tests using it are `slow`."""
    from offset_expiry.session import local_session  # imported late: the fast suite never loads pyspark

    session = local_session("offset-expiry-tests", cores=2, shuffle_partitions=4)
    yield session
    session.stop()


@pytest.fixture(scope="session", params=versions_under_test())
def real_kafka(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kafka]:
    """Apache Kafka (or the sandbox) shared by the session, one per version in KOO_KAFKA_VERSIONS
    (tests/support/real_kafka.py); skipped with the reason when java or mvn is missing."""
    with kafka_for_session(request.param, tmp_path_factory) as k:
        yield k


@pytest.fixture
def kafka(real_kafka: Kafka) -> Iterator[Kafka]:
    """The session's broker, emptied of groups and topics after the test (kafka_under_test.clean)."""
    with clean_after(real_kafka) as k:
        yield k
