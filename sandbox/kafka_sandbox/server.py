"""The TCP side of the sandbox broker: read frames, dispatch to registered handlers, write responses.

Connection rules follow Kafka's SocketServer (core/src/main/scala/kafka/network/SocketServer.scala):
- a frame whose size is negative or above socket.request.max.bytes closes the connection
  (NetworkReceive throws InvalidReceiveException);
- an unknown api key, or a version outside the advertised range, closes the connection
  (Processor.parseRequestHeader throws InvalidRequestException), except ApiVersions, which answers any
  version, falling back to a v0 UNSUPPORTED_VERSION response (RequestContext.parseRequest, KIP-511);
- a body that does not parse closes the connection (RequestContext.parseRequest);
- requests of one connection are handled one at a time, in order (the processor mutes the channel until
  the response is sent).
A bad request never affects other connections: each connection is its own task.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging

from . import api_versions
from .context import BrokerContext
from .registry import CloseConnection, RequestInfo, handler_for, set_current_request
from .wire import MalformedRequest, RequestHeader, frame_size, parse_request_header, peek_api, response_header

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18


class _Close(Exception):
    """Internal: drop this connection (after logging why at debug level)."""


class BrokerServer:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._server: asyncio.Server | None = None
        self._connections: dict[int, tuple[asyncio.Task[None] | None, asyncio.StreamWriter]] = {}
        self._ids = itertools.count(1)
        self._closing = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.ctx.host, self.ctx.port)
        self.ctx.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        self._closing = True
        if self._server is not None:
            self._server.close()
        tasks = []
        for task, writer in list(self._connections.values()):
            writer.close()
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn_id = next(self._ids)
        self._connections[conn_id] = (asyncio.current_task(), writer)
        peer = writer.get_extra_info("peername") or ("", 0)
        try:
            while True:
                size_bytes = await reader.readexactly(4)
                size = int.from_bytes(size_bytes, "big", signed=True)
                if size < 0 or size > self.ctx.config.max_request_bytes:
                    raise _Close(f"request size {size} is outside 0..{self.ctx.config.max_request_bytes}")
                payload = await reader.readexactly(size)
                out = await self._handle(payload, conn_id, str(peer[0]), int(peer[1]))
                if out:
                    writer.writelines(out)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except _Close as exc:
            log.debug("closing connection %d from %s: %s", conn_id, peer, exc)
        except asyncio.CancelledError:
            if not self._closing:
                raise
            # Shutting down: end quietly (asyncio's start_server logs connection tasks that end cancelled).
        except Exception:  # a bug in a handler must not take the broker down
            log.debug("closing connection %d from %s after an unexpected error", conn_id, peer, exc_info=True)
        finally:
            self._connections.pop(conn_id, None)
            # The coordinator keeps a member's session through clock jumps only while its client is
            # connected (coordinator/runtime.py), so it needs to hear about closed connections.
            self.ctx.coordinator.on_connection_closed(conn_id)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, payload: bytes, conn_id: int, host: str, port: int) -> list[bytes | bytearray]:
        """The response frame's parts, or [] when no response is due. Raises _Close to drop the client."""
        try:
            api_key, api_version = peek_api(payload)
        except MalformedRequest as exc:
            raise _Close(str(exc)) from None
        spec = handler_for(api_key)
        if spec is None:
            raise _Close(f"unknown or unsupported api key {api_key}")
        supported = spec.min_version <= api_version <= spec.max_version
        if not supported and api_key == API_VERSIONS_KEY and api_version > spec.max_version:
            # ApiVersions v3+ uses the flexible header, also for versions this broker does not know.
            header = self._header(payload, flexible=api_version >= 3)
            body = api_versions.unsupported_version_response().encode(version=0)
            return self._frame(header.correlation_id, body, flexible=False)
        if not supported:
            raise _Close(f"{spec.name} v{api_version} is outside v{spec.min_version}-v{spec.max_version}")
        request_class = spec.request_class
        header = self._header(payload, flexible=bool(request_class.flexible_version_q(api_version)))
        try:
            request = request_class.decode(memoryview(payload)[header.body_offset :], version=api_version)
        except Exception as exc:
            raise _Close(f"cannot parse {spec.name} v{api_version}: {exc!r}") from None
        set_current_request(
            RequestInfo(api_key, api_version, header.correlation_id, header.client_id, host, port, conn_id)
        )
        try:
            response = await spec.handler(self.ctx, request, api_version)
        except CloseConnection as exc:
            raise _Close(f"{spec.name}: {exc}") from None
        if response is None:
            return []
        body = response.encode(version=api_version)
        flexible = api_key != API_VERSIONS_KEY and bool(response.flexible_version_q(api_version))
        return self._frame(header.correlation_id, body, flexible=flexible)

    @staticmethod
    def _header(payload: bytes, *, flexible: bool) -> RequestHeader:
        try:
            return parse_request_header(payload, flexible=flexible)
        except MalformedRequest as exc:
            raise _Close(str(exc)) from None

    @staticmethod
    def _frame(correlation_id: int, body: bytes | bytearray, *, flexible: bool) -> list[bytes | bytearray]:
        header = response_header(correlation_id, flexible=flexible)
        return [frame_size(header, body), header, body]
