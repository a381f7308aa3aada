"""What the OffsetReset suites share: a Kafka broker and the API an operator reconciles OffsetResets in, with
the reads and waits their tests make of both (test_offset_reset.py, test_offset_reset_pause.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_clients import committed
from kafka_under_test import Kafka
from operator_harness import Kube

RESETS = "offsetresets"


@dataclass
class ResetWorld:
    broker: Kafka
    kube: Kube

    @property
    def kafka(self) -> dict[str, Any]:
        """An OffsetReset's `spec.kafka` for this broker."""
        return {"bootstrapServers": self.broker.bootstrap_servers}

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        return committed(self.broker.bootstrap_servers, group)

    def status(self, name: str) -> dict[str, Any]:
        return self.kube.status(RESETS, name)

    def wait(self, name: str, predicate: Callable[[dict[str, Any]], bool], what: str,
             timeout: float = 90.0) -> dict[str, Any]:
        return self.kube.wait_status(RESETS, name, predicate, what, timeout)

    def phase(self, name: str, *phases: str) -> dict[str, Any]:
        return self.kube.wait_phase(RESETS, name, *phases)
