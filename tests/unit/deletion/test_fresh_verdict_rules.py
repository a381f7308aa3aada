"""decisions/fresh_verdict.rederive: what must not be touched, from the group's records since the scan and
its state now (the integration tests in tests/integration/operator/test_fresh_verdict.py prove it over the
wire; these pin each rule)."""

from __future__ import annotations

from kafka_offset_operator.decisions.deletion_steps import DeletePlan, apply_verdict
from kafka_offset_operator.decisions.fresh_verdict import FreshFacts, FreshVerdict, baseline, rederive
from kafka_offset_operator.model.group_log import GroupRecord, RecordKind
from kafka_offset_operator.model.offsets import GroupInfo, Member

T0, T1 = ("t", 0), ("t", 1)
AT = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def commit(tp: tuple[str, int], offset: int, position: int = 10) -> GroupRecord:
    return GroupRecord(position, AT, RecordKind.COMMIT, "OffsetCommit", tp, offset, AT)


def facts(*records: GroupRecord, live: GroupInfo | None = None) -> FreshFacts:
    return FreshFacts(7, 5, "the scan (2026-01-01T00:00:00Z)", records, live)


def test_a_re_commit_of_the_same_offset_is_a_change() -> None:
    verdict = rederive([T0, T1], facts(commit(T0, 3)), {T0: "Standalone", T1: "Standalone"}, proposed=True)
    assert verdict.group is None and set(verdict.partitions) == {T0}
    assert verdict.partitions[T0] == ("t-0 was committed again at 2026-01-01T00:00:00Z (offset 3, __consumer_offsets-7 "
                                      "offset 10); Kafka keeps an offset alive from its newest commit, the same value "
                                      "included since the scan (2026-01-01T00:00:00Z)")


def test_a_commit_of_another_partition_matters_only_to_a_whole_group_change() -> None:
    other = commit(("u", 0), 1)
    assert rederive([T0], facts(other), {T0: "UnsubscribedTopic"}, proposed=True) == FreshVerdict()
    assert "u-0 was committed again" in (rederive([T0], facts(other), {}, proposed=True, whole_group=True).group or "")


def test_a_tombstone_says_the_offset_was_deleted() -> None:
    gone = GroupRecord(11, AT, RecordKind.OFFSET_TOMBSTONE, "OffsetCommit", T0)
    assert "offset was deleted" in rederive([T0], facts(gone), {}, proposed=False).partitions[T0]


def test_group_records_void_a_policy_s_verdict_but_not_a_hand_written_request() -> None:
    for kind, name in ((RecordKind.CLASSIC, "GroupMetadata"), (RecordKind.CONSUMER, "ConsumerGroupMemberMetadata"),
                       (RecordKind.STREAMS, "StreamsGroupTopology")):
        record = GroupRecord(12, AT, kind, name)
        why = rederive([T0], facts(record), {T0: "EmptyGroup"}, proposed=True).group
        assert why is not None and name in why and "2026-01-01T00:00:00Z" in why
        assert rederive([T0], facts(record), {}, proposed=False) == FreshVerdict()


def test_members_back_void_a_verdict_that_needed_an_empty_group() -> None:
    live = GroupInfo("g", "Stable", "consumer", "range", (Member("m", "c", "h", ("other",)),))
    for reason in ("EmptyGroup", "Standalone", "StaleGroup", "DeletedTopic"):
        assert "1 member(s) now" in (rederive([T0], facts(live=live), {T0: reason}, proposed=True).group or "")
    assert rederive([T0], facts(live=live), {T0: "UnsubscribedTopic"}, proposed=True) == FreshVerdict()
    assert rederive([T0], facts(live=live), {}, proposed=False) == FreshVerdict()


def test_a_subscription_now_including_the_topic_or_unreadable_keeps_the_partition() -> None:
    reasons = {T0: "UnsubscribedTopic"}
    subscribed = GroupInfo("g", "Stable", "consumer", "range", (Member("m", "c", "h", ("t",)),))
    assert "subscribes to t now" in rederive([T0], facts(live=subscribed), reasons, proposed=True).partitions[T0]
    unknown = GroupInfo("g", "Stable", "consumer", "range", (Member("m", "c", "h", None),))
    assert "cannot be read" in rederive([T0], facts(live=unknown), reasons, proposed=True).partitions[T0]
    rebalancing = GroupInfo("g", "PreparingRebalance", "consumer")
    assert "rebalancing" in rederive([T0], facts(live=rebalancing), reasons, proposed=True).partitions[T0]


def test_a_simple_group_that_is_no_longer_simple() -> None:
    live = GroupInfo("g", "Empty", "consumer")
    assert "no longer a simple group" in (rederive([T0], facts(live=live), {T0: "Standalone"}, proposed=True).group
                                          or "")


def test_the_verdict_moves_partitions_to_skipped_results() -> None:
    plan = apply_verdict(DeletePlan((T0, T1), ()), FreshVerdict(partitions={T1: "why"}))
    assert plan.to_delete == (T0,)
    assert plan.results == ({"topic": "t", "partition": 1, "status": "Skipped", "message": "not deleted: why"},)
    assert apply_verdict(DeletePlan((T0, T1), ()), FreshVerdict(group="all")).to_delete == ()


def test_the_baseline_is_the_earliest_known_position() -> None:
    assert baseline(5, 9) == 5 and baseline(None, 9) == 9 and baseline(5, None) == 5 and baseline(None, None) is None


def test_kip_848_and_streams_members_from_their_describe_apis() -> None:
    from dataclasses import replace

    from kafka_offset_operator.model.offsets import ModernGroup, ModernMember

    regex = ModernGroup("g", "consumer", "Stable", (ModernMember("m", "c", "h", ("other",), "t.*"),))
    unsubscribed = {T0: "UnsubscribedTopic"}
    found = rederive([T0], replace(facts(), modern=regex), unsubscribed, proposed=True).partitions[T0]
    assert "regular expression 't.*', which matches t" in found
    by_name = ModernGroup("g", "consumer", "Stable", (ModernMember("m", "c", "h", ("t",)),))
    assert "subscribes to t now" in rederive([T0], replace(facts(), modern=by_name), unsubscribed,
                                             proposed=True).partitions[T0]
    unreadable = ModernGroup("g", "consumer", "Stable", (ModernMember("m", "c", "h", (), "(?<x"),))
    assert T0 in rederive([T0], replace(facts(), modern=unreadable), unsubscribed, proposed=True).partitions
    other = ModernGroup("g", "consumer", "Stable", (ModernMember("m", "c", "h", ("u",), "v.*"),))
    assert rederive([T0], replace(facts(), modern=other), unsubscribed, proposed=True) == FreshVerdict()
    streams = ModernGroup("g", "streams", "Stable", (ModernMember("s", "c", "h"),), frozenset({"t"}))
    assert "topology reads t" in rederive([T0], replace(facts(), modern=streams), unsubscribed,
                                          proposed=True).partitions[T0]
    back = rederive([T0], replace(facts(), modern=other), {T0: "EmptyGroup"}, proposed=True).group
    assert back is not None and "ConsumerGroupDescribe: state Stable" in back
    assert rederive([T0], replace(facts(), modern=other), {T0: "EmptyGroup"}, proposed=False) == FreshVerdict()
