"""The installed CLI as a user runs it: a child process, `python -m kafka_offset_operator`."""

from __future__ import annotations

import json
import subprocess
import sys

from kafka_offsets_model.codec import offset_commit

KEY, VALUE = offset_commit("billing", "orders", 3, offset=42, commit_timestamp=1763700000000, leader_epoch=1)


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_offset_operator", *argv], capture_output=True, text=True, timeout=60
    )


def test_decode_prints_one_json_object() -> None:
    done = cli("decode", "--key", KEY.hex(), "--value", VALUE.hex())
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {
        "type": "OffsetCommit",
        "keyVersion": 1,
        "key": {"group": "billing", "topic": "orders", "partition": 3},
        "valueVersion": 3,
        "value": {"offset": 42, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 1763700000000},
    }


def test_truncated_value_is_one_line_naming_the_byte_and_exit_2() -> None:
    done = cli("decode", "--key", KEY.hex(), "--value", VALUE.hex()[:20])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "kafka-offset-operator: error: cannot decode: value byte 10: truncated: "
        "OffsetCommitValue.leaderEpoch needs 4 bytes, only 0 left\n"
    )


def test_bad_hex_exits_2_without_a_traceback() -> None:
    # (Unknown versions and the other errors are covered in-process by tests/unit/cli.)
    done = cli("decode", "--key", "00g1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "kafka-offset-operator: error: --key: 'g' at character 3 is not a hex digit\n"
