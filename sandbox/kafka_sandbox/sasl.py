"""SASL on a SASL_PLAINTEXT or SASL_SSL listener: the exchange before a connection may send Kafka requests,
and the SaslHandshake/SaslAuthenticate answers after it.

Kafka (4.0 line): `clients/.../common/security/authenticator/SaslServerAuthenticator.java`
(`SaslServerAuthenticator.authenticate`, `handleKafkaRequest`, `handleHandshakeRequest`,
`handleApiVersionsRequest`, `handleSaslToken`); `PlainSaslServer.evaluateResponse`
(`.../security/plain/internals/`); `ScramSaslServer.evaluateResponse`, `ScramMessages`, `ScramFormatter`
(`.../security/scram/internals/`); `KafkaApis.handleSaslHandshakeRequest` / `handleSaslAuthenticateRequest`
for requests after authentication.

The exchange, as Kafka runs it per connection:
- ApiVersions (once, before the handshake; a retry after UNSUPPORTED_VERSION is allowed) and SaslHandshake
  are the only requests served; anything else closes the connection.
- SaslHandshake names a mechanism. An enabled one is answered NONE with the enabled list; v1 means the
  tokens come as SaslAuthenticate requests, v0 as bare size-prefixed tokens. Another mechanism is answered
  UNSUPPORTED_SASL_MECHANISM, and the connection is closed.
- SaslAuthenticate carries the mechanism's tokens until it completes; then the connection serves every API.
  A failure is answered SASL_AUTHENTICATION_FAILED after `connection.failed.authentication.delay.ms`, then
  the connection is closed. The error message is the mechanism's own for Kafka's SaslAuthenticationException
  (PLAIN's "Invalid username or password") and a fixed text for its SaslException (SCRAM's failures), which
  must not tell an unauthenticated client whether the user exists.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import kafka.errors as Errors
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from . import api_versions
from .context import BrokerContext
from .registry import CloseConnection, api_handler, handler_for
from .security import SCRAM_HASHES, ListenerSecurity, ScramCredential
from .wire import MalformedRequest, frame_size, parse_request_header, peek_api, response_header

log = logging.getLogger(__name__)

SASL_MAX_RECEIVE_SIZE = 524_288  # sasl.server.max.receive.size: frames before authentication are small

Frames = list[bytes | bytearray]


# -- after authentication, and on listeners without SASL (KafkaApis)


@api_handler(SaslHandshakeRequest, 0, 1)
async def handle_sasl_handshake(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    """KafkaApis.handleSaslHandshakeRequest: the connection is authenticated already (or needs no SASL)."""
    return SaslHandshakeResponse(error_code=Errors.IllegalSaslStateError.errno, mechanisms=[])


@api_handler(SaslAuthenticateRequest, 0, 2)
async def handle_sasl_authenticate(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    """KafkaApis.handleSaslAuthenticateRequest."""
    return SaslAuthenticateResponse(
        error_code=Errors.IllegalSaslStateError.errno,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )


# -- mechanisms (javax.security.sasl.SaslServer as Kafka implements them)


class SaslFailure(Exception):
    """The client failed to authenticate. `client_message` is what the client is told; None means Kafka's
    fixed text for a SaslException. The exception's own text is for the broker's debug log only."""

    def __init__(self, detail: str, client_message: str | None = None) -> None:
        super().__init__(detail)
        self.client_message = client_message


class PlainServer:
    """PlainSaslServer: one token, `authzid NUL authcid NUL password` (RFC 4616)."""

    mechanism = "PLAIN"

    def __init__(self, security: ListenerSecurity) -> None:
        self._security = security
        self.complete = False
        self.principal: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        # PlainSaslServer.split: at most three NUL-separated parts, missing ones empty, extra ones ignored.
        authzid, username, password = [*token.decode("utf-8", errors="replace").split("\0"), "", ""][:3]
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self._security.plain_password(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure(
                "wrong password or unknown user", "Authentication failed: Invalid username or password"
            )
        if authzid and authzid != username:
            message = (
                "Authentication failed: Client requested an authorization id that is different from username"
            )
            raise SaslFailure(message, message)
        self.complete = True
        self.principal = username
        return b""


# ScramMessages.AbstractScramMessage's patterns; Java's [\x01-\x7F&&[^=,]] written out for Python's re.
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_BASE64})"
)


def server_nonce() -> str:
    """The server's part of a SCRAM nonce (ScramFormatter.secureRandomString): printable, without ','."""
    return secrets.token_hex(16)


class ScramServer:
    """ScramSaslServer (RFC 5802, RFC 7677): client-first -> server-first -> client-final -> server-final."""

    def __init__(self, security: ListenerSecurity, mechanism: str) -> None:
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self._security = security
        self.complete = False
        self.principal: str | None = None
        self._first: tuple[str, str, str, ScramCredential] | None = None  # (bare, server-first, nonce, cred)

    def evaluate(self, token: bytes) -> bytes:
        message = token.decode("utf-8", errors="replace")
        if self._first is None:
            return self._client_first(message)
        return self._client_final(message)

    def _client_first(self, message: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise SaslFailure("Invalid SCRAM client first message format")
        saslname = match["saslname"].replace("=2C", ",")
        if "=" in saslname.replace("=3D", ""):  # ScramFormatter.username
            raise SaslFailure("Authentication failed: Credentials could not be obtained")
        username = saslname.replace("=3D", "=")
        if "tokenauth=true" in match["extensions"].lower():
            raise SaslFailure("Token Authentication failed: delegation tokens are not simulated")
        credential = self._security.scram_credential(username, self.mechanism)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and authzid != username:
            text = (
                "Authentication failed: Client requested an authorization id that is different from username"
            )
            raise SaslFailure(text, text)
        nonce = match["nonce"] + server_nonce()
        salt = base64.b64encode(credential.salt).decode()
        server_first = f"r={nonce},s={salt},i={credential.iterations}"
        self._first = (match["bare"], server_first, nonce, credential)
        self.principal = username
        return server_first.encode()

    def _client_final(self, message: str) -> bytes:
        assert self._first is not None
        bare, server_first, nonce, credential = self._first
        self._first = None  # ScramSaslServer.clearCredentials: one attempt per exchange
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise SaslFailure("Invalid SCRAM client final message format")
        if match["nonce"] != nonce:
            raise SaslFailure("Invalid client nonce in the final client message.")
        auth_message = f"{bare},{server_first},{match['without_proof']}".encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, self._hash)
        proof = base64.b64decode(match["proof"])
        if len(proof) != len(client_signature):
            raise SaslFailure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), credential.stored_key):
            raise SaslFailure("Invalid client credentials")
        self.complete = True
        server_signature = hmac.digest(credential.server_key, auth_message, self._hash)
        return b"v=" + base64.b64encode(server_signature)


Mechanism = PlainServer | ScramServer


def _mechanism_server(security: ListenerSecurity, mechanism: str) -> Mechanism:
    return PlainServer(security) if mechanism == "PLAIN" else ScramServer(security, mechanism)


# -- the exchange on one connection (SaslServerAuthenticator)


class SaslState(Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass
class Reply:
    """What to send back. `failed`: the authentication failed; the server sends `frames` after
    connection.failed.authentication.delay.ms and then closes the connection (Selector's delayed close)."""

    frames: Frames
    failed: str | None = None


@dataclass
class SaslAuthenticator:
    """One connection's SASL exchange. `dispatch` serves ApiVersions as the broker does after
    authentication (the same response, KIP-511's rules included)."""

    security: ListenerSecurity
    dispatch: Callable[[bytes], Awaitable[Frames]]
    state: SaslState = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
    mechanism: str | None = None
    principal: str | None = None
    _server: Mechanism | None = field(default=None, repr=False)
    _headers: bool = True  # SaslHandshake v1+: tokens come as SaslAuthenticate requests

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    async def handle(self, payload: bytes) -> Reply:
        """Serve one frame received before authentication completed. Raises CloseConnection to drop the
        client without an answer."""
        if self.state is SaslState.AUTHENTICATE and not self._headers:
            return self._bare_token(payload)
        try:
            api_key, version = peek_api(payload)
        except MalformedRequest as exc:
            raise CloseConnection(str(exc)) from None
        spec = handler_for(api_key)
        name = spec.name if spec is not None else f"api key {api_key}"
        if self.state is SaslState.AUTHENTICATE:
            if api_key != SaslAuthenticateRequest.API_KEY:
                self.state = SaslState.FAILED
                raise CloseConnection(f"Unexpected Kafka request of type {name} during SASL authentication.")
            return self._authenticate(payload, version)
        if api_key == ApiVersionsRequest.API_KEY:
            if self.state is not SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
                raise CloseConnection(
                    f"Unexpected ApiVersions request received during SASL state {self.state.value}"
                )
            frames = await self.dispatch(payload)
            if self._api_versions_accepted(payload, version):
                self.state = SaslState.HANDSHAKE_REQUEST
            return Reply(frames)
        if api_key == SaslHandshakeRequest.API_KEY:
            return self._handshake(payload, version)
        self.state = SaslState.FAILED
        raise CloseConnection(f"Unexpected Kafka request of type {name} during SASL handshake.")

    def _api_versions_accepted(self, payload: bytes, version: int) -> bool:
        """handleApiVersionsRequest moves on only after a full answer (not UNSUPPORTED_VERSION or
        INVALID_REQUEST, after which the client may ask again)."""
        spec = handler_for(ApiVersionsRequest.API_KEY)
        if spec is None or not spec.min_version <= version <= spec.max_version:
            return False
        _correlation, request = _decode(payload, ApiVersionsRequest, version)
        return api_versions.valid_client_software(request, version)

    def _handshake(self, payload: bytes, version: int) -> Reply:
        correlation_id, request = _decode(payload, SaslHandshakeRequest, version)
        enabled = list(self.security.mechanisms)
        if request.mechanism not in enabled:
            self.state = SaslState.FAILED
            response = SaslHandshakeResponse(
                error_code=Errors.UnsupportedSaslMechanismError.errno, mechanisms=enabled
            )
            return Reply(
                _frame(correlation_id, response, version), f"Unsupported SASL mechanism {request.mechanism}"
            )
        log.debug("SaslHandshake v%d: SASL/%s", version, request.mechanism)
        self.mechanism = request.mechanism
        self._server = _mechanism_server(self.security, request.mechanism)
        self._headers = version >= 1
        self.state = SaslState.AUTHENTICATE
        response = SaslHandshakeResponse(error_code=Errors.NoError.errno, mechanisms=enabled)
        return Reply(_frame(correlation_id, response, version))

    def _authenticate(self, payload: bytes, version: int) -> Reply:
        correlation_id, request = _decode(payload, SaslAuthenticateRequest, version)
        assert self._server is not None
        try:
            token = self._server.evaluate(bytes(request.auth_bytes))
        except SaslFailure as exc:
            self.state = SaslState.FAILED
            message = exc.client_message or (
                "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}"
            )
            response = SaslAuthenticateResponse(
                error_code=Errors.SaslAuthenticationFailedError.errno,
                error_message=message,
                auth_bytes=b"",
                session_lifetime_ms=0,
            )
            return Reply(_frame(correlation_id, response, version), f"SASL/{self.mechanism}: {exc}")
        self._maybe_complete()
        response = SaslAuthenticateResponse(
            error_code=Errors.NoError.errno, error_message=None, auth_bytes=token, session_lifetime_ms=0
        )
        return Reply(_frame(correlation_id, response, version))

    def _bare_token(self, payload: bytes) -> Reply:
        """After SaslHandshake v0: bare tokens both ways; a failure closes without an answer."""
        assert self._server is not None
        try:
            token = self._server.evaluate(payload)
        except SaslFailure as exc:
            self.state = SaslState.FAILED
            raise CloseConnection(f"SASL/{self.mechanism}: {exc}") from None
        self._maybe_complete()
        return Reply([frame_size(b"", token), token])

    def _maybe_complete(self) -> None:
        assert self._server is not None
        if self._server.complete:
            self.state = SaslState.COMPLETE
            self.principal = self._server.principal
            log.debug("authenticated %s with SASL/%s", self.principal, self.mechanism)


def _decode(payload: bytes, request_class: Any, version: int) -> tuple[int, Any]:
    """(correlation id, request) of a request of one of this module's APIs, at a registered version."""
    spec = handler_for(int(request_class.API_KEY))
    if spec is None or not spec.min_version <= version <= spec.max_version:
        raise CloseConnection(f"{request_class.name} v{version} is not supported")
    try:
        header = parse_request_header(payload, flexible=bool(request_class.flexible_version_q(version)))
        return header.correlation_id, request_class.decode(
            memoryview(payload)[header.body_offset :], version=version
        )
    except Exception as exc:  # as the server: a body that does not parse closes the connection
        raise CloseConnection(f"cannot parse {request_class.name} v{version}: {exc!r}") from None


def _frame(correlation_id: int, response: Any, version: int) -> Frames:
    body = response.encode(version=version)
    header = response_header(correlation_id, flexible=bool(response.flexible_version_q(version)))
    return [frame_size(header, body), header, body]
