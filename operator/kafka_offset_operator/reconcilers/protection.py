"""Reading who protects what (decisions/protection.py decides): every ConsumerGroupOffsetPolicy in the
namespaces the reader sees, listed afresh for each check, so a protection added a moment ago counts."""

from __future__ import annotations

from ..adapters.kube import Kube
from ..decisions.protection import ProtectionVerdict, Protector, protector, verdict
from ..model.api import POLICIES


class ClusterProtection:
    """The policies of `namespaces` (None: all namespaces) as protectors of groups on their clusters."""

    def __init__(self, kube: Kube, namespaces: tuple[str, ...] | None) -> None:
        self.kube = kube
        self.namespaces = namespaces

    def protectors(self) -> list[Protector]:
        found = []
        for namespace in (None,) if self.namespaces is None else self.namespaces:
            for policy in self.kube.list_custom(POLICIES, namespace):
                p = protector(policy)
                if p is not None:
                    found.append(p)
        return found

    def check(self, cluster_id: str | None, group: str) -> ProtectionVerdict:
        """Raises KubeError when the policies cannot be listed: no change without knowing."""
        return verdict(self.protectors(), cluster_id, group)
