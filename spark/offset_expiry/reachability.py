"""The one connect check every command that talks to Kafka runs first (`analyze`, `dump`, the Spark job).

A plain TCP connect to each bootstrap address, with one timeout, before any Kafka client is built: a wrong
address fails in milliseconds (refused) or after CONNECT_TIMEOUT_S (a black hole) with the operating
system's reason, instead of after a client's bootstrap retries (kafka-python's KafkaConsumer retries for
its whole request timeout, 30 s, and then says only "Unable to bootstrap"). Light on purpose: socket only,
so `dump` does not load Spark or Arrow to use it.
"""

from __future__ import annotations

import socket

from kafka_offsets_model.errors import InputError

CONNECT_TIMEOUT_S = 10.0


class UnreachableError(InputError):
    """No bootstrap address accepted a TCP connection."""


def check_reachable(bootstrap_servers: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Returns at the first address that accepts a connection; otherwise raises UnreachableError with one
    line naming every address and why it failed."""
    problems = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return
        except ValueError:
            problems.append(f"{server.strip()!r} is not HOST:PORT")
        except TimeoutError:
            problems.append(f"{server.strip()}: no answer within {timeout_s:g}s")
        except OSError as exc:
            problems.append(f"{server.strip()}: {exc.strerror or exc}")
    if len(problems) == 1:
        problems = [problems[0].rpartition(": ")[2]]
    raise UnreachableError(f"cannot connect to Kafka at {bootstrap_servers}: {'; '.join(problems)}")
