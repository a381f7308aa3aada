"""The Kafka error codes the group coordinator answers with (clients' `Errors.java`).

`GroupError` plays the part of Kafka's `ApiException`: validation raises it, the operation turns it
into the error code of the response, exactly where Kafka's coordinator catches its exceptions.
"""

from __future__ import annotations

from ..error_codes import ErrorCode

# One table of Kafka's codes for the whole broker; the coordinator calls it Error for brevity.
Error = ErrorCode


class GroupError(Exception):
    """A request-level refusal carrying the Kafka error code (and, like Kafka's exceptions, a message)."""

    def __init__(self, error: Error, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message
