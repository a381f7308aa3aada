"""`kafka-offset-operator reset` over the wire: every target on Apache Kafka (the `kafka` fixture; the sandbox
with KOO_KAFKA_VERSIONS=sandbox), its plan checked against
what ListOffsets reports (asked here with kafka-python's own admin client, not the operator's adapter) and
Kafka's clamping rules; then --execute, with the backup in the (emulated) backup store first and OffsetFetch
showing the new offsets. In-process through cli.main (a process per target would cost seconds each); the
process itself is tests/integration/cli/test_cli_reset_process.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka_clients import admin_commit, committed, member
from kafka_tools import reset_dry_run, reset_export, reset_plan
from kafka_under_test import Kafka
from reset_cli import NAMESPACE, backups, plan_of, reset

from kafka_offset_demo.emulated_cluster import EmulatedCluster
from kafka_offset_operator import cli
from kafka_offset_operator.adapters.backup_store import BackupStore
from kafka_offset_operator.adapters.kube import Kube, load_config
from kafka_offset_operator.model.backups import Action, BackupRecord
from kafka_offset_operator.model.offsets import Committed
from kafka_sandbox import SandboxBroker

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z: orders' records are one a second from here
O0, O1 = ("orders", 0), ("orders", 1)


def seed(broker: Kafka) -> Kafka:
    """orders-0: offsets 2..10 (retention took 0 and 1), records at T0 + i s; orders-1: 0..4, the same times.
    billing committed 5 and 1 and has no members; other committed 0 and 3."""
    broker.create_topic("orders", 2)
    for p, count in ((0, 10), (1, 4)):
        broker.append_records("orders", p, [(None, b"r", T0 + i * 1000) for i in range(count)])
    broker.delete_records_before("orders", 0, 2)
    admin_commit(broker.bootstrap_servers, "billing", {O0: 5, O1: 1})
    admin_commit(broker.bootstrap_servers, "other", {O0: 0, O1: 3})
    return broker


@pytest.fixture
def world(kafka: Kafka) -> Kafka:
    return seed(kafka)


@pytest.fixture
def sandbox_world(broker: SandboxBroker) -> Kafka:
    """The same world on the sandbox, for a test that needs its `faults`."""
    return seed(Kafka.of_sandbox(broker))


def list_offsets(broker: Kafka, spec: Any) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        raw = admin.list_partition_offsets({TopicPartition(*tp): spec for tp in (O0, O1)})
        return {(tp.topic, tp.partition): found.offset for tp, found in raw.items()}
    finally:
        admin.close()


def clamp(offset: int, start: int, end: int) -> int:
    """ConsumerGroupCommand.ConsumerGroupService.checkOffsetsRange: the end first, then the start."""
    return end if offset > end else start if offset < start else offset


def expected(broker: Kafka, target: list[str]) -> dict[tuple[str, int], int]:
    """The new offsets by Kafka's rules, from ListOffsets' answers."""
    start, end = list_offsets(broker, OffsetSpec.EARLIEST), list_offsets(broker, OffsetSpec.LATEST)
    assert (start, end) == ({O0: 2, O1: 0}, {O0: 10, O1: 4})
    flag = target[0]
    if flag == "--to-earliest":
        return start
    if flag == "--to-latest":
        return end
    if flag in ("--to-datetime", "--by-duration"):
        ts = T0 + 6000 if flag == "--to-datetime" else int(time.time() * 1000) - 10 * 365 * 86_400_000
        found = list_offsets(broker, ts)
        return {tp: end[tp] if found[tp] == -1 else found[tp] for tp in (O0, O1)}  # no record: the log end
    now = {O0: 5, O1: 1}
    asked = int(target[1]) if flag == "--to-offset" else 0
    requested = {"--to-offset": {O0: asked, O1: asked}, "--shift-by": {tp: now[tp] - 4 for tp in now},
                 "--from-group": {O0: 0, O1: 3}}[flag]
    return {tp: clamp(requested[tp], start[tp], end[tp]) for tp in (O0, O1)}


@pytest.mark.parametrize("target", [
    ["--to-earliest"],
    ["--to-latest"],
    ["--to-datetime", "2026-01-01T00:00:06Z"],  # orders-0: offset 6; orders-1 has no record that late: its end
    ["--by-duration", "3650d"],  # ten years back: every record is later, so the first offset of each log
    ["--to-datetime", "2026-01-01T00:00:06.000"],  # Kafka's tool's form without a zone: UTC, as Kafka reads it
    ["--to-offset", "7"],  # orders-1: clamped to its end, 4
    ["--to-offset", "-1"],  # below every log start (Kafka's tool takes any long): clamped to each start
    ["--shift-by", "-4"],  # orders-0: 5-4=1 clamped to its start, 2; orders-1: 1-4 clamped to 0
    ["--from-group", "other"],  # orders-0: 0 clamped to 2
])
def test_every_target_plans_by_kafkas_rules_then_executes_with_a_backup_first(
        capsys: pytest.CaptureFixture[str], world: Kafka, kubeconfig: Path, target: list[str]) -> None:
    want = expected(world, target)
    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", *target)
    assert (code, err) == (0, ""), err
    assert plan_of(out) == want and "dry run: 2 offsets would be committed" in out
    if target[0] == "--to-datetime":  # printed back in UTC, whichever form was given
        assert "to the first offset at or after 2026-01-01T00:00:06Z" in out, out
    code, explicit, err = reset(capsys, world, kubeconfig, "--all-topics", *target, "--dry-run")  # Kafka's flag
    assert (code, err, explicit) == (0, "", out)
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1} and backups(kubeconfig) == []

    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", *target, "--execute")
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == want
    [backup] = backups(kubeconfig)
    assert (backup.action, backup.group, backup.requested_by.kind) == (Action.RESET, "billing", "ResetCommand")
    assert backup.offsets == {O0: Committed(5), O1: Committed(1)}  # what was there before
    assert f"backup {NAMESPACE}/{backup.name} written" in out and out.count("committed") >= 3


def test_undo_from_the_backup_a_reset_wrote(capsys: pytest.CaptureFixture[str], world: Kafka,
                                            kubeconfig: Path) -> None:
    code, out, _ = reset(capsys, world, kubeconfig, "--topic", "orders:1", "--to-latest", "--execute")
    assert code == 0 and committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 4}
    [first] = backups(kubeconfig)
    assert first.offsets == {O1: Committed(1)}
    undo = f"{NAMESPACE}/{first.name}"
    assert f"--from-backup {undo} --execute" in out  # the undo is printed with the results

    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--from-backup", undo)
    assert (code, err) == (0, "") and plan_of(out) == {O1: 1}
    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--from-backup", undo, "--execute")
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1}
    assert len(backups(kubeconfig)) == 2  # the undo is a reset too, with its own backup


def test_what_is_refused_changes_nothing(capsys: pytest.CaptureFixture[str], world: Kafka,
                                         kubeconfig: Path, tmp_path: Path) -> None:
    def refused(*argv: str) -> str:
        code, out, err = reset(capsys, world, kubeconfig, *argv)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (out, err)
        return err

    assert "topic gone does not exist" in refused("--topic", "gone", "--to-latest", "--execute")
    assert "orders-7: the partition does not exist" in refused("--topic", "orders:0,7", "--to-latest", "--execute")
    assert "fromGroup names group billing itself" in refused("--all-topics", "--from-group", "billing")
    assert "no backup kafka/nope" in refused("--all-topics", "--from-backup", "nope")
    admin_commit(world.bootstrap_servers, "fresh", {O0: 3})
    code = cli.main(["reset", "--bootstrap-server", world.bootstrap_servers, "--group", "fresh",
                     "--kubeconfig", str(kubeconfig), "--topic", "orders", "--shift-by", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "orders-1: no committed offset to shift by +1" in err
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1} and backups(kubeconfig) == []

    export = tmp_path / "plan.csv"
    code, _, _ = reset(capsys, world, kubeconfig, "--all-topics", "--to-offset", "7", "--export", str(export))
    assert code == 0 and export.read_text() == "orders,0,7\norders,1,4\n"  # Kafka's --export, one group


def test_a_group_with_members_is_refused_naming_them(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                    kubeconfig: Path) -> None:
    with member(world.bootstrap_servers, "billing", ["orders"]):
        code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest")
        assert code == 0 and "note: group billing has members (" in out  # the plan is shown all the same
        code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest", "--execute")
        assert code == 2 and len(err.splitlines()) == 1
        assert "group billing has members (kafka-python-" in err and "stop its consumers first" in err
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1} and backups(kubeconfig) == []


def test_no_backup_no_change(capsys: pytest.CaptureFixture[str], world: Kafka, cluster: EmulatedCluster,
                             kubeconfig: Path) -> None:
    """The backup comes first: when the backup store refuses it, Kafka is not asked to change anything."""
    fault = cluster.fail("create configmaps", status=500, times=None, message="etcd timed out")
    code, _, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest", "--execute")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "no backup could be written, nothing changed: Kubernetes API error 500" in err
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1}
    assert fault.taken and backups(kubeconfig) == []  # the create was tried, and refused


def store(kubeconfig: Path, name: str, group: str, offsets: dict[tuple[str, int], Committed], cluster_id: str | None) -> None:
    """A backup as an OffsetDeletion writes it before its OffsetDelete."""
    from kafka_offset_operator.model.backups import Requester

    record = BackupRecord(name, Action.DELETE, cluster_id, "kafka:9092", group, offsets,
                          Requester("OffsetDeletion", NAMESPACE, "od", "uid-od", "approved OffsetDeletion"),
                          "2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z")
    kube = Kube(load_config(kubeconfig))
    try:
        BackupStore(kube).write(record)
    finally:
        kube.close()


def test_undo_of_a_deletion_into_a_group_without_offsets(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                         kubeconfig: Path) -> None:
    """The offsets an OffsetDeletion deleted come back from its backup, with their leader epoch and metadata;
    an offset the log no longer has is clamped; a backup of another group or cluster is refused."""
    admin = KafkaAdminClient(bootstrap_servers=world.bootstrap_servers)
    try:
        cluster_id = admin.describe_cluster()["cluster_id"]
    finally:
        admin.close()
    store(kubeconfig, "offset-backup-od-delete", "gone", {O0: Committed(1, 0, "m"), O1: Committed(3, 0, "n")}, cluster_id)
    store(kubeconfig, "offset-backup-elsewhere", "gone", {O0: Committed(4)}, "another-cluster")

    def reset_gone(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["reset", "--bootstrap-server", world.bootstrap_servers, "--group", "gone",
                         "--kubeconfig", str(kubeconfig), "--all-topics", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = reset_gone("--from-backup", "offset-backup-od-delete", "--execute")
    assert (code, err) == (0, ""), err
    assert "gone   orders  0          -        2    clamped to the log start offset 2 (asked 1)" in out
    assert "the group had no offset before for 2 of them (orders-0, orders-1): an undo leaves those" in out
    admin = KafkaAdminClient(bootstrap_servers=world.bootstrap_servers)
    try:
        raw = admin.list_group_offsets({"gone": None})["gone"]
    finally:
        admin.close()
    got = {(tp.topic, tp.partition): (oam.offset, oam.metadata) for tp, oam in raw.items()}
    assert got == {O0: (2, ""), O1: (3, "n")}  # clamped: a plain offset; kept: as the backup had it
    reset_backup = [b for b in backups(kubeconfig) if b.action is Action.RESET]
    assert len(reset_backup) == 1 and reset_backup[0].offsets == {}  # nothing was committed before
    assert reset_backup[0].extra["uncommitted"] == [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]

    code, _, err = reset_gone("--from-backup", f"{NAMESPACE}/offset-backup-elsewhere")
    assert code == 2 and "was taken on Kafka cluster another-cluster, this is cluster" in err
    code = cli.main(["reset", "--bootstrap-server", world.bootstrap_servers, "--group", "billing", "--kubeconfig",
                     str(kubeconfig), "--all-topics", "--from-backup", "offset-backup-od-delete"])
    assert code == 2 and "holds offsets of group gone, not of billing" in capsys.readouterr().err


def test_a_commit_made_after_the_plan_was_read_is_not_overwritten(capsys: pytest.CaptureFixture[str],
                                                                  sandbox_world: Kafka, kubeconfig: Path) -> None:
    """The group's offsets are read again right before the commit (the second OffsetFetch of billing): a
    partition someone committed since the plan was read is not reset (it is not in the backup either), it is
    reported as skipped; the others are committed. On the sandbox: it holds that OffsetFetch (`faults`)."""
    world = sandbox_world
    assert world.sandbox is not None
    faults = world.sandbox.faults
    held = faults.hold("OffsetFetch", group="billing", after=1)

    def commit_meanwhile() -> None:
        try:
            held.wait(10)
        except AssertionError:
            return  # no re-read: the assertions below say what went wrong
        admin_commit(world.bootstrap_servers, "billing", {O1: 3})
        held.release()

    meanwhile = threading.Thread(target=commit_meanwhile)
    meanwhile.start()
    try:
        code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest", "--execute")
    finally:
        faults.clear()  # a hold that never came (a command without the re-read) is released
        meanwhile.join(30)
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == {O0: 2, O1: 3}  # orders-1 as committed meanwhile
    [backup] = backups(kubeconfig)
    assert backup.offsets == {O0: Committed(5), O1: Committed(1)}
    row = [line for line in out.splitlines() if line.split()[:3] == ["billing", "orders", "1"]][-1]  # results
    assert "skipped: committed since the backup (offset 3, backed up 1); left as is" in row
    assert "committed 1 offsets of group billing; 1 skipped" in out


# -- Kafka's own tool as the oracle: ConsumerGroupCommand --reset-offsets --dry-run on the same group


@pytest.mark.slow  # a JVM per target
@pytest.mark.parametrize(("ours", "kafkas"), [
    (["--all-topics", "--to-earliest"], ["--all-topics", "--to-earliest"]),
    (["--all-topics", "--to-latest"], ["--all-topics", "--to-latest"]),
    (["--all-topics", "--to-current"], ["--all-topics", "--to-current"]),
    (["--all-topics", "--to-datetime", "2026-01-01T00:00:06Z"], ["--all-topics", "--to-datetime", "2026-01-01T00:00:06.000Z"]),
    (["--all-topics", "--to-datetime", "2030-01-01T00:00:00Z"], ["--all-topics", "--to-datetime", "2030-01-01T00:00:00.000Z"]),
    (["--all-topics", "--by-duration", "3650d"], ["--all-topics", "--by-duration", "P3650D"]),
    (["--all-topics", "--to-offset", "7"], ["--all-topics", "--to-offset", "7"]),
    (["--all-topics", "--shift-by", "-4"], ["--all-topics", "--shift-by", "-4"]),
    (["--all-topics", "--shift-by", "30"], ["--all-topics", "--shift-by", "30"]),
    (["--topic", "orders:1", "--to-earliest"], ["--topic", "orders:1", "--to-earliest"]),
    (["--topic", "fresh", "--to-earliest"], ["--topic", "fresh", "--to-earliest"]),  # no committed offsets
    (["--topic", "fresh", "--to-current"], ["--topic", "fresh", "--to-current"]),
    (["--topic", "fresh", "--to-offset", "1"], ["--topic", "fresh", "--to-offset", "1"]),
])
def test_the_plan_is_kafkas_own_tools_plan(capsys: pytest.CaptureFixture[str], world: Kafka, kubeconfig: Path,
                                            ours: list[str], kafkas: list[str]) -> None:
    if not world.is_real:
        pytest.skip("Kafka's own tool is the oracle on Apache Kafka")
    world.create_topic("fresh", 2)
    world.append_records("fresh", 0, [(None, b"r", T0) for _ in range(3)])
    want = reset_plan(world.version, world.bootstrap_servers, "billing", *kafkas)
    code, out, err = reset(capsys, world, kubeconfig, *ours)
    assert (code, err) == (0, ""), err
    assert plan_of(out) == want, out


@pytest.mark.slow
@pytest.mark.parametrize("with_group", [False, True])
def test_from_file_plans_as_kafkas_tool_in_both_csv_forms(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                         kubeconfig: Path, tmp_path: Path, with_group: bool) -> None:
    if not world.is_real:
        pytest.skip("Kafka's own tool is the oracle on Apache Kafka")
    rows = [("orders", 1, 3), ("orders", 0, 99)]  # orders-0: past its end, clamped
    csv = tmp_path / "plan.csv"
    csv.write_text("".join(f"{'billing,' if with_group else ''}{t},{p},{o}\n" for t, p, o in rows))
    want = reset_plan(world.version, world.bootstrap_servers, "billing", "--from-file", str(csv))
    code, out, err = reset(capsys, world, kubeconfig, "--from-file", str(csv))
    assert (code, err) == (0, ""), err
    assert plan_of(out) == want, out


@pytest.mark.slow
@pytest.mark.parametrize("scope", [["--topic", "missing"], ["--topic", "orders:7"]])
def test_a_missing_topic_or_partition_is_refused_as_kafkas_tool_refuses_it(
        capsys: pytest.CaptureFixture[str], world: Kafka, kubeconfig: Path, scope: list[str]) -> None:
    """Kafka's tool resets nothing when a partition of the scope does not exist (ListOffsets answers
    UNKNOWN_TOPIC_OR_PARTITION, `getLogOffsets`; later `GroupOffsetsResetter.checkAllTopicPartitionsValid`);
    the `reset` command refuses it too, in one line, before any change."""
    if not world.is_real:
        pytest.skip("Kafka's own tool is the oracle on Apache Kafka")
    theirs = reset_dry_run(world.version, world.bootstrap_servers, "billing", *scope, "--to-earliest")
    said = (theirs.stdout + theirs.stderr).strip()
    assert not [line for line in theirs.stdout.splitlines() if line.startswith("billing ")], said  # no plan row
    assert "does not exist" in said or "UnknownTopicOrPartition" in said or "not exist" in said.lower(), said
    code, out, err = reset(capsys, world, kubeconfig, *scope, "--to-earliest")
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, out, err)
    assert committed(world.bootstrap_servers, "billing") == {O0: 5, O1: 1}


@pytest.mark.slow
@pytest.mark.parametrize("target", [["--to-offset", "7"], ["--to-earliest"], ["--shift-by", "-4"]])
def test_export_writes_the_csv_kafkas_tool_exports(capsys: pytest.CaptureFixture[str], world: Kafka,
                                                   kubeconfig: Path, tmp_path: Path, target: list[str]) -> None:
    """`--export`: Kafka's tool prints `topic,partition,offset` lines (one group, no header,
    `exportOffsetsToCsv`); the `reset` command writes the same lines to its file, and the file plans the
    same reset when read back by either (`--from-file`)."""
    if not world.is_real:
        pytest.skip("Kafka's own tool is the oracle on Apache Kafka")
    theirs = reset_export(world.version, world.bootstrap_servers, "billing", "--all-topics", *target)
    exported = tmp_path / "plan.csv"
    code, out, err = reset(capsys, world, kubeconfig, "--all-topics", *target, "--export", str(exported))
    assert (code, err) == (0, ""), err
    ours = [line for line in exported.read_text().splitlines() if line.strip()]
    assert sorted(ours) == sorted(theirs), (ours, theirs)
    assert reset_plan(world.version, world.bootstrap_servers, "billing", "--from-file", str(exported)) == plan_of(out)


# -- a re-commit of the same offset while the command runs: on the sandbox, which holds the OffsetFetch (`faults`)


def _recommit_during_the_reread(world: Kafka) -> tuple[Any, threading.Thread]:
    """Right before the commit (the second OffsetFetch of billing) orders-1's consumer commits its unchanged
    position (1, as planned and backed up): a standalone consumer using it."""
    assert world.sandbox is not None
    held = world.sandbox.faults.hold("OffsetFetch", group="billing", after=1)

    def commit_meanwhile() -> None:
        try:
            held.wait(10)
        except AssertionError:
            return
        admin_commit(world.bootstrap_servers, "billing", {O1: 1})
        held.release()

    meanwhile = threading.Thread(target=commit_meanwhile)
    meanwhile.start()
    return held, meanwhile


def test_a_re_commit_of_the_same_offset_after_the_plan_was_read_is_not_overwritten(
        capsys: pytest.CaptureFixture[str], sandbox_world: Kafka, kubeconfig: Path) -> None:
    """The value is what the plan read, but the commit is new: Kafka keeps that offset alive from it, and
    someone uses it. The group's records since the plan was read tell (decisions/fresh_verdict.py): skipped,
    saying so; the other partition is reset."""
    world = sandbox_world
    _, meanwhile = _recommit_during_the_reread(world)
    try:
        code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest", "--execute")
    finally:
        world.sandbox.faults.clear()
        meanwhile.join(30)
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == {O0: 2, O1: 1}
    row = [line for line in out.splitlines() if line.split()[:3] == ["billing", "orders", "1"]][-1]
    assert "committed again" in row and "since the plan was read" in row, row
    assert "committed 1 offsets of group billing; 1 skipped" in out and "--overwrite-newer" in out


def test_overwrite_newer_commits_over_it_and_says_so_loudly(
        capsys: pytest.CaptureFixture[str], sandbox_world: Kafka, kubeconfig: Path) -> None:
    world = sandbox_world
    _, meanwhile = _recommit_during_the_reread(world)
    try:
        code, out, err = reset(capsys, world, kubeconfig, "--all-topics", "--to-earliest", "--execute",
                               "--overwrite-newer")
    finally:
        world.sandbox.faults.clear()
        meanwhile.join(30)
    assert (code, err) == (0, ""), err
    assert committed(world.bootstrap_servers, "billing") == {O0: 2, O1: 0}
    assert "WARNING: --overwrite-newer: committing over 1 partitions" in out and "orders-1" in out
