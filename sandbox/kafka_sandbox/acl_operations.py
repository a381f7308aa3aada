"""Authorized-operations fields, as a Kafka broker without an authorizer reports them.

AuthHelper.authorizedOperations returns every operation the resource type supports when no authorizer is
configured (AclEntry.supportedOperations); the sandbox has no authorizer. Codes: AclOperation.java.
kafka-python encodes these int32 bit fields from a set of bit numbers, and None as Integer.MIN_VALUE
(the schema default, meaning "not requested").
"""

from __future__ import annotations

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

NOT_REQUESTED = None

TOPIC_OPERATIONS = frozenset({READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS})
GROUP_OPERATIONS = frozenset({READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS})
CLUSTER_OPERATIONS = frozenset(
    {CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE}
)
