"""Kafka's request/response framing: size prefix, request header v1/v2, response header v0/v1.

Pure functions on bytes; the server does the I/O. The server reads the api key and version first
(`peek_api`), because they decide which header version applies (RequestHeader.parse in Kafka's clients
module does the same); the header itself is read with kafka-python's RequestHeader.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from kafka.protocol.api_header import RequestHeader as KafkaRequestHeader

_API = struct.Struct(">hh")
_CORRELATION = struct.Struct(">i")
_SIZE = struct.Struct(">i")


class MalformedRequest(ValueError):
    """The frame cannot be read as a Kafka request: Kafka closes such connections."""


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame's payload


def peek_api(payload: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(api key, api version): the first four bytes, which decide how to read the rest."""
    if len(payload) < _API.size:
        raise MalformedRequest(f"a {len(payload)}-byte request has no api key and version")
    key, version = _API.unpack_from(payload, 0)
    return int(key), int(version)


def parse_request_header(payload: bytes | bytearray | memoryview, *, flexible: bool) -> RequestHeader:
    """Request header v1 (client id), or v2 (plus tagged fields) for flexible API versions.

    The client id stays a classic int16-length string even in v2, as in Kafka's RequestHeader.json; a
    negative length is a null client id, as Kafka's generated reader has it.
    """
    api_key, api_version = peek_api(payload)
    data = io.BytesIO(payload)
    try:
        header = KafkaRequestHeader.decode(data, flexible=flexible)
    except (struct.error, ValueError, AssertionError) as exc:  # ValueError includes UnicodeDecodeError
        raise MalformedRequest(f"unreadable request header: {exc}") from None
    return RequestHeader(api_key, api_version, int(header.correlation_id), header.client_id, data.tell())


def response_header(correlation_id: int, *, flexible: bool) -> bytes:
    """Response header v0 (correlation id) or v1 (plus an empty tagged-field section)."""
    header = _CORRELATION.pack(correlation_id)
    return header + b"\x00" if flexible else header


def frame_size(header: bytes, body: bytes | bytearray | memoryview) -> bytes:
    return _SIZE.pack(len(header) + len(body))
