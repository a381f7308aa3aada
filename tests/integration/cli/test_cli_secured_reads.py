"""`dump` and `analyze` with `--command-config` over the wire: the sandbox broker speaking SASL_PLAINTEXT
with SCRAM-SHA-256, reached with the properties file Kafka's tools take. The group's commit is made with
kafka-python's own client, configured directly. A refused password is one line, and never printed."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafka_offset_operator import cli
from kafka_sandbox import SandboxBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

USER = "svc-read"
PASSWORD = "Rt6-scram-never-printed-1Vb"
WRONG = "Rt6-wrong-never-printed-7Qe"
MECHANISM = "SCRAM-SHA-256"


@pytest.fixture
def scram_broker() -> Iterator[SandboxBroker]:
    with SandboxBroker(offsets_partitions=2, offsets_retention="7d", security_protocol="SASL_PLAINTEXT",
                       sasl_users={USER: PASSWORD}, sasl_mechanisms=[MECHANISM]) as broker:
        broker.create_topic("orders", 1)
        broker.append_records("orders", 0, [(None, b"r", 1_700_000_000_000) for _ in range(10)])
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism=MECHANISM, sasl_plain_username=USER, sasl_plain_password=PASSWORD)
        try:
            admin.alter_group_offsets("billing", {TopicPartition("orders", 0): OffsetAndMetadata(4, "", -1)})
        finally:
            admin.close()
        yield broker


def properties(path: Path, password: str = PASSWORD) -> Path:
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={MECHANISM}\nsasl.jaas.config="
                    f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" '
                    f'password="{password}";\n')
    return path


def test_dump_over_sasl_scram(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
                              scram_broker: SandboxBroker, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG)
    code = cli.main(["dump", "--bootstrap-server", scram_broker.bootstrap_servers, "--command-config",
                     str(properties(tmp_path / "client.properties")), "--group", "billing", "--from-beginning",
                     "--no-follow"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    records = [json.loads(line) for line in out.splitlines()]
    commits = [r for r in records if r["key"].get("topic") == "orders"]
    assert [c["value"]["offset"] for c in commits] == [4], records
    assert PASSWORD not in out + err + caplog.text


def test_a_refused_password_is_one_line_for_dump_and_analyze(capsys: pytest.CaptureFixture[str],
                                                             scram_broker: SandboxBroker, tmp_path: Path) -> None:
    config = str(properties(tmp_path / "client.properties", WRONG))
    for argv in (["dump", "--no-follow"], ["analyze"]):
        started = time.monotonic()
        code = cli.main([*argv, "--bootstrap-server", scram_broker.bootstrap_servers, "--command-config", config])
        out, err = capsys.readouterr()
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (argv, err)
        assert "SASL_AUTHENTICATION_FAILED" in err and f"sasl.jaas.config in {config}" in err, err
        assert WRONG not in out + err and PASSWORD not in out + err
        assert time.monotonic() - started < 10  # at the first refusal, not after a bootstrap timeout


@pytest.mark.slow  # Spark: the session the slow tests share (the command's getOrCreate finds it)
def test_analyze_over_sasl_scram(capsys: pytest.CaptureFixture[str], spark: SparkSession,
                                 scram_broker: SandboxBroker, tmp_path: Path) -> None:
    code = cli.main(["analyze", "--bootstrap-server", scram_broker.bootstrap_servers, "--command-config",
                     str(properties(tmp_path / "client.properties")), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    offsets = json.loads(out)["offsets"]
    assert [(o["group"], o["topic"], o["offset"]) for o in offsets] == [("billing", "orders", 4)], offsets
    assert PASSWORD not in out + err
