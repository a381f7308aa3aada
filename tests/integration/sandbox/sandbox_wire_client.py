"""A bare Kafka-protocol socket client for tests that need exact requests, including broken ones.

Requests are encoded by kafka-python's own message classes; only deliberately malformed frames are
written by hand.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

TIMEOUT_S = 10.0


class WireClient:
    def __init__(self, port: int, client_id: str = "wire-test") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, request: Any, version: int) -> int:
        """Send a kafka-python request object at `version`; returns its correlation id."""
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        return self._correlation

    def request(self, request: Any, version: int) -> Any:
        """Send and decode the response (header checked for the correlation id)."""
        correlation = self.send(request, version)
        payload = self.read_frame()
        assert payload is not None, "the broker closed the connection instead of answering"
        response_class = request.header.get_response_class()
        response = response_class.decode(payload, version=version, header=True)
        assert response.header.correlation_id == correlation
        return response

    def read_frame(self) -> bytes | None:
        """One response payload (after the size), or None if the broker closed the connection."""
        size = self._read_exactly(4)
        if size is None:
            return None
        return self._read_exactly(struct.unpack(">i", size)[0])

    def closed_by_broker(self) -> bool:
        """True when the broker closes the connection (EOF) without sending anything."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _read_exactly(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)


def request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str, *, flexible: bool
) -> bytes:
    """A request header written by hand, for versions kafka-python refuses to encode."""
    raw_id = client_id.encode()
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(raw_id)) + raw_id
    return header + b"\x00" if flexible else header


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload
