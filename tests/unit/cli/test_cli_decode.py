"""`kafka-offset-operator decode` through cli.main: the JSON shape of issue 2, and one-line
errors with exit code 2 for bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_offset_operator import cli
from kafka_offsets_model.codec import encode_record, group_metadata, offset_commit

KEY, VALUE = offset_commit(
    "billing", "orders", 0, offset=1200, commit_timestamp=1763700005000, leader_epoch=0
)
PROG = "kafka-offset-operator"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def decode(capsys: pytest.CaptureFixture[str], key: bytes, value: bytes | None = None) -> dict[str, Any]:
    argv = ["decode", "--key", key.hex()] + ([] if value is None else ["--value", value.hex()])
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    result: dict[str, Any] = json.loads(out)
    return result


def test_offset_commit_prints_the_record_shape_with_kafkas_field_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert decode(capsys, KEY, VALUE) == {
        "type": "OffsetCommit",
        "keyVersion": 1,
        "key": {"group": "billing", "topic": "orders", "partition": 0},
        "valueVersion": 3,
        "value": {"offset": 1200, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1763700005000},
    }


def test_expire_timestamp_of_a_v1_value(capsys: pytest.CaptureFixture[str]) -> None:
    key, value = offset_commit(
        "audit", "orders", 0, offset=7, commit_timestamp=1, expire_timestamp=86_400_001
    )
    rec = decode(capsys, key, value)
    assert (rec["valueVersion"], rec["value"]["expireTimestamp"]) == (1, 86_400_001)


def test_a_key_alone_is_a_tombstone(capsys: pytest.CaptureFixture[str]) -> None:
    rec = decode(capsys, KEY)
    assert (rec["valueVersion"], rec["value"]) == (None, None)


def test_group_metadata_shows_members_with_decoded_subscription_and_assignment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    member = {
        "memberId": "billing-1-5f0c",
        "groupInstanceId": "billing-a",
        "clientId": "billing-1",
        "clientHost": "/10.0.0.7",
        "rebalanceTimeout": 300000,
        "sessionTimeout": 45000,
        "subscription": {"version": 1, "topics": ["orders"], "userData": None, "ownedPartitions": []},
        "assignment": {
            "version": 0,
            "partitions": [{"topic": "orders", "partitions": [0, 1]}],
            "userData": None,
        },
    }
    key, value = group_metadata(
        "billing", protocol_type="consumer", generation=3, protocol="range", leader="billing-1-5f0c",
        current_state_timestamp=1763700000000, members=[member],
    )  # fmt: skip
    rec = decode(capsys, key, value)
    assert rec["type"] == "GroupMetadata" and rec["key"] == {"group": "billing"}
    v = rec["value"]
    assert list(v) == ["protocolType", "generation", "protocol", "leader", "currentStateTimestamp", "members"]
    assert v["members"] == [member]
    assert v["members"][0]["assignment"]["partitions"] == [{"topic": "orders", "partitions": [0, 1]}]


def test_kip_848_records_use_upper_camel_names_and_base64_uuids(capsys: pytest.CaptureFixture[str]) -> None:
    key, value = encode_record({
        "type": "ConsumerGroupCurrentMemberAssignment", "keyVersion": 8, "key": {"GroupId": "g", "MemberId": "m"},
        "valueVersion": 0, "value": {"MemberEpoch": 3, "PreviousMemberEpoch": 2, "State": 0,
                                     "AssignedPartitions": [{"TopicId": "q5Ey2vjxS3u_1Ve8Xh0kzg", "Partitions": [1]}],
                                     "PartitionsPendingRevocation": []},
    })  # fmt: skip
    assert value is not None
    rec = decode(capsys, key, value)
    assert rec["type"] == "ConsumerGroupCurrentMemberAssignment"
    assert rec["value"]["AssignedPartitions"] == [{"TopicId": "q5Ey2vjxS3u_1Ve8Xh0kzg", "Partitions": [1]}]


def test_bytes_and_unsupported_records_print_as_hex(capsys: pytest.CaptureFixture[str]) -> None:
    key = bytes.fromhex("0011000167")  # StreamsGroupMetadata, GroupId "g"
    rec = decode(capsys, key, bytes.fromhex("0000cafe"))
    assert rec == {
        "type": "StreamsGroupMetadata", "keyVersion": 17, "key": {"GroupId": "g"},
        "valueVersion": 0, "value": {"_raw": "cafe"}, "unsupported": True,
    }  # fmt: skip


def test_hex_may_have_a_0x_prefix_and_spaces(capsys: pytest.CaptureFixture[str]) -> None:
    spaced = " ".join(KEY.hex()[i : i + 2] for i in range(0, len(KEY.hex()), 2))
    code, out, _ = run(capsys, "decode", "--key", "0x" + spaced, "--value", VALUE.hex().upper())
    assert code == 0 and json.loads(out)["value"]["offset"] == 1200


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["decode", "--key", "00zz"], "--key: 'z' at character 3 is not a hex digit"),
        (["decode", "--key", KEY.hex(), "--value", "000"], "--value: odd number of hex digits (3)"),
        (["decode", "--key", "0001000367"], "cannot decode: key byte 4: truncated: OffsetCommitKey.group"),
        (["decode", "--key", KEY.hex(), "--value", VALUE.hex()[:-4]], "cannot decode: value byte"),
        (["decode", "--key", KEY.hex(), "--value", "0009" + VALUE.hex()[4:]],
         "cannot decode: value byte 0: unknown OffsetCommitValue version 9 (known versions 0..4)"),
        (["decode", "--key", "0063" + KEY.hex()[4:]], "cannot decode: key byte 0: unknown record type 99"),
        (["decode", "--key", ""], "cannot decode: key byte 0: truncated: record type"),
        (["decode"], "the following arguments are required: --key"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code, out, err = run(capsys, *argv)
    except SystemExit as exit_:  # argparse's own usage errors leave through SystemExit
        code, (out, err) = int(str(exit_.code)), capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(PROG) and message in err
    assert "Traceback" not in err


def test_bad_hex_position_counts_the_0x_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "decode", "--key", "0x00zz")
    assert code == 2
    assert err.strip().endswith("'z' at character 5 is not a hex digit")


def test_member_bytes_kept_raw_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 11 item 9: a subscription that does not decode in full stays hex, with the reason, the byte
    and what Kafka's coordinator reads from it next to it."""
    member = {
        "memberId": "m1",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/10.0.0.9",
        "rebalanceTimeout": -1,
        "sessionTimeout": 45000,
        "subscription": bytes.fromhex("0000000000010006") + b"orders" + bytes.fromhex("0000000500"),
        "assignment": bytes.fromhex("000000000000ffffffff"),
    }
    key, value = group_metadata(
        "g",
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader="m1",
        current_state_timestamp=5,
        members=[member],
    )
    [shown] = decode(capsys, key, value)["value"]["members"]
    assert shown["subscription"] == member["subscription"].hex()
    assert shown["_subscriptionError"] == {
        "error": "truncated: ConsumerProtocolSubscription.userData needs 5 bytes, only 1 left",
        "byte": 18,
        "coordinator": "reader error at byte 14: Kafka fails to load the partition",
    }
    assert "_assignmentError" not in shown and shown["assignment"]["partitions"] == []
