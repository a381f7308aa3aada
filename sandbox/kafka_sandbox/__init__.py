"""A Kafka wire-protocol simulator for tests, benchmarks and the demo. NOT a broker for production.

It speaks the Kafka protocol over TCP, runs a classic group coordinator with Kafka 4.x's rules and
writes every group/offset change to its own `__consumer_offsets` topic in Kafka's binary format.
"""

from .broker import SandboxBroker

__all__ = ["SandboxBroker"]
