"""Which policies' analyses share one scan of `__consumer_offsets` (issue 12).

N policies on one Kafka cluster would cost N full scans per interval; the Local engine instead runs one scan
for every request of the same cluster *and the same credentials* that arrives within a coalescing window
(an operator option, `--scan-share-window`), and evaluates each policy's rules on the shared facts.

Two plain decisions:

- `share_key`: what must be equal for two requests to share a scan. The cluster (its id when Kafka gave
  one, else the normalised bootstrap servers) and every security setting, secrets included (as a digest):
  a policy must never see data its own credentials could not read, so two policies with different users,
  passwords or certificates never share, even on the same cluster.
- `next_scan`: which waiting requests start a scan now. The oldest waiting request goes first (first come,
  first served across clusters); its scan starts once its window has passed since it arrived (or at once
  when the batch is full), and takes every request waiting with the same key, oldest first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..model.connection import ConnectionSettings

MAX_SHARE = 500  # policies in one scan: bounds the worker's per-group answers (one boolean per policy)


def normalise_servers(bootstrap_servers: str) -> str:
    """`b:9092, A:9092,a:9092` -> `a:9092,b:9092`: the same brokers however a spec lists them."""
    servers = {s.strip().lower() for s in bootstrap_servers.split(",") if s.strip()}
    return ",".join(sorted(servers))


def _digest(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    data = value.encode() if isinstance(value, str) else value
    return hashlib.sha256(data).hexdigest()


def share_key(settings: ConnectionSettings, cluster_id: str | None) -> str:
    """Equal for two requests exactly when they may share a scan. A digest: it holds no secret in clear."""
    tls = settings.tls
    parts = {
        "cluster": f"id:{cluster_id}" if cluster_id else f"servers:{normalise_servers(settings.bootstrap_servers)}",
        "protocol": settings.security_protocol.upper(),
        "mechanism": (settings.sasl_mechanism or "").upper(),
        "username": settings.username,
        "password": _digest(str.__str__(settings.password) if settings.password else None),
        "ca": _digest(tls.ca if tls else None),
        "cert": _digest(tls.cert if tls else None),
        "key": _digest(tls.key if tls else None),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Waiting:
    """A request waiting for a scan. `window_ms`: how long after its arrival it waits for others to join."""

    ticket: int
    key: str
    arrived_ms: int
    window_ms: int = 0


@dataclass(frozen=True)
class Plan:
    """`start`: the tickets of the scan to start now, oldest first (empty: none yet); otherwise look again
    after `wait_ms` (None: nothing waits)."""

    start: tuple[int, ...] = ()
    wait_ms: int | None = None


def next_scan(waiting: Sequence[Waiting], now_ms: int, max_share: int = MAX_SHARE) -> Plan:
    """The next scan to start, if any: the oldest request's cluster and credentials, every request waiting
    with that key (up to `max_share`), once the oldest's window has passed or the batch is full."""
    if not waiting:
        return Plan()
    order = sorted(waiting, key=lambda w: (w.arrived_ms, w.ticket))
    first = order[0]
    members = tuple(w.ticket for w in order if w.key == first.key)[: max(1, max_share)]
    due = first.arrived_ms + max(0, first.window_ms)
    if now_ms >= due or len(members) >= max_share:
        return Plan(start=members)
    return Plan(wait_ms=due - now_ms)
