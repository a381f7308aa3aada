"""The builders write what Kafka's coordinator writes (GroupCoordinatorRecordHelpers)."""

from __future__ import annotations

import pytest

from kafka_offsets_model.codec import (
    CodecError,
    consumer_group,
    decode_record,
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
)


def test_offset_commit_uses_v3_and_v1_only_with_an_expire_timestamp() -> None:
    plain = decode_record(*offset_commit("g", "t", 0, offset=5, commit_timestamp=9, leader_epoch=2))
    expiring = decode_record(*offset_commit("g", "t", 0, offset=5, commit_timestamp=9, expire_timestamp=99))
    assert (plain["keyVersion"], plain["valueVersion"]) == (1, 3)
    assert plain["value"] == {"offset": 5, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 9}
    assert (expiring["valueVersion"], expiring["value"]["expireTimestamp"]) == (1, 99)
    assert "leaderEpoch" not in expiring["value"]


def test_offset_commit_can_write_kafka_4_1s_v4_with_a_topic_id() -> None:
    rec = decode_record(
        *offset_commit(
            "g", "t", 0, offset=5, commit_timestamp=9, value_version=4, topic_id="q5Ey2vjxS3u_1Ve8Xh0kzg"
        )
    )
    assert rec["valueVersion"] == 4 and rec["value"]["topicId"] == "q5Ey2vjxS3u_1Ve8Xh0kzg"
    with pytest.raises(CodecError, match="v4"):
        offset_commit("g", "t", 0, offset=5, commit_timestamp=9, topic_id="q5Ey2vjxS3u_1Ve8Xh0kzg")


def test_group_metadata_uses_v3_and_tombstones_have_no_value() -> None:
    key, value = group_metadata(
        "g", protocol_type="consumer", generation=1, protocol=None, leader=None, current_state_timestamp=7
    )
    assert decode_record(key, value)["valueVersion"] == 3
    assert group_metadata_tombstone("g") == (key, None)
    assert offset_commit_tombstone("g", "t", 0)[1] is None


def test_a_kip848_group_is_its_epoch_members_regexes_and_assignments_in_value_v0() -> None:
    records = [
        decode_record(k, v)
        for k, v in consumer_group(
            "modern", {"m1": (["orders"], None), "m2": ([], "pay.*")}, {"pay.*": ["payments"]}, epoch=4, resolved_at=9
        )
    ]
    assert [(r["type"], r["key"]) for r in records] == [
        ("ConsumerGroupMetadata", {"GroupId": "modern"}),
        ("ConsumerGroupMemberMetadata", {"GroupId": "modern", "MemberId": "m1"}),
        ("ConsumerGroupMemberMetadata", {"GroupId": "modern", "MemberId": "m2"}),
        ("ConsumerGroupRegularExpression", {"GroupId": "modern", "RegularExpression": "pay.*"}),
        ("ConsumerGroupTargetAssignmentMetadata", {"GroupId": "modern"}),
        ("ConsumerGroupCurrentMemberAssignment", {"GroupId": "modern", "MemberId": "m1"}),
        ("ConsumerGroupCurrentMemberAssignment", {"GroupId": "modern", "MemberId": "m2"}),
    ]
    assert {r["valueVersion"] for r in records} == {0}
    epoch, m1, m2, regex, target, a1, _ = (r["value"] for r in records)
    assert epoch["Epoch"] == 4 and target["AssignmentEpoch"] == 4
    assert (m1["SubscribedTopicNames"], m1["SubscribedTopicRegex"]) == (["orders"], None)
    assert (m2["SubscribedTopicNames"], m2["SubscribedTopicRegex"]) == ([], "pay.*")
    assert (regex["Topics"], regex["Timestamp"]) == (["payments"], 9)
    assert (a1["MemberEpoch"], a1["PreviousMemberEpoch"], a1["State"]) == (4, 3, 0)  # Stable at the group's epoch


def test_a_kip848_group_without_members_is_its_epochs_alone() -> None:
    assert [decode_record(k, v)["type"] for k, v in consumer_group("idle", {}, epoch=2, resolved_at=0)] == [
        "ConsumerGroupMetadata",
        "ConsumerGroupTargetAssignmentMetadata",
    ]
