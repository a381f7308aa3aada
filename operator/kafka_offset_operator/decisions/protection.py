"""`protect` as a property of the Kafka cluster (docs/safety.md, "protect means never, whoever asks").

A ConsumerGroupOffsetPolicy's `spec.protect.groups` protects those groups on the cluster its connection
reaches, identified by the cluster's id (recorded by each run in the policy's `status.kafkaCluster`), not
by whoever references the policy. Any change the operator makes to a group (an OffsetDeletion, inline or by
any policyRef, an OffsetReset, a restore) and the `reset`/`restore --execute` commands are refused while any
policy they can see protects the group on that cluster, in any namespace.

A policy whose cluster id is not known for its current spec (it never ran since it was created or changed)
and whose patterns match the group may protect it: the change waits (not refused for good, not carried out)
until that policy's run records its cluster, or someone with rights on that policy changes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_offsets_model.policy import Protection

from .conditions import generation_of


@dataclass(frozen=True)
class Protector:
    """What one policy says about protection: its patterns, and the cluster they apply to (None: not known for
    the policy's current generation)."""

    namespace: str
    name: str
    patterns: tuple[str, ...]
    cluster_id: str | None

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def protector(policy: Mapping[str, Any]) -> Protector | None:
    """A policy object as the API serves it; None when it protects nothing. Its recorded cluster counts only
    when recorded for its current generation (a changed spec.kafka may reach another cluster)."""
    meta = policy.get("metadata") or {}
    protect = ((policy.get("spec") or {}).get("protect") or {}).get("groups") or ()
    patterns = tuple(str(p) for p in protect if isinstance(p, str))
    if not patterns:
        return None
    recorded = (policy.get("status") or {}).get("kafkaCluster") or {}
    current = recorded.get("observedGeneration") == generation_of(policy) and recorded.get("id")
    return Protector(str(meta.get("namespace") or ""), str(meta.get("name") or ""), patterns,
                     str(recorded["id"]) if current else None)


@dataclass(frozen=True)
class ProtectionVerdict:
    """Who protects a group on a cluster: `by` (policy, pattern) for sure; `unknown` (policy, pattern) may,
    their cluster not being known yet."""

    by: tuple[tuple[str, str], ...] = ()
    unknown: tuple[tuple[str, str], ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.by and not self.unknown


def verdict(protectors: Iterable[Protector], cluster_id: str | None, group: str) -> ProtectionVerdict:
    """Every policy whose patterns match `group`, sorted: on `cluster_id` (or any cluster, when the target's id
    is unknown: a cluster without an id cannot be told apart) it protects; with no known cluster it may."""
    by: list[tuple[str, str]] = []
    unknown: list[tuple[str, str]] = []
    for p in protectors:
        pattern = next((x for x in p.patterns if Protection(groups=(x,)).protects(group)), None)
        if pattern is None:
            continue
        if p.cluster_id is None:
            unknown.append((p.ref, pattern))
        elif cluster_id is None or p.cluster_id == cluster_id:
            by.append((p.ref, pattern))
    return ProtectionVerdict(tuple(sorted(by)), tuple(sorted(unknown)))


def refusal(group: str, cluster_id: str | None, found: ProtectionVerdict) -> str:
    """One line for a status condition, an audit line or the CLI: who protects it, and how to lift it."""
    if found.by:
        ref, pattern = found.by[0]
        more = f" (and {len(found.by) - 1} more)" if len(found.by) > 1 else ""
        return (f"group {group} is protected on Kafka cluster {cluster_id or '(unknown id)'} by "
                f"ConsumerGroupOffsetPolicy {ref} (spec.protect.groups pattern {pattern!r}){more}; nothing changed")
    ref, pattern = found.unknown[0]
    return (f"group {group} may be protected: ConsumerGroupOffsetPolicy {ref} protects {pattern!r} and the Kafka "
            "cluster it reaches is not known yet (no run recorded its status.kafkaCluster); waiting for its run")
