"""The CDS archive's decisions (offset_expiry.jvm_cds, issue 22): which archive a driver JVM maps or writes,
and that a run never names an archive that does not exist (the JVM would then run without even its base
archive) nor fails for want of one."""

from __future__ import annotations

from pathlib import Path

from offset_expiry.jvm_cds import ArchiveMode, ArchivePlan, finish, java_options, key, plan, release_version

CACHE = Path("/cache/spark-cds")


def test_an_existing_archive_is_mapped_and_the_jvm_may_refuse_it() -> None:
    p = plan(True, CACHE, "4.3.0-17.0.15", exists=True, writable=True, pid=7)
    assert p.mode is ArchiveMode.USE
    assert java_options(p) == ["-XX:SharedArchiveFile=/cache/spark-cds/4.3.0-17.0.15.jsa", "-Xshare:auto",
                               "-Xlog:cds=off,cds+dynamic=off"]


def test_a_missing_archive_is_written_under_a_name_of_this_process() -> None:
    p = plan(True, CACHE, "4.3.0-17.0.15", exists=False, writable=True, pid=7)
    assert p.mode is ArchiveMode.WRITE
    assert p.pending == CACHE / "4.3.0-17.0.15.jsa.7.tmp"
    assert java_options(p) == ["-XX:ArchiveClassesAtExit=/cache/spark-cds/4.3.0-17.0.15.jsa.7.tmp",
                               "-Xlog:cds=off,cds+dynamic=off"]


def test_no_archive_without_a_writable_cache_a_java_version_or_when_disabled() -> None:
    cases = [plan(True, CACHE, "k", exists=False, writable=False, pid=1),
             plan(True, CACHE, None, exists=False, writable=True, pid=1),
             plan(True, None, "k", exists=False, writable=True, pid=1),
             plan(False, CACHE, "k", exists=True, writable=True, pid=1)]
    assert [(p.mode, java_options(p)) for p in cases] == [(ArchiveMode.OFF, [])] * 4
    assert "KOO_SPARK_CDS=0" in cases[3].reason


def test_the_key_changes_with_spark_and_the_jvm_build_and_is_a_file_name() -> None:
    assert key("4.3.0", "17.0.15+6-Debian-1deb12u1") == "4.3.0-17.0.15+6-Debian-1deb12u1"
    assert key("4.3.0", "17.0.15") != key("4.3.1", "17.0.15") != key("4.3.1", "21.0.2")
    assert "/" not in key("4.3.0/x", "17 ea")


def test_the_jvm_build_comes_from_the_release_file() -> None:
    release = 'IMPLEMENTOR="Debian"\nJAVA_RUNTIME_VERSION="17.0.15+6-Debian-1deb12u1"\nJAVA_VERSION="17.0.15"\n'
    assert release_version(release) == "17.0.15+6-Debian-1deb12u1"
    assert release_version('JAVA_VERSION="21.0.2"\n') == "21.0.2"
    assert release_version("garbage") is None


def test_finish_keeps_only_an_archive_the_jvm_wrote(tmp_path: Path) -> None:
    (tmp_path / "k.jsa.1.tmp").write_bytes(b"archive")
    written = ArchivePlan(ArchiveMode.WRITE, tmp_path / "k.jsa", "", pending=tmp_path / "k.jsa.1.tmp")
    assert finish(written) and (tmp_path / "k.jsa").read_bytes() == b"archive"
    (tmp_path / "e.jsa.1.tmp").write_bytes(b"")
    empty = ArchivePlan(ArchiveMode.WRITE, tmp_path / "e.jsa", "", pending=tmp_path / "e.jsa.1.tmp")
    assert not finish(empty) and sorted(p.name for p in tmp_path.iterdir()) == ["k.jsa"]
    assert not finish(ArchivePlan(ArchiveMode.WRITE, tmp_path / "m.jsa", "", pending=tmp_path / "m.jsa.1.tmp"))
    assert not finish(ArchivePlan(ArchiveMode.USE, tmp_path / "k.jsa", ""))
