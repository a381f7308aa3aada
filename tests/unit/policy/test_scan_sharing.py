"""decisions/scan_sharing.py: which analyses share one scan of __consumer_offsets (issue 12)."""

from __future__ import annotations

from kafka_offset_operator.decisions.scan_sharing import (
    Plan,
    Waiting,
    next_scan,
    normalise_servers,
    share_key,
)
from kafka_offset_operator.model.connection import ConnectionSettings, Masked, TlsFiles

SASL = ConnectionSettings("k:9093", "SASL_SSL", "SCRAM-SHA-512", "team-a", Masked("pw-a"))


def test_servers_are_normalised() -> None:
    assert normalise_servers(" B:9092, a:9092,A:9092 ,") == "a:9092,b:9092"


def test_same_cluster_and_credentials_share() -> None:
    assert share_key(SASL, "c1") == share_key(ConnectionSettings("other:9093", "sasl_ssl", "scram-sha-512", "team-a",
                                                                  Masked("pw-a")), "c1")
    # the cluster id unknown: the brokers, however listed
    plain = ConnectionSettings("b:9092,a:9092")
    assert share_key(plain, None) == share_key(ConnectionSettings("A:9092, B:9092"), None)


def test_different_credentials_never_share() -> None:
    key = share_key(SASL, "c1")
    for other in (
        ConnectionSettings("k:9093", "SASL_SSL", "SCRAM-SHA-512", "team-b", Masked("pw-a")),
        ConnectionSettings("k:9093", "SASL_SSL", "SCRAM-SHA-512", "team-a", Masked("pw-b")),
        ConnectionSettings("k:9093", "SASL_SSL", "PLAIN", "team-a", Masked("pw-a")),
        ConnectionSettings("k:9093", "SASL_SSL", "SCRAM-SHA-512", "team-a", Masked("pw-a"), TlsFiles(ca=b"ca")),
        ConnectionSettings("k:9093"),
    ):
        assert share_key(other, "c1") != key
    tls_a = ConnectionSettings("k:9093", "SSL", tls=TlsFiles(ca=b"ca", cert=b"cert-a", key=b"key-a"))
    tls_b = ConnectionSettings("k:9093", "SSL", tls=TlsFiles(ca=b"ca", cert=b"cert-b", key=b"key-b"))
    assert share_key(tls_a, "c1") != share_key(tls_b, "c1")


def test_different_clusters_never_share() -> None:
    assert share_key(SASL, "c1") != share_key(SASL, "c2")
    assert share_key(ConnectionSettings("a:9092"), None) != share_key(ConnectionSettings("b:9092"), None)


def test_the_key_holds_no_secret() -> None:
    assert "pw-a" not in share_key(SASL, "c1") and "team-a" not in share_key(SASL, "c1")


def test_nothing_waits() -> None:
    assert next_scan([], 0) == Plan()


def test_the_window_gathers_requests_of_one_key() -> None:
    waiting = [Waiting(1, "a", 1_000, 5_000), Waiting(2, "b", 2_000, 5_000), Waiting(3, "a", 4_000, 5_000)]
    assert next_scan(waiting, 3_000) == Plan(wait_ms=3_000)  # the oldest's window is not over
    assert next_scan(waiting, 6_000) == Plan(start=(1, 3))  # every request for its key, oldest first
    assert next_scan([w for w in waiting if w.ticket != 1], 6_000) == Plan(wait_ms=1_000)  # then b's turn


def test_oldest_first_across_clusters() -> None:
    waiting = [Waiting(7, "b", 500, 0), Waiting(3, "a", 900, 0), Waiting(9, "b", 950, 0)]
    assert next_scan(waiting, 1_000) == Plan(start=(7, 9))


def test_no_window_starts_at_once_with_whoever_waits() -> None:
    # requests queued behind a running scan still share the next one
    assert next_scan([Waiting(1, "a", 0), Waiting(2, "a", 10)], 10) == Plan(start=(1, 2))


def test_a_full_batch_starts_before_its_window_ends() -> None:
    waiting = [Waiting(i, "a", i, 60_000) for i in range(5)]
    assert next_scan(waiting, 10, max_share=3) == Plan(start=(0, 1, 2))
    assert next_scan(waiting, 10, max_share=10) == Plan(wait_ms=59_990)


def test_unshared_keys_scan_alone() -> None:
    # sharing off: the engine gives each request a key of its own
    assert next_scan([Waiting(1, "solo-1", 0), Waiting(2, "solo-2", 0)], 0) == Plan(start=(1,))
