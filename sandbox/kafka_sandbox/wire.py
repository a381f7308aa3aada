"""Kafka's request/response framing: size prefix, request header v1/v2, response header v0/v1.

Pure functions on bytes; the server does the I/O. Headers are parsed here rather than with kafka-python's
header classes because the server must read the api key and version before it knows which header version
applies (RequestHeader.parse in Kafka's clients module does the same).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_API = struct.Struct(">hh")
_CORRELATION = struct.Struct(">i")
_STRING_LENGTH = struct.Struct(">h")
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


def read_uvarint(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise MalformedRequest("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedRequest("varint longer than 5 bytes")


def parse_request_header(payload: bytes | bytearray | memoryview, *, flexible: bool) -> RequestHeader:
    """Request header v1 (client id), or v2 (plus tagged fields) for flexible API versions.

    The client id stays a classic int16-length string even in v2, as in Kafka's RequestHeader.json.
    """
    api_key, api_version = peek_api(payload)
    pos = _API.size
    try:
        (correlation_id,) = _CORRELATION.unpack_from(payload, pos)
        pos += _CORRELATION.size
        (length,) = _STRING_LENGTH.unpack_from(payload, pos)
        pos += _STRING_LENGTH.size
    except struct.error:
        raise MalformedRequest("truncated request header") from None
    client_id: str | None = None
    if length >= 0:
        if pos + length > len(payload):
            raise MalformedRequest("client id runs past the end of the request")
        try:
            client_id = bytes(payload[pos : pos + length]).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequest("client id is not UTF-8") from None
        pos += length
    elif length != -1:
        raise MalformedRequest(f"client id length {length}")
    if flexible:
        count, pos = read_uvarint(payload, pos)
        for _ in range(count):
            _tag, pos = read_uvarint(payload, pos)
            size, pos = read_uvarint(payload, pos)
            pos += size
            if pos > len(payload):
                raise MalformedRequest("tagged field runs past the end of the request header")
    return RequestHeader(api_key, api_version, int(correlation_id), client_id, pos)


def response_header(correlation_id: int, *, flexible: bool) -> bytes:
    """Response header v0 (correlation id) or v1 (plus an empty tagged-field section)."""
    header = _CORRELATION.pack(correlation_id)
    return header + b"\x00" if flexible else header


def frame_size(header: bytes, body: bytes | bytearray | memoryview) -> bytes:
    return _SIZE.pack(len(header) + len(body))
