"""Kafka's answers explained for an OffsetDeletion's results (Kafka's own descriptions are terse)."""

from __future__ import annotations

EXPLAIN = {
    "GROUP_SUBSCRIBED_TO_TOPIC": "active members of the group consume this topic; Kafka deletes offsets only of "
    "topics the group does not subscribe to",
    "GROUP_ID_NOT_FOUND": "the consumer group does not exist",
    "NON_EMPTY_GROUP": "the group has active members and does not use the consumer protocol; Kafka deletes its "
    "offsets only while it is empty",
    "UNKNOWN_TOPIC_OR_PARTITION": "the topic or partition does not exist",
    "TOPIC_AUTHORIZATION_FAILED": "the operator's Kafka principal may not read this topic",
    "GROUP_AUTHORIZATION_FAILED": "the operator's Kafka principal may not delete this group's offsets",
    "UNKNOWN_MEMBER_ID": "the group has active members; Kafka accepts an admin OffsetCommit only when it has none",
    "INVALID_GROUP_ID": "Kafka does not accept this group id",
}
