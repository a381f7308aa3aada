"""The table of Kafka APIs the sandbox broker serves: one async handler per API key, with its version range.

Interface contract (the group coordinator's `group_apis.py` registers into it; keep it stable):

    from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse
    from .context import BrokerContext
    from .registry import api_handler, current_request

    @api_handler(JoinGroupRequest, 0, 9)
    async def handle_join_group(ctx: BrokerContext, request: Any, api_version: int) -> Any:
        client = current_request()          # client_id, client_host, correlation_id, ...
        return JoinGroupResponse(error_code=0, ...)

- Registration happens at import time of the handler's module; the broker imports the handler modules
  before it starts. ApiVersions advertises exactly what is registered (`registered()`), so an API is
  advertised if and only if its handler module was imported.
- `request` is the kafka-python request object decoded at `api_version` (its fields are the JSON spec's
  snake_case names). The handler returns a response object of the matching response class, or `None` to
  send no response (only Produce with acks=0 does that). The server encodes it at `api_version`, with the
  correlation id and the response header version the API/version needs: handlers never deal with headers.
- Handlers may await (long polls, JoinGroup waiting for a rebalance); the server handles requests of one
  connection one at a time and in order, as Kafka does, so a waiting handler only delays its own client.
- A handler that raises gets its client disconnected (logged at debug level); return Kafka error codes
  for anything a client could send on purpose. Raise `CloseConnection` to drop the client on purpose
  (Kafka does so for a failed acks=0 produce).
- Registering the same API key twice is an error, so two modules cannot silently fight over an API.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .context import BrokerContext

Handler = Callable[["BrokerContext", Any, int], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class ApiSpec:
    api_key: int
    name: str
    request_class: Any
    min_version: int
    max_version: int
    handler: Handler


@dataclass(frozen=True)
class RequestInfo:
    """Who sent the request being handled: Kafka's RequestContext, as far as handlers need it."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    client_port: int
    connection_id: int


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection instead of answering."""


_HANDLERS: dict[int, ApiSpec] = {}
_CURRENT: contextvars.ContextVar[RequestInfo] = contextvars.ContextVar("sandbox_request")


def api_handler(request_class: Any, min_version: int, max_version: int) -> Callable[[H], H]:
    """Register `handler` for the API of `request_class`, for versions min_version..max_version."""
    api_key = int(request_class.API_KEY)
    if not 0 <= min_version <= max_version <= int(request_class.max_version):
        raise ValueError(
            f"{request_class.name}: versions {min_version}..{max_version} are outside what kafka-python "
            f"can decode (0..{request_class.max_version})"
        )

    def register(handler: H) -> H:
        existing = _HANDLERS.get(api_key)
        if existing is not None and existing.handler is not handler:
            raise ValueError(f"{request_class.name} (api key {api_key}) already has a handler")
        _HANDLERS[api_key] = ApiSpec(
            api_key, str(request_class.name), request_class, min_version, max_version, handler
        )
        return handler

    return register


def handler_for(api_key: int) -> ApiSpec | None:
    return _HANDLERS.get(api_key)


def registered() -> list[ApiSpec]:
    """Every registered API, by api key: what ApiVersions advertises."""
    return [_HANDLERS[k] for k in sorted(_HANDLERS)]


def current_request() -> RequestInfo:
    """The request being handled by the calling task (set by the server before each handler call)."""
    return _CURRENT.get()


def set_current_request(info: RequestInfo) -> contextvars.Token[RequestInfo]:
    return _CURRENT.set(info)
