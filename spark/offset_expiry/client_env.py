"""Kafka client security settings from the environment, for job.py.

A SparkApplication gets its credentials the Kubernetes way: environment variables filled from Secrets
(`valueFrom.secretKeyRef`) and TLS files mounted from Secrets; the operator's Local engine passes the same
variables to its child process. Neither puts a secret on a command line (visible in `ps`, in the
SparkApplication's spec and in spark-submit's logs).

    OFFSET_EXPIRY_KAFKA_SECURITY_PROTOCOL   PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    OFFSET_EXPIRY_KAFKA_SASL_MECHANISM      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    OFFSET_EXPIRY_KAFKA_SASL_USERNAME / OFFSET_EXPIRY_KAFKA_SASL_PASSWORD
    OFFSET_EXPIRY_KAFKA_SSL_CAFILE / _SSL_CERTFILE / _SSL_KEYFILE   paths of PEM files
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "OFFSET_EXPIRY_KAFKA_"
# variable suffix -> kafka-python setting (source.CLIENT_SETTINGS)
VARIABLES = {
    "SECURITY_PROTOCOL": "security_protocol",
    "SASL_MECHANISM": "sasl_mechanism",
    "SASL_USERNAME": "sasl_plain_username",
    "SASL_PASSWORD": "sasl_plain_password",
    "SSL_CAFILE": "ssl_cafile",
    "SSL_CERTFILE": "ssl_certfile",
    "SSL_KEYFILE": "ssl_keyfile",
}


def settings_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """The kafka-python settings the environment sets (empty values count as unset)."""
    return {setting: env[PREFIX + name] for name, setting in VARIABLES.items() if env.get(PREFIX + name)}
