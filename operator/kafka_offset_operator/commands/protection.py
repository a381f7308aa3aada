"""What `reset --execute` and `restore --execute` check before they change a group: that no
ConsumerGroupOffsetPolicy protects it on the cluster they reach (decisions/protection.py), read through the
kubeconfig they use for the backup store, in every namespace, as the operator does. `--ignore-protection`
skips the check, and says so loudly on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from ..adapters.kube import Kube

FLAG = "--ignore-protection"


def add_argument(p: Any) -> None:
    p.add_argument(FLAG, action="store_true",
                   help="change a group even while a ConsumerGroupOffsetPolicy protects it (said on stderr)")


def ignored(args: argparse.Namespace, group: str) -> bool:
    """--ignore-protection was given: said on stderr, in capitals."""
    if args.ignore_protection:
        print(f"WARNING: {FLAG}: ConsumerGroupOffsetPolicies' spec.protect.groups NOT checked for group {group}; "
              "a protected group may be changed", file=sys.stderr)
    return bool(args.ignore_protection)


def check(kube: Kube, args: argparse.Namespace, cluster_id: str | None, group: str) -> None:
    """UserError (one line, exit 2) when a policy protects `group` on `cluster_id`, may protect it (its
    cluster not recorded yet), or the policies cannot be read; nothing is changed then."""
    from ..adapters.kube import KubeError
    from ..decisions.protection import refusal
    from ..reconcilers.protection import ClusterProtection

    if ignored(args, group):
        return
    try:
        found = ClusterProtection(kube, None).check(cluster_id, group)
    except KubeError as exc:
        raise UserError(f"cannot read the ConsumerGroupOffsetPolicies to check that group {group} is not protected "
                        f"({exc}); nothing changed ({FLAG} skips the check)") from None
    if not found.allowed:
        raise UserError(f"{refusal(group, cluster_id, found)} ({FLAG} overrides)")
