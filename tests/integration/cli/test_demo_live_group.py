"""The demo's live group stays live as long as the story runs (the demo's --stay-up): its consumer polls, as a
live service does, so kafka-python's max.poll.interval.ms never runs out and the member never leaves. Here
that interval is 6 s (the broker's least session timeout) and the group is watched for three of them: a
consumer that did not poll would have left the group after the first. About 25 s: the story, then 18 s."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient

from kafka_offset_demo.story import Story, story_broker

INTERVAL_MS = 6_000


@pytest.mark.slow  # watches the group for 18 s
def test_the_live_group_keeps_its_member_past_the_max_poll_interval() -> None:
    with story_broker() as broker, Story(broker, max_poll_interval_ms=INTERVAL_MS):
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            seen = []
            end = time.monotonic() + 3 * INTERVAL_MS / 1000
            while time.monotonic() < end:
                group = admin.describe_groups(["orders-app"])["orders-app"]
                seen.append((group["group_state"], len(group["members"])))
                time.sleep(1)  # observing for a duration, not waiting for something
        finally:
            admin.close()
    assert len(seen) >= 10 and set(seen) == {("Stable", 1)}, seen
