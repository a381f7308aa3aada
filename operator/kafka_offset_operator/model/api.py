"""The operator's Kubernetes API, named once: group, version, kinds, plurals and the labels it sets."""

from __future__ import annotations

GROUP = "kafkaoffsets.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

POLICY_KIND = "ConsumerGroupOffsetPolicy"
DELETION_KIND = "OffsetDeletion"
RESET_KIND = "OffsetReset"
POLICIES = "consumergroupoffsetpolicies"
DELETIONS = "offsetdeletions"
RESETS = "offsetresets"

MANAGED_BY = {"app.kubernetes.io/managed-by": "kafka-offset-operator"}
POLICY_LABEL = f"{GROUP}/policy"  # on what a policy creates: its OffsetDeletions, runs and ConfigMaps
BACKUP_LABEL = f"{GROUP}/backup"  # "true" on every backup of the backup store (one ConfigMap per change)
BACKUPS_SELECTOR = f"{BACKUP_LABEL}=true"  # the label selector of every backup, as messages tell people to list them
BACKUP_ACTION_LABEL = f"{GROUP}/backup-action"  # Delete | Restore | Rebase | Reset | Recommit
SOURCE_KIND_LABEL = f"{GROUP}/source-kind"  # the kind of the resource that asked for a change
SOURCE_NAME_LABEL = f"{GROUP}/source-name"  # its name (cut to a label value; the backup has it whole)
RUN_LABEL = f"{GROUP}/run"  # on a SparkApplication run and its ConfigMaps

# Strimzi's API, read when spec.kafka.strimzi names a Kafka cluster (decisions/strimzi_connection.py).
STRIMZI_GROUP = "kafka.strimzi.io"
STRIMZI_VERSION = "v1beta2"

# Kopf's peering (docs/operator.md "One actor at a time"): one cluster-scoped object per installation, in
# whose status every operator process keeps its priority and a keep-alive; only the highest-priority live
# process acts. The CRD is Kopf's (crds/clusterkopfpeerings.kopf.dev.yaml, also in manifests/base and the chart).
PEERING_GROUP = "kopf.dev"
PEERING_VERSION = "v1"
PEERING_KIND = "ClusterKopfPeering"
CLUSTER_PEERINGS = "clusterkopfpeerings"
DEFAULT_PEERING = "kafka-offset-operator"
