"""The two CustomResourceDefinitions, built in one place so shared parts (the Kafka connection, durations,
conditions) are written once. `scripts/dev.sh generate` writes them into crds/ and into the Helm chart's
crds/; a test fails when either copy differs from what this module builds. `python -m
kafka_offset_operator.model.crds` prints them (`--write DIR` writes them into one directory).

The schemas are also what the operator checks specs against (`spec_schema`, offset_expiry.openapi), so the
CRD and the spec parsers cannot drift: a rule a schema can say (types, enums, patterns, required fields,
kafka or policyRef) is written here once; decisions/*_spec.py keep only what a schema cannot say. The
policy's analysis part (groups, rules, protect) comes from offset_expiry.policy_schema, which the analysis
checks policy files against.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from offset_expiry.openapi import Schema
from offset_expiry.policy_schema import duration, spec_properties

from .api import DELETION_KIND, DELETIONS, GROUP, POLICIES, POLICY_KIND, VERSION

INT32_MAX = 2**31 - 1  # Kafka's partition numbers, Spark's cores and instances
INT64_MAX = 2**63 - 1  # Kafka's offsets
DEFAULT_FINISHED_DELETIONS_LIMIT = 20  # a policy's finished OffsetDeletions kept (spec.history)
MAX_FINISHED_DELETIONS_LIMIT = 1000  # each is an object in etcd; a longer history belongs in the backups


def _secret_key_ref(description: str, keys: dict[str, tuple[str, str]]) -> Schema:
    props: Schema = {
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "Secret name, in the resource's own namespace.",
        }
    }
    for key, (default, about) in keys.items():
        props[key] = {"type": "string", "default": default, "description": about}
    return {"type": "object", "description": description, "required": ["name"], "properties": props}


KAFKA_CONNECTION: Schema = {
    "type": "object",
    "description": (
        "How to reach the Kafka cluster. Credentials are read from Secrets in the resource's own namespace and "
        "never copied into status, events or logs."
    ),
    "required": ["bootstrapServers"],
    "properties": {
        "bootstrapServers": {
            "type": "string",
            "title": "comma-separated host:port list",
            "pattern": r"^[^\s,]+:[0-9]+(,[^\s,]+:[0-9]+)*$",
            "description": "Comma-separated host:port list of brokers to bootstrap from.",
        },
        "securityProtocol": {
            "type": "string",
            "enum": ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
            "default": "PLAINTEXT",
            "description": "Kafka's security.protocol.",
        },
        "sasl": {
            "type": "object",
            "description": "SASL authentication, for SASL_PLAINTEXT and SASL_SSL.",
            "required": ["mechanism", "secretRef"],
            "properties": {
                "mechanism": {
                    "type": "string",
                    "enum": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
                    "description": "Kafka's sasl.mechanism.",
                },
                "secretRef": _secret_key_ref(
                    "Secret holding the SASL user name and password.",
                    {
                        "usernameKey": ("username", "Key of the user name in the Secret."),
                        "passwordKey": ("password", "Key of the password in the Secret."),
                    },
                ),
            },
        },
        "tls": {
            "type": "object",
            "description": "TLS settings, for SSL and SASL_SSL.",
            "properties": {
                "caSecretRef": _secret_key_ref(
                    "Secret holding the CA certificate(s) that sign the brokers' certificates.",
                    {"key": ("ca.crt", "Key of the PEM CA bundle in the Secret.")},
                ),
                "certSecretRef": _secret_key_ref(
                    "Secret holding a client certificate and key, for mutual TLS.",
                    {
                        "certKey": ("tls.crt", "Key of the PEM client certificate in the Secret."),
                        "keyKey": ("tls.key", "Key of the PEM private key in the Secret."),
                    },
                ),
            },
        },
    },
}

CONDITIONS: Schema = {
    "type": "array",
    "description": "Standard Kubernetes conditions: Ready, and Degraded when something needs attention.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string", "description": "Condition type, e.g. Ready or Degraded."},
            "status": {
                "type": "string",
                "enum": ["True", "False", "Unknown"],
                "description": "True, False or Unknown.",
            },
            "reason": {"type": "string", "description": "One CamelCase word for machines."},
            "message": {
                "type": "string",
                "description": "What happened, for people; names the field at fault.",
            },
            "lastTransitionTime": {
                "type": "string",
                "format": "date-time",
                "description": "When the status last changed.",
            },
            "observedGeneration": {
                "type": "integer",
                "description": "The generation the condition describes.",
            },
        },
    },
}

_SPARK_POD_PROPS: Schema = {
    "cores": {"type": "integer", "minimum": 1, "maximum": INT32_MAX, "default": 1, "description": "CPU cores."},
    "memory": {
        "type": "string",
        "title": "Spark memory size like 512m or 2g",
        "pattern": r"^[0-9]+[kmgtKMGT]?$",
        "default": "1g",
        "description": "JVM memory, in Spark's notation (512m, 2g).",
    },
}


def _policy_spec() -> Schema:
    return {
        "type": "object",
        "description": "What to analyse, by which rules, and what to do with the candidates.",
        "required": ["kafka"],
        "properties": spec_properties(
            kafka=KAFKA_CONNECTION,
            mode={
                "type": "string",
                "enum": ["DryRun", "Approve", "Auto"],
                "default": "DryRun",
                "description": (
                    "DryRun reports candidates (and what keep-alive would do) and writes nothing to Kafka, ever. "
                    "Approve creates OffsetDeletions that wait for spec.approved. Auto creates approved "
                    "OffsetDeletions. Every deletion backs up first. Keep-alive (protect.keepAlive) acts in "
                    "Approve and Auto only."
                ),
            },
            schedule={
                "type": "object",
                "default": {"interval": "1h"},
                "description": "When the analysis runs.",
                "properties": {
                    "interval": duration("How often the analysis runs, besides on every spec change.", "1h"),
                },
            },
            analysis={
                "type": "object",
                "default": {"engine": "Local"},
                "description": "Where the analysis of __consumer_offsets runs.",
                "properties": {
                    "engine": {
                        "type": "string",
                        "enum": ["Local", "SparkApplication"],
                        "default": "Local",
                        "description": (
                            "Local runs PySpark in local mode next to the operator. SparkApplication creates a "
                            "sparkoperator.k8s.io/v1beta2 SparkApplication (kubeflow spark-operator) that runs "
                            "the same job in the cluster."
                        ),
                    },
                    "brokerRetention": duration(
                        "The broker's offsets.retention.minutes, when the operator may not read broker configs "
                        "(DescribeConfigs). Read from the cluster when unset."
                    ),
                    "sparkApplication": {
                        "type": "object",
                        "description": "Settings for the SparkApplication engine.",
                        "properties": {
                            "image": {
                                "type": "string",
                                "title": "image reference (no spaces)",
                                "pattern": r"^\S+$",
                                "description": "An image with this project installed.",
                            },
                            "serviceAccount": {
                                "type": "string",
                                "title": "Kubernetes name (lower-case letters, digits, - and .)",
                                "pattern": r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
                                "description": "Service account of the driver.",
                            },
                            "driver": {
                                "type": "object",
                                "description": "Resources of the Spark driver pod.",
                                "properties": dict(_SPARK_POD_PROPS),
                            },
                            "executor": {
                                "type": "object",
                                "description": "Resources and count of the Spark executor pods.",
                                "properties": {
                                    **_SPARK_POD_PROPS,
                                    "instances": {
                                        "type": "integer",
                                        "minimum": 1,
                                        "maximum": INT32_MAX,
                                        "default": 1,
                                        "description": "Number of executors.",
                                    },
                                },
                            },
                        },
                    },
                },
            },
            history={
                "type": "object",
                "default": {"finishedDeletionsLimit": DEFAULT_FINISHED_DELETIONS_LIMIT},
                "description": (
                    "How many of the policy's OffsetDeletions are kept once they are done. The policy's "
                    "OffsetDeletions carry no ownerReference to it: deleting the policy deletes only those that "
                    "never started (no backup taken); every other one stays, with its results."
                ),
                "properties": {
                    "finishedDeletionsLimit": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_FINISHED_DELETIONS_LIMIT,
                        "default": DEFAULT_FINISHED_DELETIONS_LIMIT,
                        "description": (
                            "Finished OffsetDeletions of this policy to keep (Succeeded, PartiallyFailed, Failed, "
                            "Restored, with no restore pending), like a CronJob's successfulJobsHistoryLimit: "
                            "after each run the oldest beyond it are deleted. Their offset backups are stored "
                            "apart and stay."
                        ),
                    },
                },
            },
        ),
    }


def _count(description: str) -> Schema:
    return {"type": "integer", "minimum": 0, "description": description}


def _time(description: str) -> Schema:
    return {"type": "string", "format": "date-time", "description": description}


def _text(description: str) -> Schema:
    return {"type": "string", "description": description}


def _policy_status() -> Schema:
    return {
        "type": "object",
        "description": "Written by the operator.",
        "properties": {
            "observedGeneration": {
                "type": "integer",
                "description": "The metadata.generation this describes.",
            },
            "conditions": CONDITIONS,
            "lastRun": {
                "type": "object",
                "description": "The last completed analysis.",
                "properties": {
                    "startTime": _time("When the run started."),
                    "completionTime": _time("When the run ended."),
                    "engine": _text("Local or SparkApplication."),
                    "recordsScanned": _count("Records read from __consumer_offsets."),
                    "skippedRecords": _count("Corrupt or unknown records, counted and skipped."),
                    "groupsSeen": _count("Consumer groups found in the topic."),
                    "offsets": _count("Committed offsets found (after compaction)."),
                    "candidates": _count("Offsets the policy's rules make candidates for deletion."),
                    "candidatesByReason": {
                        "type": "object",
                        "description": "Candidates per reason (EmptyGroup, UnsubscribedTopic, Standalone, ...).",
                        "additionalProperties": {"type": "integer"},
                    },
                    "deletionsCreated": _count("OffsetDeletions this run created (Approve and Auto modes)."),
                },
            },
            "nextRunTime": _time("When the next scheduled run is due."),
            "topCandidates": {
                "type": "array",
                "description": "The groups with the most candidate offsets (at most 20).",
                "maxItems": 20,
                "items": {
                    "type": "object",
                    "properties": {
                        "group": _text("Consumer group id."),
                        "topics": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Candidate topics.",
                        },
                        "partitions": _count("Candidate partitions in the group."),
                        "reason": _text("Why they are candidates."),
                        "brokerExpiresAt": _time("When the broker itself would expire the first of them."),
                    },
                },
            },
        },
    }


def _topic_name() -> Schema:
    """Kafka's own rule (Topic.validate); "." and ".." are refused by decisions/deletion_spec.py."""
    return {
        "type": "string",
        "title": "Kafka topic name ([a-zA-Z0-9._-], at most 249 characters)",
        "pattern": r"^[a-zA-Z0-9._-]+$",
        "maxLength": 249,
        "description": "Topic name.",
    }


def _partition() -> Schema:
    return {"type": "integer", "minimum": 0, "maximum": INT32_MAX}


def _deletion_spec() -> Schema:
    return {
        "type": "object",
        "description": "Offsets of one consumer group to delete now, with a backup that restore can re-commit.",
        "required": ["group", "topics"],
        "oneOf": [{"required": ["kafka"]}, {"required": ["policyRef"]}],
        "properties": {
            "kafka": KAFKA_CONNECTION,
            "policyRef": {
                "type": "object",
                "description": "Use the Kafka connection of this ConsumerGroupOffsetPolicy (same namespace).",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "The policy's name."}
                },
            },
            "group": {"type": "string", "minLength": 1, "description": "The consumer group id."},
            "topics": {
                "type": "array",
                "minItems": 1,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "description": "Topics whose committed offsets to delete, each listed once.",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": _topic_name(),
                        "partitions": {
                            "type": "array",
                            "minItems": 1,
                            "description": "Partitions to delete; every committed partition when omitted.",
                            "items": _partition(),
                        },
                    },
                },
            },
            "expectedOffsets": {
                "type": "array",
                "description": (
                    "Committed offsets as a policy's scan saw them (set by the policy that created this deletion). "
                    "A partition whose committed offset differs when the deletion runs was committed since the "
                    "scan: it is Skipped, not deleted."
                ),
                "items": {
                    "type": "object",
                    "required": ["topic", "partition", "offset"],
                    "properties": {
                        "topic": _topic_name(),
                        "partition": {**_partition(), "description": "Partition."},
                        "offset": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": INT64_MAX,
                            "description": "The offset the scan saw.",
                        },
                    },
                },
            },
            "approved": {
                "type": "boolean",
                "default": False,
                "description": "Nothing is deleted until this is true.",
            },
            "restore": {
                "type": "boolean",
                "default": False,
                "description": (
                    "Re-commit the backed-up offsets (OffsetCommit). Kafka accepts this only while the group has "
                    "no active members; until then the operator retries and says so in a condition."
                ),
            },
        },
    }


def _deletion_status() -> Schema:
    partition_offset = {
        "type": "object",
        "properties": {
            "topic": _text("Topic name."),
            "partition": {"type": "integer", "description": "Partition."},
            "offset": {"type": "integer", "description": "The committed offset."},
            "leaderEpoch": {"type": "integer", "description": "The committed leader epoch (-1 if none)."},
            "metadata": _text("The commit's metadata string."),
        },
    }
    return {
        "type": "object",
        "description": "Written by the operator.",
        "properties": {
            "observedGeneration": {
                "type": "integer",
                "description": "The metadata.generation this describes.",
            },
            "phase": {
                "type": "string",
                "description": "Where the deletion is.",
                "enum": [
                    "Pending",
                    "AwaitingApproval",
                    "Running",
                    "Succeeded",
                    "PartiallyFailed",
                    "Failed",
                    "Restored",
                ],
            },
            "conditions": CONDITIONS,
            "startTime": _time("When the deletion started."),
            "completionTime": _time("When the deletion ended."),
            "restoreTime": _time("When the backup was re-committed."),
            "deleteStartTime": _time(
                "Set just before the OffsetDelete request is sent, so an operator that restarts mid-way knows the "
                "request may have been applied (see docs/offset-deletion.md)."
            ),
            "deleted": _count("Partitions whose offsets were deleted."),
            "failed": _count("Partitions Kafka refused to delete."),
            "restored": _count("Partitions whose backed-up offsets were committed back."),
            "results": {
                "type": "array",
                "description": "One entry per requested partition.",
                "items": {
                    "type": "object",
                    "properties": {
                        "topic": _text("Topic name."),
                        "partition": {"type": "integer", "description": "Partition."},
                        "status": {
                            "type": "string",
                            "enum": ["Deleted", "Failed", "Skipped", "NotCommitted"],
                            "description": "Deleted; Failed (see error); Skipped (committed since the scan); "
                            "NotCommitted (there was nothing to delete).",
                        },
                        "error": _text("Kafka's error name, e.g. GROUP_SUBSCRIBED_TO_TOPIC."),
                        "message": _text("What the error means here."),
                        "count": _count(
                            "For very large deletions, successful partitions of a topic are summed in one entry "
                            "without a partition: how many."
                        ),
                    },
                },
            },
            "restoreResults": {
                "type": "array",
                "description": "One entry per deleted partition, once a restore ran.",
                "items": {
                    "type": "object",
                    "properties": {
                        "topic": _text("Topic name."),
                        "partition": {"type": "integer", "description": "Partition."},
                        "status": {
                            "type": "string",
                            "enum": ["Restored", "Skipped", "Failed"],
                            "description": "Restored; Skipped (the group committed this partition since the "
                            "deletion, so it was left as is); Failed (see error).",
                        },
                        "error": _text("Kafka's error name, e.g. UNKNOWN_TOPIC_OR_PARTITION."),
                        "message": _text("What happened here."),
                    },
                },
            },
            "backup": {
                "type": "object",
                "description": (
                    "What was committed before the deletion, kept for restore. The backup itself is a ConfigMap "
                    "of the backup store (owned by nothing: it outlives this OffsetDeletion and its policy; "
                    "kubectl get configmaps -l kafkaoffsets.dev/backup=true); the status names it and, up to "
                    "1000 partitions, copies its offsets."
                ),
                "properties": {
                    "name": _text("The backup's ConfigMap, in this namespace."),
                    "takenAt": _time("When the backup was read (OffsetFetch)."),
                    "expiresAt": _time("When the backup store deletes the backup."),
                    "partitions": _count("How many partitions the backup holds."),
                    "offsets": {"type": "array", "items": partition_offset, "description": "The offsets."},
                },
            },
            "target": {
                "type": "object",
                "description": (
                    "What this deletion acts on, recorded at approval and frozen: the cluster (id from Kafka's "
                    "Metadata, and the connection, Secrets by reference only), the group and the approved "
                    "spec. The delete and a restore use it, never a later spec."
                ),
                "properties": {
                    "clusterId": _text("The Kafka cluster's id."),
                    "bootstrapServers": _text("Where the cluster was reached."),
                    "group": _text("The consumer group acted on."),
                    "kafka": {**KAFKA_CONNECTION,
                              "description": "The connection used (spec.kafka or the policy's), as approved."},
                    "spec": _approved_spec(),
                },
            },
        },
    }


def _approved_spec() -> Schema:
    """The deletion spec as approved: the same fields, without approved and restore, nothing required."""
    spec = _deletion_spec()
    properties = {k: v for k, v in spec["properties"].items() if k not in ("approved", "restore")}
    return {"type": "object", "properties": properties,
            "description": "The spec as approved (without approved and restore)."}


def _crd(
    kind: str,
    plural: str,
    short: list[str],
    description: str,
    spec: Schema,
    status: Schema,
    columns: list[Schema],
) -> dict[str, Any]:
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
                        *columns,
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
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
                    },
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
            _policy_spec(),
            _policy_status(),
            [
                {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                {"name": "Last Run", "type": "date", "jsonPath": ".status.lastRun.completionTime"},
                {"name": "Candidates", "type": "integer", "jsonPath": ".status.lastRun.candidates"},
                {
                    "name": "Ready",
                    "type": "string",
                    "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                },
            ],
        ),
        f"{DELETIONS}.yaml": _crd(
            DELETION_KIND,
            DELETIONS,
            ["od"],
            "A one-shot deletion of one consumer group's committed offsets (Kafka's OffsetDelete), with "
            "per-partition results, a backup of what was deleted, approval gating and restore.",
            _deletion_spec(),
            _deletion_status(),
            [
                {"name": "Group", "type": "string", "jsonPath": ".spec.group"},
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Deleted", "type": "integer", "jsonPath": ".status.deleted"},
                {"name": "Failed", "type": "integer", "jsonPath": ".status.failed"},
            ],
        ),
    }


def spec_schema(kind: str) -> Schema:
    """The openAPIV3Schema of `kind`'s spec, as its CRD carries it: what the spec parsers check against."""
    for crd in build_crds().values():
        if crd["spec"]["names"]["kind"] == kind:
            schema: Schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            return schema
    raise KeyError(kind)


def render(crd: dict[str, Any]) -> str:
    header = "# Generated by `scripts/dev.sh generate` from operator/kafka_offset_operator/model/crds.py: edit that file, then run it.\n"
    return header + yaml.safe_dump(crd, sort_keys=False, width=110)


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
