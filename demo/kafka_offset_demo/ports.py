"""A free TCP port for a server the tests or the demo start, chosen where no outgoing connection can take it.

Asking the kernel for port 0 and passing the number on races: the number comes from the ephemeral range
(/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default), which every outgoing connection on the
machine also draws from, so between the probe and the server's bind a client socket may take it. CI lost a
run to exactly that (an operator's health port, "address already in use"). Ports below the ephemeral range are
never handed out implicitly; two servers can only collide by both drawing the same random number, and the
probe bind catches one that is already listening.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_LOWEST = 20000  # above the well-known and registered ports most services use
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_floor(range_file: Path = _RANGE_FILE) -> int:
    """The lowest port the kernel hands out implicitly (32768 where the file is missing: Linux's default)."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port nobody listens on, outside the ephemeral range when there is room below it."""
    ceiling = ephemeral_floor()
    if ceiling - _LOWEST >= 1000:
        for _ in range(200):
            port = random.randrange(_LOWEST, ceiling)
            if _bindable(port):
                return port
    with socket.socket() as s:  # no room below the ephemeral range: the kernel's choice, as before
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True
