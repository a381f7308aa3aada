"""The operator's Kubernetes API, named once: group, version, kinds, plurals and the labels it sets."""

from __future__ import annotations

GROUP = "kafkaoffsets.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

POLICY_KIND = "ConsumerGroupOffsetPolicy"
DELETION_KIND = "OffsetDeletion"
POLICIES = "consumergroupoffsetpolicies"
DELETIONS = "offsetdeletions"

MANAGED_BY = {"app.kubernetes.io/managed-by": "kafka-offset-operator"}
POLICY_LABEL = f"{GROUP}/policy"  # on what a policy creates: its OffsetDeletions, runs and ConfigMaps
DELETION_LABEL = f"{GROUP}/offsetdeletion"  # on an OffsetDeletion's backup ConfigMap
RUN_LABEL = f"{GROUP}/run"  # on a SparkApplication run and its ConfigMaps
