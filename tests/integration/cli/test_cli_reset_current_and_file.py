"""`reset --to-current` and `reset --from-file` over the wire on Apache Kafka (the `kafka` fixture; the
sandbox with KOO_KAFKA_VERSIONS=sandbox), checked against the offsets ListOffsets and OffsetFetch report
(asked with kafka-python's own admin client) and Kafka's rules (ConsumerGroupCommand.prepareOffsetsToReset,
parseResetPlan, checkOffsetsRange: docs/kafka-semantics.md). In-process through cli.main, as
test_cli_reset_scenarios.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka_clients import admin_commit, committed
from kafka_under_test import Kafka
from reset_cli import backups, plan_of, reset

from kafka_offset_operator.model.offsets import Committed

O0, O1, O2 = ("orders", 0), ("orders", 1), ("orders", 2)


@pytest.fixture
def world(kafka: Kafka) -> Kafka:
    """orders-0: offsets 2..10 (retention took 0 and 1: DeleteRecords); orders-1: 0..4; orders-2: 0..6.
    billing committed orders-0 at 5 and orders-1 at 1, nothing on orders-2; it has no members."""
    kafka.create_topic("orders", 3)
    for p, count in ((0, 10), (1, 4), (2, 6)):
        kafka.append_records("orders", p, [(None, b"r", 1_767_225_600_000 + i) for i in range(count)])
    kafka.delete_records_before("orders", 0, 2)
    admin_commit(kafka.bootstrap_servers, "billing", {O0: 5, O1: 1})
    return kafka


def log_ends(broker: Kafka, spec: OffsetSpec = OffsetSpec.LATEST) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        raw = admin.list_partition_offsets({TopicPartition(*tp): spec for tp in (O0, O1, O2)})
        return {(tp.topic, tp.partition): found.offset for tp, found in raw.items()}
    finally:
        admin.close()


def test_to_current_with_and_without_committed_offsets(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                        kubeconfig: Path) -> None:
    """Committed partitions keep their offset; orders-2, without one, gets the log end offset."""
    assert log_ends(world) == {O0: 10, O1: 4, O2: 6}
    assert log_ends(world, OffsetSpec.EARLIEST) == {O0: 2, O1: 0, O2: 0}
    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-current")
    assert (code, err) == (0, ""), err
    assert plan_of(out) == {O0: 5, O1: 1}  # --all-topics: the partitions the group has offsets for
    assert "dry run: 2 offsets would be committed (0 of them change)" in out

    code, out, err = reset(capsys, world, kubeconfig, "--topic", "orders", "--to-current", "--execute")
    assert (code, err) == (0, ""), err
    assert plan_of(out) == {O0: 5, O1: 1, O2: 6} and "no committed offset: the log end offset 6" in out
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1, O2: 6}
    assert [b.offsets for b in backups(kubeconfig)] == [{O0: Committed(5), O1: Committed(1)}]  # orders-2 had nothing to keep


def test_from_file_reads_the_export_and_is_clamped(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                   kubeconfig: Path, tmp_path: Path) -> None:
    exported = tmp_path / "plan.csv"
    code, _, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-offset", "3", "--export", str(exported))
    assert code == 0 and exported.read_text() == "orders,0,3\norders,1,3\n", err
    code, out, err = reset(capsys, world, kubeconfig, "--from-file", str(exported), "--execute")
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == {O0: 3, O1: 3}
    assert [b.offsets for b in backups(kubeconfig)] == [{O0: Committed(5), O1: Committed(1)}]

    several = tmp_path / "groups.csv"  # the export of several groups; offsets beyond the logs are clamped
    several.write_text("other,orders,0,9\nbilling,orders,0,0\nbilling,orders,2,99\n")
    code, out, err = reset(capsys, world, kubeconfig, "--from-file", str(several))
    assert (code, err) == (0, ""), err
    assert plan_of(out) == {O0: 2, O2: 6} and "clamped to the log start offset 2 (asked 0)" in out
    code, out, err = reset(capsys, world, kubeconfig, "--topic", "orders:2", "--from-file", str(several), "--execute")
    assert (code, err) == (0, "") and plan_of(out) == {O2: 6}, err  # a scope narrows the file
    assert committed(world.bootstrap_servers, "billing") == {O0: 3, O1: 3, O2: 6}


def test_a_bad_file_is_refused_before_anything(capsys: pytest.CaptureFixture[str], world: Kafka,
                                               kubeconfig: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    for text, message in (("orders,0,5\norders,one,3\n", f"--from-file {bad}: line 2: the partition 'one' is not"),
                          ("other,orders,0,9\n", "no line of group billing (the file has groups other)"),
                          ("orders,0,5\norders,9,3\n", "orders-9: the partition does not exist")):
        bad.write_text(text)
        code, out, err = reset(capsys, world, kubeconfig, "--from-file", str(bad), "--execute")
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err and message in err, (out, err)
    code, _, err = reset(capsys, world, kubeconfig, "--from-file", str(tmp_path / "none.csv"))
    assert code == 2 and "--from-file: cannot read" in err
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1} and [b.offsets for b in backups(kubeconfig)] == []
