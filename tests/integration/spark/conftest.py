"""One local Spark session for all Spark tests (it takes 10-20 s to start), and sandbox brokers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from offset_expiry.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("offset-expiry-tests", cores=2, shuffle_partitions=4)
    yield session
    session.stop()
