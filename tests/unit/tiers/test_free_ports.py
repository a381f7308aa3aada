"""Where the tests' free ports come from (demo/kafka_offset_demo/ports.py): below the kernel's ephemeral range,
read from /proc; the picks themselves on real sockets are in tests/integration/operator/test_free_ports_real.py."""

from __future__ import annotations

from pathlib import Path

from kafka_offset_demo.ports import ephemeral_floor


def test_the_ephemeral_floor_comes_from_the_kernel_or_linux_default(tmp_path: Path) -> None:
    ranges = tmp_path / "range"
    ranges.write_text("40000\t60999\n")
    assert ephemeral_floor(ranges) == 40000
    assert ephemeral_floor(tmp_path / "missing") == 32768
