"""A reply that arrives later: JoinGroup and SyncGroup responses wait for the rest of the group.

Kafka parks these requests on CompletableFutures; this is the same idea without an event loop, so the
state machine stays synchronous and testable. The wire layer bridges it to an asyncio future.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    __slots__ = ("_callbacks", "_done", "_result")

    def __init__(self) -> None:
        self._done = False
        self._result: T | None = None
        self._callbacks: list[Callable[[T], None]] = []

    @property
    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if not self._done:
            raise RuntimeError("the reply is not complete yet")
        return self._result  # type: ignore[return-value]

    def complete(self, result: T) -> bool:
        """Sets the reply once; later completions are ignored, as CompletableFuture.complete does."""
        if self._done:
            return False
        self._done = True
        self._result = result
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(result)
        return True

    def add_done_callback(self, callback: Callable[[T], None]) -> None:
        if self._done:
            callback(self._result)  # type: ignore[arg-type]
        else:
            self._callbacks.append(callback)
