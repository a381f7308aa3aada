"""The three CustomResourceDefinitions, assembled in one place. Each kind's spec, status and printer columns
come from its typed source, one file per kind in model/kinds/ (`schema_of`, `COLUMNS`), the parts the kinds
share from model/kinds/common.py. `scripts/dev.sh
generate` writes the CRDs into crds/ and into the Helm chart's crds/; a test fails when either copy differs
from what this module builds. `python -m kafka_offset_operator.model.crds` prints them (`--write DIR` writes
them into one directory).

The operator parses specs with the same typed classes after checking them against the same schemas
(`spec_schema`, kafka_offsets_model.openapi), so the CRD and the spec parsers cannot drift: a rule a schema
can say (types, enums, patterns, required fields, kafka or policyRef) is written once, in the kind's file;
decisions/*_spec.py keep only what a schema cannot say. The policy's analysis part (groups, rules, protect)
is typed in kafka_offsets_model.policy_schema, which the analysis checks policy files against.

Bounded input: every string a person writes has a maxLength and every list a maxItems, so the API server
refuses an absurd spec with the field named instead of storing it (or answering 413), and so the CEL rules
below stay within the API server's cost budget (it estimates a rule's cost from these bounds and refuses a
CRD whose rules could cost too much). The CEL rules (`x-kubernetes-validations`) are the API server's:
an OffsetDeletion is frozen once approved (transition rules), durations are capped at 10 years, a deletion
lists at most MAX_PARTITIONS partitions. The operator's own spec check leaves them out (`spec_schema`);
the durations' cap has its code twin in kafka_offsets_model.durations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from kafka_offsets_model.openapi import Schema, without_cel_rules
from kafka_offsets_model.typed_schema import schema_of

from .api import (
    CLUSTER_PEERINGS,
    DELETION_KIND,
    DELETIONS,
    GROUP,
    PEERING_GROUP,
    PEERING_KIND,
    PEERING_VERSION,
    POLICIES,
    POLICY_KIND,
    RESET_KIND,
    RESETS,
    VERSION,
)
from .kinds import consumer_group_offset_policy as policy
from .kinds import offset_deletion as deletion
from .kinds import offset_reset as reset
from .kinds.common import (
    Column,
    printer_columns,
)
from .kinds.consumer_group_offset_policy import OffsetPolicySpec, OffsetPolicyStatus
from .kinds.offset_deletion import DeletionSpec
from .kinds.offset_reset import OffsetResetSpec


def _crd(
    kind: str,
    plural: str,
    short: list[str],
    description: str,
    spec: Schema,
    status: Schema,
    columns: tuple[Column, ...],
) -> dict[str, Any]:
    root: Schema = {
        "type": "object",
        "description": description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short,
                "categories": ["kafka"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        *printer_columns(root, columns),
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def build_crds() -> dict[str, dict[str, Any]]:
    """File name in crds/ -> CRD."""
    return {
        f"{POLICIES}.yaml": _crd(
            POLICY_KIND,
            POLICIES,
            ["cgop"],
            "Retention rules for Kafka consumer-group offsets, applied on a schedule: the operator computes which "
            "offsets the broker will expire and which ones these rules make candidates for deletion, then "
            "reports them (DryRun), proposes OffsetDeletions (Approve) or deletes them (Auto).",
            schema_of(OffsetPolicySpec),
            schema_of(OffsetPolicyStatus),
            policy.COLUMNS,
        ),
        f"{DELETIONS}.yaml": _crd(
            DELETION_KIND,
            DELETIONS,
            ["od"],
            "A one-shot deletion of one consumer group's committed offsets (Kafka's OffsetDelete), with "
            "per-partition results, a backup of what was deleted, approval gating and restore.",
            schema_of(DeletionSpec),
            schema_of(deletion.OffsetDeletionStatus),
            deletion.COLUMNS,
        ),
        f"{RESETS}.yaml": _crd(
            RESET_KIND,
            RESETS,
            ["ors"],
            "A one-shot reset of one consumer group's committed offsets to a target (earliest, latest, a time, a "
            "shift, an offset, a backup, another group), like kafka-consumer-groups.sh --reset-offsets: a dry run "
            "that shows the plan until approved, then a backup, the admin OffsetCommit and per-partition results.",
            schema_of(OffsetResetSpec),
            schema_of(reset.OffsetResetStatus),
            reset.COLUMNS,
        ),
    }


PEERING_CRD_FILE = f"{CLUSTER_PEERINGS}.{PEERING_GROUP}.yaml"


def kopf_peering_crd() -> dict[str, Any]:
    """Kopf's ClusterKopfPeering CRD (as nolar/kopf's peering.yaml defines it): the resource of the peering
    that keeps two operator processes from acting together (docs/operator.md). Its status is free-form: one
    entry per live process (priority, lifetime, last seen), written by Kopf. Not one of our APIs, so it is
    not in `build_crds` (nor crds/): the install manifests and the chart carry it."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{CLUSTER_PEERINGS}.{PEERING_GROUP}"},
        "spec": {
            "scope": "Cluster",
            "group": PEERING_GROUP,
            "names": {"kind": PEERING_KIND, "plural": CLUSTER_PEERINGS, "singular": PEERING_KIND.lower()},
            "versions": [{
                "name": PEERING_VERSION, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
            }],
        },
    }


def spec_schema(kind: str) -> Schema:
    """The openAPIV3Schema of `kind`'s spec, as its CRD carries it, without its CEL rules: what the spec
    parsers check against. The rules are the API server's (an approved spec is frozen: a transition rule
    that needs the old object; durations are capped in code too, by kafka_offsets_model.durations)."""
    for crd in build_crds().values():
        if crd["spec"]["names"]["kind"] == kind:
            return without_cel_rules(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    raise KeyError(kind)


class _Dumper(yaml.SafeDumper):
    """Writes every schema out in full: no YAML anchors, which followed Python's object identity (a schema
    shared by two fields) rather than anything a reader of the CRD needs."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(crd: dict[str, Any]) -> str:
    header = "# Generated by `scripts/dev.sh generate` from operator/kafka_offset_operator/model/crds.py: edit that file, then run it.\n"
    return header + yaml.dump(crd, Dumper=_Dumper, sort_keys=False, width=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_offset_operator.model.crds")
    parser.add_argument("--write", metavar="DIR", help="write the CRD files into DIR (else print them)")
    args = parser.parse_args(argv)
    for name, crd in build_crds().items():
        if args.write:
            Path(args.write, name).write_text(render(crd))
        else:
            sys.stdout.write("---\n" + render(crd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
