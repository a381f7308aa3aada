"""The parts of the API every kind shares, written once: bounds, Kubernetes names, the Kafka connection
(spec.kafka of all three kinds), group ids, topic names, partitions and who asked and who approved. Each
kind's own file (offset_deletion.py, ...) and model/crds.py build on them.

Bounded input: every string a person writes has a maxLength and every list a maxItems, so the API server
refuses an absurd spec with the field named instead of storing it (or answering 413), and so the CEL rules
stay within the API server's cost budget (it estimates a rule's cost from these bounds and refuses a CRD
whose rules could cost too much).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from kafka_offsets_model.openapi import Schema
from kafka_offsets_model.typed_schema import Check, Default, Doc, Rule, rules, schema_of

INT32_MAX = 2**31 - 1  # Kafka's partition numbers, Spark's cores and instances
# An int64 field says so by its format, with no maximum: the API server holds a schema's bounds as float64,
# where 2**63 - 1 rounds up to 2**63, and then refuses every value of the field ("Maximum boundary value
# must be of type integer", kube-openapi 1.36, seen on a real kube-apiserver). A number past int64 is no
# integer to the API server's decoder, so it is refused all the same.
INT64 = {"type": "integer", "format": "int64"}

# Bounds (see the module's docstring). Kubernetes names: a DNS subdomain, at most 253 characters; a Secret's
# keys have the same limit.
MAX_NAME = 253
# A group id is a Kafka STRING (at most 32767 bytes on the wire) and Kafka sets no shorter limit; the policy
# copies ids from __consumer_offsets into OffsetDeletions, so anything shorter would refuse real groups.
MAX_GROUP_LENGTH = 32767
# One OffsetDeletion is one Kubernetes object, which etcd keeps under 1.5 MiB with its status: at most this
# many partitions (spec.topics[*].partitions in all, and spec.expectedOffsets) keeps spec and per-partition
# results well under it with topic names of ordinary length. A policy splits a bigger group.
MAX_PARTITIONS = 5000
MAX_TOPICS = 1000
MAX_BOOTSTRAP_LENGTH = 4096  # a comma-separated host:port list; a few brokers are enough to bootstrap


# Kubernetes object names (a DNS subdomain) and the keys of a Secret's data, as the API server checks them
# (IsDNS1123Subdomain, IsConfigMapKey): a name that cannot exist is refused here, naming the field, instead of
# being looked up (".." in a URL path is not a Secret).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"


OBJECT_NAME = Check(title="Kubernetes name (lower-case letters, digits, - and .)", minLength=1, maxLength=MAX_NAME,
                    pattern=DNS_SUBDOMAIN)
ObjectName = Annotated[str, OBJECT_NAME]


# spec.policyRef of both one-shot kinds (no docstring: it would be a description; each kind's field gives one)
@dataclass(frozen=True, kw_only=True)
class PolicyRef:
    name: Annotated[ObjectName, Doc("The policy's name.")]


# spec.kafka of all three kinds, typed: the CRDs' schema of it (KAFKA_CONNECTION) and the value
# decisions/connection_spec.py parses it into (`parse(KafkaConnection, ...)`) both come from these classes.
# A Strimzi listener's name: Strimzi allows only lower-case letters and digits; the length is bounded as for any name.
ListenerName = Annotated[str, Check(minLength=1, maxLength=63, pattern="^[a-z0-9]+$")]
SECRET_KEY_NAME = Check(title="Secret key (letters, digits, -, _ and .)", pattern=SECRET_KEY, maxLength=MAX_NAME)
SecretName = Annotated[ObjectName, Doc("Secret name, in the resource's own namespace.")]


@dataclass(frozen=True, kw_only=True)
class StrimziRef:
    """A Strimzi Kafka cluster in the resource's namespace, instead of bootstrapServers, sasl and tls: the
    listener's address from the Kafka's status, its CA from <kafka>-cluster-ca-cert, and the KafkaUser's
    credentials (SCRAM-SHA-512 or mutual TLS, as the listener authenticates). securityProtocol is derived from
    the listener."""

    kafka: Annotated[ObjectName, Doc("Name of the kafka.strimzi.io Kafka resource.")]
    listener: Annotated[ListenerName | None, Doc("Name of the listener (spec.kafka.listeners[].name); the first one "
                                                 "the Kafka reports when unset.")] = None
    user: Annotated[ObjectName | None, Doc("Name of the KafkaUser to authenticate as; required when the listener "
                                           "authenticates.")] = None


@dataclass(frozen=True, kw_only=True)
class SaslSecretRef:
    """Secret holding the SASL user name and password."""

    name: SecretName
    username_key: Annotated[str, SECRET_KEY_NAME, Default("username"), Doc("Key of the user name in the Secret.")] = "username"
    password_key: Annotated[str, SECRET_KEY_NAME, Default("password"), Doc("Key of the password in the Secret.")] = "password"


@dataclass(frozen=True, kw_only=True)
class Sasl:
    """SASL authentication, for SASL_PLAINTEXT and SASL_SSL."""

    mechanism: Annotated[str, Check(enum=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]), Doc("Kafka's sasl.mechanism.")]
    secret_ref: SaslSecretRef


@dataclass(frozen=True, kw_only=True)
class CaSecretRef:
    """Secret holding the CA certificate(s) that sign the brokers' certificates."""

    name: SecretName
    key: Annotated[str, SECRET_KEY_NAME, Default("ca.crt"), Doc("Key of the PEM CA bundle in the Secret.")] = "ca.crt"


@dataclass(frozen=True, kw_only=True)
class CertSecretRef:
    """Secret holding a client certificate and key, for mutual TLS."""

    name: SecretName
    cert_key: Annotated[str, SECRET_KEY_NAME, Default("tls.crt"), Doc("Key of the PEM client certificate in the "
                                                                      "Secret.")] = "tls.crt"
    key_key: Annotated[str, SECRET_KEY_NAME, Default("tls.key"), Doc("Key of the PEM private key in the Secret.")] = "tls.key"


@dataclass(frozen=True, kw_only=True)
class Tls:
    """TLS settings, for SSL and SASL_SSL."""

    ca_secret_ref: CaSecretRef | None = None
    cert_secret_ref: CertSecretRef | None = None


@rules(
    Rule("has(self.bootstrapServers) != has(self.strimzi)", "set either bootstrapServers or strimzi"),
    Rule("!has(self.strimzi) || (!has(self.sasl) && !has(self.tls))",
         "with strimzi, the listener and the KafkaUser give the security settings: remove sasl and tls"),
)
@dataclass(frozen=True, kw_only=True)
class KafkaConnection:
    """How to reach the Kafka cluster. Credentials are read from Secrets in the resource's own namespace and
    never copied into status, events or logs."""

    strimzi: StrimziRef | None = None
    bootstrap_servers: Annotated[str | None, Check(title="comma-separated host:port list",
                                                   pattern=r"^[^\s,]+:[0-9]+(,[^\s,]+:[0-9]+)*$",
                                                   maxLength=MAX_BOOTSTRAP_LENGTH),
                                 Doc("Comma-separated host:port list of brokers to bootstrap from.")] = None
    security_protocol: Annotated[str, Check(enum=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]),
                                 Default("PLAINTEXT"), Doc("Kafka's security.protocol.")] = "PLAINTEXT"
    sasl: Sasl | None = None
    tls: Tls | None = None


KAFKA_CONNECTION: Schema = schema_of(KafkaConnection)


# A group id without control characters (C0 and DEL: a newline, a tab, NUL) and without a space at either end:
# what the operator's parsers refuse too (deletion_spec, reset_plan.check_group). A space inside is a group id
# Kafka takes, and so do we. (RE2 and Python's re read this pattern alike.)
GROUP_ID_PATTERN = "^[^ \\x00-\\x1F\\x7F]([^\\x00-\\x1F\\x7F]*[^ \\x00-\\x1F\\x7F])?$"


GROUP_ID = Check(title="consumer group id (no control characters, no space at either end)", minLength=1,
                 maxLength=MAX_GROUP_LENGTH, pattern=GROUP_ID_PATTERN)
GROUP_ID_NOTE = (" No control characters (newline, tab, NUL, ...) and no space at either end; a space inside is "
                 "allowed, as Kafka allows it.")
GroupId = Annotated[str, GROUP_ID]


def group_id(description: str) -> Schema:
    return {"type": "string", **GROUP_ID.keywords, "description": description + GROUP_ID_NOTE}


# Kafka's own rule (Topic.validate); "." and ".." are refused by decisions/deletion_spec.py.
TopicName = Annotated[str, Check(title="Kafka topic name ([a-zA-Z0-9._-], at most 249 characters)",
                                 pattern=r"^[a-zA-Z0-9._-]+$", maxLength=249), Doc("Topic name.")]
Partition = Annotated[int, Check(minimum=0, maximum=INT32_MAX)]
# An int64 (see INT64) that is never negative: an offset, a time in epoch ms.
Int64 = Annotated[int, Check(format="int64", minimum=0)]


# -- who asked and who approved (issue 18 item 5): recorded by the operator, verified by the install's
# ValidatingAdmissionPolicy (model/admission.py) against request.userInfo.username.

MAX_USERNAME = 512  # Kubernetes user names are free-form strings; a service account's is about 320 at most


def approval_fields(kind: str) -> Schema:
    user = {"type": "string", "minLength": 1, "maxLength": MAX_USERNAME}
    return {
        "approvedBy": {**user, "description": (
            "Who approved: the approver's Kubernetes user name, set together with approved: true (kubectl patch "
            "... -p '{\"spec\":{\"approved\":true,\"approvedBy\":\"'$(kubectl auth whoami -o "
            "jsonpath='{.status.userInfo.username}')'\"}}'). The install's ValidatingAdmissionPolicy refuses a "
            "value that is not the user sending the approval; an operator installed with it refuses to act on "
            "an approval without this field. Copied into the backup, the audit line and the Events.")},
        "requestedBy": {**user, "description": (
            f"Who asked for this {kind}: the creator's Kubernetes user name (the operator's own for a policy's "
            "proposals). The install's ValidatingAdmissionPolicy refuses a create that names someone else; it "
            "cannot change afterwards.")},
        "separateApprover": {"type": "boolean", "description": (
            "Four eyes: the requester (requestedBy, required then) may not approve. Copied from the policy's "
            "spec.approval.separateApprover into its proposals; the ValidatingAdmissionPolicy refuses such an "
            "approval, and the operator refuses to act on one (also for a request whose policyRef names a policy "
            "with separateApprover). Cannot change once set.")},
    }


# Whatever the approval state: who asked, and whether four eyes apply, never change (transition rules).
APPROVAL_RULES = (
    Rule("has(self.requestedBy) == has(oldSelf.requestedBy) && "
         "(!has(self.requestedBy) || self.requestedBy == oldSelf.requestedBy)",
         "cannot change: it records who created the request", ".requestedBy"),
    Rule("has(self.separateApprover) == has(oldSelf.separateApprover) && "
         "(!has(self.separateApprover) || self.separateApprover == oldSelf.separateApprover)",
         "cannot change once the request exists", ".separateApprover"),
)


# -- printer columns (`kubectl get`): each kind's file names its columns by JSON path; their types come from
# the kind's schema at that path (printer_columns), so a column cannot name a field the kind does not have or
# give it another type than the field's.


@dataclass(frozen=True)
class Column:
    name: str
    json_path: str  # .spec.group, .status.conditions[?(@.type=="Ready")].status
    description: str | None = None
    priority: int = 0  # 1: only with -o wide


def _field_schema(root: Schema, json_path: str) -> Schema:
    """The schema of the field a printer column's JSON path names (a filter or index goes into the items)."""
    schema = root
    for part in re.sub(r"\[[^\]]*\]", "[]", json_path).lstrip(".").split("."):
        name, bracket, _ = part.partition("[")
        properties = schema.get("properties") or {}
        if name not in properties:
            raise KeyError(f"printer column path {json_path}: no field {name!r}")
        schema = properties[name]
        if bracket:
            schema = schema["items"]
    return schema


def _column_type(schema: Schema) -> str:
    if schema.get("type") == "string" and schema.get("format") == "date-time":
        return "date"
    return str(schema["type"])


def printer_columns(root: Schema, columns: tuple[Column, ...]) -> list[Schema]:
    """The CRD's additionalPrinterColumns (before Age) for an object schema with spec and status."""
    out: list[Schema] = []
    for column in columns:
        entry: Schema = {"name": column.name, "type": _column_type(_field_schema(root, column.json_path)),
                         "jsonPath": column.json_path}
        if column.priority:
            entry["priority"] = column.priority
        if column.description is not None:
            entry["description"] = column.description
        out.append(entry)
    return out


# `kubectl get od` / `get ors`: whether a change is approved, beside its phase (an unapproved proposal waits).
APPROVED_COLUMN = Column("Approved", ".spec.approved", "spec.approved: the operator acts only on an approved request.")
# `-o wide` (priority 1): who asked and who approved, and which policy proposed it.
WIDE_REQUEST_COLUMNS = (
    Column("Policy", ".spec.policyRef.name",
           "The policy whose connection it uses (and which proposed it, when requestedBy is the operator).", 1),
    Column("Requested By", ".spec.requestedBy", "Who asked for the change.", 1),
    Column("Approved By", ".spec.approvedBy", "Who approved it (verified by the install's admission policy).", 1),
)


# -- status fields: written by the operator, typed as the status schema (the operator writes plain mappings).

Time = Annotated[str, Check(format="date-time")]
Count = Annotated[int, Check(minimum=0)]
Generation = Annotated[int, Doc("The metadata.generation this describes.")]

CONDITIONS: Schema = {
    "type": "array",
    "description": ("Standard Kubernetes conditions: Ready, and Degraded when something needs attention; "
                    "Reconciling (still working) and Stalled (needs a person), present only while True, "
                    "for kstatus, Flux and Argo CD."),
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


# -- status schemas the kinds share (per-partition results, their summary, the backup, the target)


def count_schema(description: str) -> Schema:
    return {"type": "integer", "minimum": 0, "description": description}


def time_schema(description: str) -> Schema:
    return {"type": "string", "format": "date-time", "description": description}


def text_schema(description: str) -> Schema:
    return {"type": "string", "description": description}


def result_items(statuses: list[str], status_description: str, error_example: str, message: str,
                  count_description: str, between: Schema | None = None) -> Schema:
    """One entry of a per-partition results list (OffsetDeletion's results and restoreResults, OffsetReset's
    results): topic, partition, status, the kind's `between` fields, Kafka's error, a message, a count."""
    return {
        "type": "object",
        "properties": {
            "topic": text_schema("Topic name."),
            "partition": {"type": "integer", "description": "Partition."},
            "status": {"type": "string", "enum": statuses, "description": status_description},
            **(between or {}),
            "error": text_schema(f"Kafka's error name, e.g. {error_example}."),
            "message": text_schema(message),
            "count": count_schema(count_description),
        },
    }




def backup_status(description: str, offsets: Schema | None = None) -> Schema:
    """status.backup: the backup store's ConfigMap this object's backup is in (and, for an OffsetDeletion,
    a copy of its offsets)."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "name": text_schema("The backup's ConfigMap, in this namespace."),
            "takenAt": time_schema("When the backup was read (OffsetFetch)."),
            "expiresAt": time_schema("When the backup store deletes the backup."),
            "partitions": count_schema("How many partitions the backup holds."),
            "offsetsLog": {
                "type": "object",
                "description": (
                    "Where the group's __consumer_offsets partition ended right before the backup was read: the "
                    "re-check right before the change reads the group's records from here (from spec.scan's end "
                    "offset, when a policy's scan is older), so a commit after the backup is seen."),
                "properties": {
                    "partition": count_schema("The group's __consumer_offsets partition."),
                    "offset": count_schema("Its end offset then."),
                },
            },
            **({"offsets": offsets} if offsets is not None else {}),
        },
    }


def target_status(description: str, spec: Schema) -> Schema:
    """status.target: what the object acts on, recorded at approval and frozen."""
    return {
        "type": "object",
        "description": description,
        "properties": {
            "clusterId": text_schema("The Kafka cluster's id."),
            "bootstrapServers": text_schema("Where the cluster was reached."),
            "group": text_schema("The consumer group acted on."),
            "kafka": {**KAFKA_CONNECTION,
                      "description": "The connection used (spec.kafka or the policy's), as approved."},
            "spec": spec,
        },
    }


def results_summary(field: str) -> Schema:
    """Set when status.<field> is shortened to fit the object (decisions/step_outcomes.bounded_results)."""
    counts = {"type": "object", "additionalProperties": {"type": "integer"}}
    return {
        "type": "object",
        "description": (
            f"Set when {field} has more entries than fit in one object (over 1000, or 256 KiB): counts of every "
            f"partition by status and by Kafka error; {field} then sums the successful partitions per topic and "
            "keeps a sample of the others (up to 20 of each status and error first)."
        ),
        "properties": {
            "partitions": count_schema("Results in all."),
            "byStatus": {**counts, "description": "Partitions per status (Deleted, Failed, ...)."},
            "byError": {**counts, "description": "Partitions per Kafka error name."},
            "shown": count_schema(f"Entries of {field} that are single partitions (the sample)."),
            "message": text_schema("What was shortened, for people."),
        },
    }
