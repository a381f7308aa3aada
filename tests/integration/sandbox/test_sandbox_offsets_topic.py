"""`__consumer_offsets` is a real topic: records seeded into it are readable with `dump` over Fetch."""

from __future__ import annotations

import json
import subprocess
import sys

from kafka_offsets_model.codec import (
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
    partition_for,
)
from kafka_sandbox import SandboxBroker


def test_seeded_records_land_on_their_groups_partition_and_dump_decodes_them(broker: SandboxBroker) -> None:
    records = [
        (
            *offset_commit("billing", "orders", 0, offset=42, commit_timestamp=1_700_000_000_000),
            1_700_000_000_000,
        ),
        (
            *offset_commit("shipping", "orders", 1, offset=7, commit_timestamp=1_700_000_000_001),
            1_700_000_000_001,
        ),
        (*offset_commit_tombstone("billing", "orders", 0), 1_700_000_000_002),
        (*group_metadata_tombstone("shipping"), 1_700_000_000_003),
    ]
    bases = broker.append_offsets_records(records)
    assert set(bases) == {partition_for("billing", 4), partition_for("shipping", 4)}

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_offset_operator",
            "dump",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--from-beginning",
            "--no-follow",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    by_group: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for line in lines:
        by_group.setdefault(line["key"]["group"], []).append(line)
    billing, shipping = by_group["billing"], by_group["shipping"]
    assert [(r["type"], r["value"] and r["value"]["offset"]) for r in billing] == [
        ("OffsetCommit", 42),
        ("OffsetCommit", None),
    ]
    assert [r["offset"] for r in billing] == [0, 1]
    assert all(r["partition"] == partition_for("billing", 4) for r in billing)
    assert [r["type"] for r in shipping] == ["OffsetCommit", "GroupMetadata"]
    assert shipping[1]["value"] is None  # tombstone
    assert shipping[0]["timestamp"] == 1_700_000_000_001
