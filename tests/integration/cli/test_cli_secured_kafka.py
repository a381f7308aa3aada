"""The CLI with `--command-config` on Apache Kafka's SASL_SSL listener (tests/support/real_kafka.py): TLS with
a PEM trust store, SASL with SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN, as a Kafka user configures Kafka's own
tools. `reset` (with its backup and undo), `restore`, `dump` and `analyze` read or change the same group that
kafka-python's admin, on the plaintext listener of the same broker, then reads. No password reaches what
a command prints or logs; a refused one is one line."""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from brokers import make_topics
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka

from kafka_offset_demo.emulated_cluster import EmulatedCluster
from kafka_offset_operator import cli
from kafka_offset_operator.model.backups import Action, BackupRecord, Requester, to_document
from kafka_offset_operator.model.offsets import Committed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

O0, O1 = ("orders", 0), ("orders", 1)
LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
         "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
         "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


@pytest.fixture
def secured(kafka: Kafka) -> Kafka:
    if not kafka.is_real:
        pytest.skip("the SASL_SSL listener is the real broker's (the sandbox's own secured tests are next door)")
    make_topics(kafka, {"orders": 2}, records_per_partition=10)
    admin_commit(kafka.bootstrap_servers, "billing", {O0: 5, O1: 2})
    return kafka


def properties(kafka: Kafka, path: Path, mechanism: str, password: str | None = None) -> Path:
    """A client.properties as for kafka-consumer-groups.sh --command-config."""
    s = kafka.secured
    user, right = (s.plain_user, s.plain_password) if mechanism == "PLAIN" else (s.scram_user, s.scram_password)
    path.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={LOGIN[mechanism]} required username="{user}" password="{password or right}";\n'
                    f"ssl.truststore.type=PEM\nssl.truststore.location={s.ca_file}\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_reset_undo_and_restore_over_sasl_ssl(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
                                              secured: Kafka, tmp_path: Path, mechanism: str) -> None:
    caplog.set_level(logging.DEBUG)
    # kafka-python 3.0.12 logs each request at DEBUG, a PLAIN SaslAuthenticate's password included (on the
    # wire by design of PLAIN, inside TLS); the operator keeps "kafka" at INFO even when verbose
    # (runtime.quiet_loggers) and the CLI never turns it to DEBUG, so this test does the same.
    caplog.set_level(logging.INFO, logger="kafka")
    config = properties(secured, tmp_path / "client.properties", mechanism)
    base = ["--bootstrap-server", secured.secured.bootstrap_servers, "--command-config", str(config)]
    cluster = EmulatedCluster().start()
    try:
        kubeconfig = ["--kubeconfig", str(cluster.write_kubeconfig(tmp_path / "kubeconfig"))]
        code, out, err = run(capsys, "reset", *base, *kubeconfig, "--group", "billing", "--all-topics",
                             "--to-offset", "7", "--execute")
        assert (code, err) == (0, ""), err
        assert committed(secured.bootstrap_servers, "billing") == {O0: 7, O1: 7}
        undo = next(line for line in out.splitlines() if line.startswith("undo: ")).removeprefix("undo: ")
        code, out2, err = run(capsys, *undo.split()[1:], *kubeconfig)
        assert (code, err) == (0, ""), err
        assert committed(secured.bootstrap_servers, "billing") == {O0: 5, O1: 2}
        backup = tmp_path / "backup.json"  # restore: a backup file's offsets into a group that has none
        # Taken now: the session's broker holds earlier tests' commits of a group "fresh", which restore would
        # rightly take for commits made after an older backup.
        taken = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = BackupRecord("b", Action.DELETE, None, secured.secured.bootstrap_servers, "fresh", {O0: Committed(3)},
                              Requester("OffsetDeletion", "n", "od", "u", "test"), taken, "2999-01-01T00:00:00Z")
        backup.write_text(json.dumps(to_document(record)))
        code, out3, err = run(capsys, "restore", "--file", str(backup), "--command-config", str(config), "--execute",
                              *kubeconfig)  # the policies that may protect the group
        assert (code, err) == (0, "") and "committed 1 offsets of group fresh" in out3, (out3, err)
        assert committed(secured.bootstrap_servers, "fresh") == {O0: 3}
    finally:
        cluster.stop()
    secret = secured.secured.plain_password if mechanism == "PLAIN" else secured.secured.scram_password
    assert secret not in out + out2 + out3 + caplog.text


def test_dump_over_sasl_ssl_and_a_refused_password_in_one_line(capsys: pytest.CaptureFixture[str],
                                                              secured: Kafka, tmp_path: Path) -> None:
    config = properties(secured, tmp_path / "client.properties", "SCRAM-SHA-512")
    code, out, err = run(capsys, "dump", "--bootstrap-server", secured.secured.bootstrap_servers, "--command-config",
                         str(config), "--group", "billing", "--from-beginning", "--no-follow")
    assert (code, err) == (0, ""), err
    # The session's broker is shared: earlier tests' commits of the same names are there too, each followed
    # by its tombstone (their groups were deleted), so the last record of each partition is this test's.
    last: dict[int, Any] = {}
    for record in map(json.loads, out.splitlines()):
        if (record.get("key") or {}).get("topic") == "orders":
            last[record["key"]["partition"]] = record["value"]
    assert {p: (v or {}).get("offset") for p, v in last.items()} == {0: 5, 1: 2}
    wrong = properties(secured, tmp_path / "wrong.properties", "SCRAM-SHA-512", "Wx3-wrong-never-printed")
    code, out, err = run(capsys, "dump", "--no-follow", "--bootstrap-server", secured.secured.bootstrap_servers,
                         "--command-config", str(wrong))
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "SASL_AUTHENTICATION_FAILED" in err and "Wx3-wrong-never-printed" not in out + err


@pytest.mark.slow  # Spark: the session the slow tests share
def test_analyze_over_sasl_ssl(capsys: pytest.CaptureFixture[str], spark: SparkSession, secured: Kafka,
                               tmp_path: Path) -> None:
    config = properties(secured, tmp_path / "client.properties", "PLAIN")
    code, out, err = run(capsys, "analyze", "--bootstrap-server", secured.secured.bootstrap_servers,
                         "--command-config", str(config), "--format", "json")
    assert code == 0, err[-2000:]
    offsets = json.loads(out)["offsets"]
    assert sorted((o["group"], o["topic"], o["partition"], o["offset"]) for o in offsets) == [
        ("billing", "orders", 0, 5), ("billing", "orders", 1, 2)], offsets
