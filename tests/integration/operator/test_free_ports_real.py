"""The tests' servers get ports the kernel never hands to an outgoing connection (a CI run was lost to an
operator whose health port a client socket took between the probe and the bind): demo/kafka_offset_demo/ports.py
on the machine's real sockets (the floor's parsing is in tests/unit/tiers/test_free_ports.py)."""

from __future__ import annotations

import socket

from kafka_offset_demo.ports import ephemeral_floor, free_port


def test_a_free_port_lies_below_the_ephemeral_range_and_is_bindable() -> None:
    floor = ephemeral_floor()
    for _ in range(20):
        port = free_port()
        assert port < floor
        with socket.socket() as s:
            s.bind(("0.0.0.0", port))


def test_a_port_someone_listens_on_is_not_offered() -> None:
    floor = ephemeral_floor()
    held = []
    try:
        for port in range(20000, 20050):  # fill a stretch, then check no pick falls into a held one
            s = socket.socket()
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                s.close()
                continue
            s.listen()
            held.append(s)
        taken = {s.getsockname()[1] for s in held}
        assert floor > 20050
        assert all(free_port() not in taken for _ in range(300))
    finally:
        for s in held:
            s.close()
