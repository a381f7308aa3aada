"""The Kafka error codes the group coordinator answers with (clients' `Errors.java`).

`GroupError` plays the part of Kafka's `ApiException`: validation raises it, the operation turns it
into the error code of the response, exactly where Kafka's coordinator catches its exceptions.
"""

from __future__ import annotations

from enum import IntEnum


class Error(IntEnum):
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    UNSUPPORTED_VERSION = 35
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    STALE_MEMBER_EPOCH = 113


class GroupError(Exception):
    """A request-level refusal carrying the Kafka error code (and, like Kafka's exceptions, a message)."""

    def __init__(self, error: Error, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message
