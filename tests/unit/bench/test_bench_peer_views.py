"""bench/peer_views.py decides when KMinion and Burrow show every group with its committed offsets: if it said
"complete" too early, bench/peers.py would report a peer faster than it is. These pin its answers on the text
and JSON the peers serve (shapes taken from their output in a bench run)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from offset_expiry.report import write_json
from peer_views import (
    Gap,
    OffsetFact,
    burrow_gap,
    burrow_groups,
    burrow_offsets,
    exit_reason,
    expected_view,
    group_matches,
    kminion_gap,
    kminion_sums,
    report_summary,
    topic_sums,
)

FACTS = [
    OffsetFact("app-1", "orders-0", 0, 10),
    OffsetFact("app-1", "orders-0", 1, 20),
    OffsetFact("app-1", "orders-0", 9, 99),  # a partition the topic does not have
    OffsetFact("app-1", "gone", 0, 5),  # a deleted topic
    OffsetFact("app-2", "orders-0", 0, 7),
    OffsetFact("only-gone", "gone", 0, 1),
    OffsetFact("members", None, None, None),  # group metadata: no offset
]
PARTITIONS = {"orders-0": 8}

KMINION_METRICS = """\
# HELP kminion_kafka_consumer_group_topic_offset_sum The sum of all committed group offsets across all partitions in a topic
# TYPE kminion_kafka_consumer_group_topic_offset_sum gauge
kminion_kafka_consumer_group_topic_offset_sum{group_id="app-1",topic_name="orders-0"} 30
kminion_kafka_consumer_group_topic_offset_sum{group_id="app-2",topic_name="orders-0"} 7
# HELP kminion_kafka_consumer_group_topic_lag The number of messages a consumer group is lagging behind across all partitions in a topic
# TYPE kminion_kafka_consumer_group_topic_lag gauge
kminion_kafka_consumer_group_topic_lag{group_id="app-1",topic_name="orders-0"} 0
# HELP kminion_exporter_offset_consumer_records_consumed_total The number of offset records that have been consumed by the internal offset consumer
# TYPE kminion_exporter_offset_consumer_records_consumed_total counter
kminion_exporter_offset_consumer_records_consumed_total 1.2e+06
"""


def test_the_expected_view_keeps_offsets_of_existing_partitions_only() -> None:
    view = expected_view(FACTS, PARTITIONS)
    assert view == {"app-1": {("orders-0", 0): 10, ("orders-0", 1): 20}, "app-2": {("orders-0", 0): 7}}
    assert topic_sums(view) == {("app-1", "orders-0"): 30, ("app-2", "orders-0"): 7}


def test_kminion_is_complete_only_when_every_group_and_topic_has_its_sum() -> None:
    expected = topic_sums(expected_view(FACTS, PARTITIONS))
    assert kminion_sums(KMINION_METRICS) == {("app-1", "orders-0"): 30.0, ("app-2", "orders-0"): 7.0}
    assert kminion_gap(expected, kminion_sums(KMINION_METRICS)).complete

    before_ready = "\n".join(line for line in KMINION_METRICS.splitlines() if "offset_sum{" not in line) + "\n"
    gap = kminion_gap(expected, kminion_sums(before_ready))
    assert (gap.complete, gap.missing, gap.wrong) == (False, 2, 0)

    behind = KMINION_METRICS.replace('topic_name="orders-0"} 30', 'topic_name="orders-0"} 29')
    gap = kminion_gap(expected, kminion_sums(behind))
    assert (gap.complete, gap.missing, gap.wrong, gap.examples) == (False, 0, 1, ("app-1",))


def test_kminion_lines_the_fast_pattern_does_not_take_are_still_read() -> None:
    """Escaped label values and values in exponent form read as prometheus_client reads them."""
    odd = KMINION_METRICS + (
        'kminion_kafka_consumer_group_topic_offset_sum{group_id="a\\"b\\\\c",topic_name="orders-0"} 1.5e+09\n'
        'kminion_kafka_consumer_group_topic_offset_sum{group_id="app-3",topic_name="orders-0"} 2.5e+03\n'
    )
    sums = kminion_sums(odd)
    assert sums[('a"b\\c', "orders-0")] == 1.5e9
    assert sums[("app-3", "orders-0")] == 2500.0
    assert len(sums) == 4


def test_burrow_parses_its_list_and_the_newest_offset_of_each_ring() -> None:
    assert burrow_groups({"error": False, "message": "consumer list returned", "consumers": ["app-1", "app-2"]}) == {
        "app-1", "app-2"}
    detail = {
        "error": False,
        "message": "consumer detail returned",
        "topics": {
            "orders-0": [
                {"offsets": [{"offset": 3, "timestamp": 1, "lag": 0}, {"offset": 10, "timestamp": 2, "lag": 0}, None],
                 "owner": "", "client_id": ""},
                {"offsets": [None, None], "owner": "", "client_id": ""},  # nothing stored yet
            ]
        },
    }
    shown = burrow_offsets(detail)
    assert shown == {("orders-0", 0): 10}
    view = expected_view(FACTS, PARTITIONS)
    assert not group_matches(view["app-1"], shown)  # partition 1 not there yet
    assert group_matches(view["app-1"], {**shown, ("orders-0", 1): 20, ("orders-0", 2): 4})


def test_burrow_counts_unlisted_groups_as_missing_and_unverified_ones_as_wrong() -> None:
    view = expected_view(FACTS, PARTITIONS)
    assert burrow_gap(view, {"app-1"}, set()) == Gap(2, 1, 1, ("app-1", "app-2"))
    assert burrow_gap(view, {"app-1", "app-2", "only-gone"}, {"app-1", "app-2"}).complete


def test_an_error_answer_is_not_an_empty_view() -> None:
    for parse in (burrow_groups, burrow_offsets):
        try:
            parse({"error": True, "message": "cluster not found"})
        except ValueError as exc:
            assert "cluster not found" in str(exc)
        else:
            raise AssertionError(f"{parse.__name__} accepted an error answer")


def test_the_cli_report_summary_is_read_from_its_first_line(tmp_path: Path) -> None:
    """bench/peers.py reads the CLI's summary without parsing the report's offsets (1.2 GB at 5M distinct)."""
    summary = {"groups": 2, "offsets": 3, "byAction": {"Delete": 1, "Keep": 2}, "note": "a \"quoted\" {brace}"}
    for offsets in ([{"group": "a", "partition": 0}, {"group": "b", "partition": 1}], []):
        path = tmp_path / f"report-{len(offsets)}.json"
        with path.open("w", encoding="utf-8") as out:
            write_json(out, {"summary": summary, "offsets": offsets})
        assert report_summary(path) == summary


def test_a_peer_killed_by_a_signal_is_named_with_its_peak_memory() -> None:
    assert exit_reason(-9, 16_070.4) == "killed by SIGKILL, peak RSS 16,070 MB"
    assert exit_reason(2, 0.0) == "exited with 2"

