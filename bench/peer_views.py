"""When does a peer show every group with its committed offsets? Pure functions for bench/peers.py.

The bench knows what `__consumer_offsets` holds (the plain reader's decoded state): the expected view, each
group's newest committed offset per partition of a topic that exists (both peers drop or skip offsets of deleted
topics: KMinion has no watermarks for them, Burrow's storage no broker offsets). A peer is complete when its
own answer agrees with that view for every group: KMinion through its Prometheus text
(`kminion_kafka_consumer_group_topic_offset_sum`, one sample per group and topic), Burrow through its HTTP
API (the group list, then each group's partitions with the newest offset of its ring). Anything less (a group
missing, one partition behind) is incomplete, so the bench cannot stop its clock early.
"""

from __future__ import annotations

import json
import math
import re
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from prometheus_client.parser import text_string_to_metric_families

# group -> {(topic, partition): committed offset}
View = dict[str, dict[tuple[str, int], int]]

KMINION_OFFSET_SUM = "kminion_kafka_consumer_group_topic_offset_sum"


class OffsetFact(NamedTuple):
    """The part of a decoded record the view needs (offset_expiry.facts.Fact has these fields)."""

    group: str
    topic: str | None
    partition: int | None
    committed_offset: int | None


def expected_view(live: Iterable[OffsetFact | Any], partitions: Mapping[str, int]) -> View:
    """The newest committed offset of every (group, topic, partition) on an existing partition (`partitions`:
    topic -> its partition count), from the live (non-tombstone) facts a compacting reader kept; other facts
    (group metadata, members) are skipped."""
    view: View = {}
    for fact in live:
        if fact.committed_offset is None or fact.topic is None or fact.partition is None:
            continue
        if not 0 <= fact.partition < partitions.get(fact.topic, 0):
            continue
        view.setdefault(fact.group, {})[(fact.topic, fact.partition)] = fact.committed_offset
    return view


def topic_sums(view: View) -> dict[tuple[str, str], int]:
    """(group, topic) -> sum of its partitions' committed offsets: what KMinion exports per group and topic."""
    sums: dict[tuple[str, str], int] = {}
    for group, offsets in view.items():
        for (topic, _), offset in offsets.items():
            sums[(group, topic)] = sums.get((group, topic), 0) + offset
    return sums


def kminion_sums(metrics_text: str) -> dict[tuple[str, str], float]:
    """(group, topic) -> value of kminion_kafka_consumer_group_topic_offset_sum in KMinion's /metrics text.

    At 5M records the text has a line per group and topic in several families (~100k groups: 400k lines of this
    family, 80 MB in all), which prometheus_client's parser took 18-34 s for on a loaded 2-core machine (7 s
    for this family's lines alone): a poll that long blurs the time KMinion became complete. So the plain lines
    (KMinion's, labels in Go's sorted order) are read with one pattern (2 s), and only a line it does not take
    (escaped characters, other labels) goes to the parser."""
    prefix = KMINION_OFFSET_SUM + "{"
    out: dict[tuple[str, str], float] = {}
    for line in metrics_text.splitlines():
        if not line.startswith(prefix):
            continue
        plain = _KMINION_LINE.fullmatch(line)
        if plain is not None:
            out[(plain["group"], plain["topic"])] = float(plain["value"])
            continue
        for family in text_string_to_metric_families(line + "\n"):
            for sample in family.samples:
                out[(sample.labels["group_id"], sample.labels["topic_name"])] = sample.value
    return out


_KMINION_LINE = re.compile(
    re.escape(KMINION_OFFSET_SUM) + r'\{group_id="(?P<group>[^"\\]*)",topic_name="(?P<topic>[^"\\]*)"\} (?P<value>\S+)'
)


class Gap(NamedTuple):
    """How far a peer's answer is from the expected view: groups absent or not (yet) right, a few named."""

    groups: int
    missing: int
    wrong: int
    examples: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return self.missing == 0 and self.wrong == 0

    def describe(self) -> str:
        if self.complete:
            return f"all {self.groups:,} groups complete"
        return (f"{self.missing:,} of {self.groups:,} groups missing, {self.wrong:,} with other offsets "
                f"(e.g. {', '.join(self.examples)})")


class Settling:
    """Whether an incomplete peer has stopped: it lists every expected group and its answer has not changed for
    `settled_s` (Burrow on the history shapes: its decoder drops OffsetCommitValue v2, so a group whose newest
    commit is v2 shows the commit before it for good). A peer still missing a group is not settled: it may be
    reading yet."""

    def __init__(self, settled_s: float) -> None:
        self.settled_s = settled_s
        self.gap: Gap | None = None
        self.changed_at: float | None = None  # when the last new answer was seen

    def settled(self, gap: Gap, at: float) -> bool:
        """Record the answer seen at `at` (seconds); whether the peer has settled on it."""
        if gap != self.gap or self.changed_at is None:
            self.gap, self.changed_at = gap, at
            return False
        return gap.missing == 0 and at - self.changed_at >= self.settled_s


def kminion_gap(expected: Mapping[tuple[str, str], int], exported: Mapping[tuple[str, str], float]) -> Gap:
    """Compare the expected per-(group, topic) sums with KMinion's exported ones (floats: exact below 2**53)."""
    groups = {g for g, _ in expected}
    missing: set[str] = set()
    wrong: set[str] = set()
    for (group, topic), total in expected.items():
        got = exported.get((group, topic))
        if got is None:
            missing.add(group)
        elif not math.isclose(got, total, rel_tol=0, abs_tol=0.5):
            wrong.add(group)
    wrong -= missing
    return Gap(len(groups), len(missing), len(wrong), tuple(sorted(missing | wrong)[:3]))


def burrow_groups(consumer_list: Mapping[str, Any]) -> set[str]:
    """The groups of Burrow's GET /v3/kafka/<cluster>/consumer answer ({"consumers": [...]})."""
    if consumer_list.get("error"):
        raise ValueError(f"Burrow answered an error: {consumer_list.get('message')}")
    return set(consumer_list.get("consumers") or ())


def burrow_offsets(consumer_detail: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> newest offset, from GET /v3/kafka/<cluster>/consumer/<group>: each partition's
    "offsets" is Burrow's ring from the oldest slot to the newest, empty slots null; a partition with none
    stored yet is absent."""
    if consumer_detail.get("error"):
        raise ValueError(f"Burrow answered an error: {consumer_detail.get('message')}")
    out: dict[tuple[str, int], int] = {}
    for topic, partitions in (consumer_detail.get("topics") or {}).items():
        for partition, entry in enumerate(partitions or ()):
            stored = [o for o in (entry or {}).get("offsets") or () if o is not None]
            if stored:
                out[(topic, partition)] = int(stored[-1]["offset"])
    return out


def group_matches(expected: Mapping[tuple[str, int], int], shown: Mapping[tuple[str, int], int]) -> bool:
    """Every expected partition shows its committed offset (a peer may show more, e.g. partitions with offset
    history it keeps)."""
    return all(shown.get(key) == offset for key, offset in expected.items())


def burrow_gap(expected: View, listed: set[str], verified: set[str]) -> Gap:
    """Groups not listed yet count as missing; listed ones whose offsets did not match (yet) as wrong."""
    missing = set(expected) - listed
    wrong = (set(expected) & listed) - verified
    return Gap(len(expected), len(missing), len(wrong), tuple(sorted(missing | wrong)[:3]))


def report_summary(path: Path) -> dict[str, Any]:
    """The summary of the CLI's JSON report, from its first line alone (offset_expiry.report.write_json puts it
    first, then one offset per line): at 5M distinct the report is 1.2 GB, whose whole parse would take the bench
    many GB and a minute for one small object."""
    prefix = '{"summary": '
    with path.open(encoding="utf-8") as report:
        head = report.readline()
    if not head.startswith(prefix):
        raise ValueError(f"{path} does not start with its summary: {head[:200]!r}")
    summary: dict[str, Any] = json.JSONDecoder().raw_decode(head, len(prefix))[0]
    return summary


def exit_reason(returncode: int, peak_rss_mb: float) -> str:
    """Why a peer's row has no time when its process ended before a complete view. A peer killed by a signal
    says which, with its peak RSS: at 5M distinct KMinion holds ~16 GB and the kernel's out-of-memory killer
    ends it (dmesg names it), which is a result about the peer, not a defect of the bench."""
    peak = f", peak RSS {peak_rss_mb:,.0f} MB" if peak_rss_mb else ""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}{peak}"
    return f"exited with {returncode}{peak}"

