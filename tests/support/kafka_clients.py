"""Real Kafka clients for tests (pytest puts tests/support on sys.path): the group shapes are the demo's
(kafka_offset_demo.clients, which the story plays with too, so both share one way round kafka-python's
rebalance stall); what a group has committed is read here."""

from __future__ import annotations

from kafka import KafkaAdminClient

from kafka_offset_demo.clients import GroupConsumer, admin_commit, empty_group, member

__all__ = ["GroupConsumer", "admin_commit", "committed", "empty_group", "member"]


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, as an OffsetFetch of the whole group answers them."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        raw = admin.list_group_offsets({group: None}).get(group, {})
        return {(tp.topic, tp.partition): oam.offset for tp, oam in raw.items()}
    finally:
        admin.close()
