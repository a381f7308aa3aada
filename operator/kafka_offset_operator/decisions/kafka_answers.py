"""Kafka's answers explained for an OffsetDeletion's results (Kafka's own descriptions are terse)."""

from __future__ import annotations

EXPLAIN = {
    "GROUP_SUBSCRIBED_TO_TOPIC": "active members of the group consume this topic; Kafka deletes offsets only of "
    "topics the group does not subscribe to",
    "GROUP_ID_NOT_FOUND": "the consumer group does not exist",
    "NON_EMPTY_GROUP": "the group has active members (and, for OffsetDelete, does not use the consumer protocol); "
    "Kafka deletes its offsets, or the group, only while it is empty",
    "UNKNOWN_TOPIC_OR_PARTITION": "the topic or partition does not exist; Kafka refuses OffsetDelete for a deleted "
    "topic's offsets (KafkaApis.handleOffsetDeleteRequest): deleting the whole Empty group (spec.deleteGroup) "
    "removes them",
    "TOPIC_AUTHORIZATION_FAILED": "the operator's Kafka principal may not read this topic",
    "GROUP_AUTHORIZATION_FAILED": "the operator's Kafka principal may not delete this group's offsets",
    "UNKNOWN_MEMBER_ID": "the group has active members; Kafka accepts an admin OffsetCommit only when it has none",
    "INVALID_GROUP_ID": "Kafka does not accept this group id",
}


def answer_lost(call: str, partitions: int, why: str, then: str | None = None) -> str:
    """What a condition says when a request that changes offsets was sent and its answer lost (model.offsets.
    OUTCOME_UNKNOWN): neither success nor failure is claimed; the next attempt re-reads what Kafka has.
    `then`: what that attempt does, when not the OffsetDeletion's (an OffsetReset's OffsetCommit)."""
    then = then or {"OffsetDelete": "deletes only offsets still at their backed-up value",
                    "OffsetCommit": "commits only partitions that still have no offset",
                    "DeleteGroups": "deletes the group only if it still has exactly the backed-up offsets"}[call]
    return (f"the {call} of {partitions} offsets was sent but its answer was lost ({why}); Kafka may or may not "
            f"have applied it: the next attempt re-reads the group's offsets and {then}")
