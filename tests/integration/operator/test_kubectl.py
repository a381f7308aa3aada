"""The emulated API answers kubectl (the real binary) as a user types it: apply with client and server
validation, get with the CRDs' printer columns, short names and the `kafka` category, explain from the
CRD schemas. What the README and the docs tell a new user to run against the demo."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_harness import ROOT, EmulatedCluster, emulated_cluster
from waiting import wait_until


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmulatedCluster]:
    with emulated_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def kubeconfig(cluster: EmulatedCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")


def kubectl(kubeconfig: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=60)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def applied(kubeconfig: Path) -> Path:
    """The examples, applied as the README says (validation on: kubectl's default)."""
    out = kubectl(kubeconfig, "apply", "-f", str(ROOT / "manifests" / "examples")).stdout
    assert "offsetdeletion.kafkaoffsets.dev/orders-reporting-old-topics created" in out
    return kubeconfig


def test_get_by_short_name_shows_the_printer_columns(applied: Path) -> None:
    lines = kubectl(applied, "get", "od", "-A").stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "GROUP", "APPROVED", "PHASE", "DELETED", "FAILED", "AGE"]
    assert lines[1].split()[:4] == ["kafka", "orders-reporting-old-topics", "orders-reporting", "true"]
    assert "Warning" not in kubectl(applied, "get", "od", "-A").stderr


def test_get_one_object_and_wide_columns(applied: Path) -> None:
    assert kubectl(applied, "get", "cgop", "stale-offsets").stdout.split()[:7] == [
        "NAME", "MODE", "LAST", "RUN", "CANDIDATES", "READY", "AGE"]
    wide = kubectl(applied, "get", "od", "-n", "kafka", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "GROUP", "APPROVED", "PHASE", "DELETED", "FAILED", "DELETE", "GROUP",
                               "RESTORE", "POLICY", "REQUESTED", "BY", "APPROVED", "BY", "AGE"]
    assert "stale-offsets" in wide[1].split()  # the policy whose connection it uses
    jsonpath = kubectl(applied, "get", "od", "orders-reporting-old-topics", "-o", "jsonpath={.spec.group}").stdout
    assert jsonpath == "orders-reporting"


def test_get_watch_prints_a_row_per_change_after_the_list(applied: Path, tmp_path: Path) -> None:
    """`kubectl get -w` as a user watches a deletion: the list once, then one row per change (not the listed
    objects again), with the printer columns."""
    out = tmp_path / "watch.out"
    with out.open("w") as sink:
        watch = subprocess.Popen(["kubectl", "--kubeconfig", str(applied), "get", "od", "-n", "kafka", "-w"],
                                 stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        def rows() -> list[list[str]]:
            return [line.split() for line in out.read_text().splitlines()]

        listed = wait_until(lambda: len(rows()) >= 2 and rows(), timeout=30, what="the listed rows")
        assert listed[0] == ["NAME", "GROUP", "APPROVED", "PHASE", "DELETED", "FAILED", "AGE"]
        kubectl(applied, "label", "od", "-n", "kafka", "orders-reporting-old-topics", "watched=yes")
        changed = wait_until(lambda: len(rows()) >= 3 and rows(), timeout=30, what="a row for the change")
        assert [row[:2] for row in changed[1:]] == [["orders-reporting-old-topics", "orders-reporting"]] * 2
        assert watch.poll() is None, out.read_text()
    finally:
        watch.terminate()
        watch.wait(timeout=10)


def test_the_kafka_category_lists_every_kind(applied: Path) -> None:
    out = kubectl(applied, "get", "kafka", "-A").stdout
    assert "consumergroupoffsetpolicy.kafkaoffsets.dev/stale-offsets" in out
    assert "offsetdeletion.kafkaoffsets.dev/orders-reporting-old-topics" in out
    assert "offsetreset.kafkaoffsets.dev/replay-orders" in out
    resources = kubectl(applied, "api-resources", "--categories", "kafka", "-o", "name").stdout.split()
    assert sorted(resources) == ["consumergroupoffsetpolicies.kafkaoffsets.dev", "offsetdeletions.kafkaoffsets.dev",
                                 "offsetresets.kafkaoffsets.dev"]


def test_an_offset_reset_by_its_short_name(applied: Path) -> None:
    lines = kubectl(applied, "get", "ors", "-A").stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "GROUP", "APPROVED", "PHASE", "CHANGES", "RESET", "FAILED", "AGE"]
    assert lines[1].split()[:4] == ["kafka", "replay-orders", "orders-app", "false"]  # a plan, not yet approved
    assert "target" in kubectl(applied, "explain", "ors.spec").stdout


def test_explain_reads_the_crd_schema(kubeconfig: Path) -> None:
    out = kubectl(kubeconfig, "explain", "cgop.spec.rules").stdout
    assert "KIND:       ConsumerGroupOffsetPolicy" in out and "emptyGroupRetention" in out
    assert "approved" in kubectl(kubeconfig, "explain", "od.spec").stdout


def test_a_bad_spec_is_refused_naming_the_field(kubeconfig: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kafkaoffsets.dev/v1alpha1\nkind: ConsumerGroupOffsetPolicy\n"
                   "metadata: {name: bad, namespace: kafka}\n"
                   "spec: {kafka: {bootstrapServers: 'k:9092'}, mode: Sometimes}\n")
    refused = kubectl(kubeconfig, "apply", "-f", str(bad), ok=False)
    assert refused.returncode == 1 and "spec.mode" in refused.stderr and "Sometimes" in refused.stderr
    bad.write_text(bad.read_text().replace("mode: Sometimes", "mode: DryRun, bogus: 1"))
    unknown = kubectl(kubeconfig, "apply", "-f", str(bad), ok=False)
    assert 'unknown field "spec.bogus"' in unknown.stderr


def test_nothing_kubectl_asked_made_the_emulator_fail(applied: Path, cluster: EmulatedCluster) -> None:
    kubectl(applied, "get", "all,kafka", "-A")
    assert cluster.server_errors() == []
