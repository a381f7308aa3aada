"""The Kafka errors the group coordinator answers with: kafka-python's classes (`kafka.errors`), which
play the part of the clients' `Errors.java` constants; `group_apis.py` puts their `errno` on the wire.

`GroupError` plays the part of Kafka's `ApiException`: validation raises it, the operation turns it
into the error code of the response, exactly where Kafka's coordinator catches its exceptions.
"""

from __future__ import annotations

from typing import Any, TypeAlias

# A Kafka error as the coordinator passes it around: one of kafka.errors' BrokerResponseError classes
# (Errors.NoError, Errors.UnknownMemberIdError, ...). kafka-python has no type hints, so to mypy its
# classes are Any; the alias says what is meant.
Error: TypeAlias = Any


class GroupError(Exception):
    """A request-level refusal carrying the Kafka error (and, like Kafka's exceptions, a message)."""

    def __init__(self, error: Error, message: str = "") -> None:
        super().__init__(message or error.message)
        self.error = error
        self.message = message
