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

Security (Kafka's ChannelBuilders / SslTransportLayer / SaslServerAuthenticator): on SSL and SASL_SSL
listeners the TLS handshake comes first (asyncio's server does it, with the listener's ssl context; a failed
handshake never reaches `_serve`). On SASL listeners each connection then runs `sasl.SaslAuthenticator`
until it completes: frames are limited to sasl.server.max.receive.size meanwhile, and a failed
authentication is answered after connection.failed.authentication.delay.ms and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from . import api_versions
from .context import BrokerContext
from .faults import FaultTable
from .registry import CloseConnection, RequestInfo, handler_for, set_current_request
from .sasl import SASL_MAX_RECEIVE_SIZE, SaslAuthenticator
from .wire import MalformedRequest, RequestHeader, frame_size, parse_request_header, peek_api, response_header

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18


class _Close(Exception):
    """Internal: drop this connection (after logging why at debug level)."""


@dataclass(frozen=True)
class Session:
    """A connection that got past the listener's security, as Kafka's principal builder sees it: for tests
    that check who connected how (`SandboxBroker.sessions()`)."""

    connection_id: int
    protocol: str  # the listener's security protocol
    tls_version: str | None  # e.g. "TLSv1.3"; None without TLS
    client_certificate: str | None  # the client certificate's subject, when it sent one
    principal: str  # User:<SASL name>, User:<certificate subject> or User:ANONYMOUS
    mechanism: str | None  # the SASL mechanism, None without SASL


# X500Principal.getName's (RFC 2253) short names for the attributes Python's ssl spells out
_RDN_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _subject(cert: Mapping[str, object] | None) -> str | None:
    """A peer certificate's subject as X500Principal.getName writes it ("CN=client,O=acme"): the principal
    Kafka's DefaultKafkaPrincipalBuilder gives an SSL client (ssl.principal.mapping.rules=DEFAULT)."""
    if not cert or not isinstance(cert.get("subject"), tuple):
        return None
    rdns = cert["subject"]
    assert isinstance(rdns, tuple)
    return ",".join(
        "+".join(f"{_RDN_NAMES.get(key, key)}={value}" for key, value in rdn) for rdn in reversed(rdns)
    )


class BrokerServer:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._server: asyncio.Server | None = None
        self._connections: dict[int, tuple[asyncio.Task[None] | None, asyncio.StreamWriter]] = {}
        self._ids = itertools.count(1)
        self._closing = False
        self.sessions: list[Session] = []
        self.failed_authentications: list[str] = []  # why each refused SASL exchange failed, in order
        self.faults = FaultTable()  # injected by tests (faults.py): consulted for every decoded request

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.ctx.host, self.ctx.port, ssl=self.ctx.security.ssl_context
        )
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
        host, port = str(peer[0]), int(peer[1])

        async def dispatch(payload: bytes) -> list[bytes | bytearray]:
            return await self._handle(payload, conn_id, host, port)

        security = self.ctx.security
        auth = SaslAuthenticator(security, dispatch) if security.uses_sasl else None
        if auth is None:
            self._record_session(conn_id, writer, None)
        try:
            while True:
                authenticating = auth is not None and not auth.complete
                limit = SASL_MAX_RECEIVE_SIZE if authenticating else self.ctx.config.max_request_bytes
                size_bytes = await reader.readexactly(4)
                size = int.from_bytes(size_bytes, "big", signed=True)
                if size < 0 or size > limit:
                    raise _Close(f"request size {size} is outside 0..{limit}")
                payload = await reader.readexactly(size)
                if auth is not None and authenticating:
                    out = await self._authenticate(auth, payload, writer)
                    if auth.complete:
                        self._record_session(conn_id, writer, auth)
                else:
                    out = await dispatch(payload)
                if out:
                    writer.writelines(out)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
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

    async def _authenticate(
        self, auth: SaslAuthenticator, payload: bytes, writer: asyncio.StreamWriter
    ) -> list[bytes | bytearray]:
        """One frame of the SASL exchange. A failure is answered after connection.failed.authentication.delay.ms
        and the connection closed (Selector's delayed close of a channel that failed authentication)."""
        try:
            reply = await auth.handle(payload)
        except CloseConnection as exc:
            raise _Close(str(exc)) from None
        if reply.failed is None:
            return reply.frames
        self.failed_authentications.append(reply.failed)
        await asyncio.sleep(self.ctx.config.failed_authentication_delay_ms / 1000)
        writer.writelines(reply.frames)
        await writer.drain()
        raise _Close(f"authentication failed: {reply.failed}")

    def _record_session(
        self, conn_id: int, writer: asyncio.StreamWriter, auth: SaslAuthenticator | None
    ) -> None:
        tls = writer.get_extra_info("ssl_object")
        cert = _subject(tls.getpeercert()) if isinstance(tls, ssl.SSLObject) else None
        if auth is not None and auth.principal is not None:
            principal = f"User:{auth.principal}"
        else:
            principal = f"User:{cert}" if cert else "User:ANONYMOUS"
        self.sessions.append(
            Session(
                conn_id,
                self.ctx.security.protocol,
                tls.version() if isinstance(tls, ssl.SSLObject) else None,
                cert,
                principal,
                auth.mechanism if auth is not None else None,
            )
        )

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
            response = await self.faults.handle(
                api_key, request, api_version, lambda: spec.handler(self.ctx, request, api_version)
            )
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
