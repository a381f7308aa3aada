"""How to reach a Kafka cluster, resolved from a resource's `spec.kafka` and its Secrets
(decisions/connection_spec.py). Secrets are masked in repr and str, so no log line can carry them."""

from __future__ import annotations

from dataclasses import dataclass, field


class Masked(str):
    """A secret string that prints as asterisks but encodes to its real value."""

    def __repr__(self) -> str:
        return "'******'"

    def __str__(self) -> str:
        return "******"

    def __format__(self, spec: str) -> str:
        return "******"


@dataclass(frozen=True)
class SecretKey:
    """Where a secret value came from: which Secret and key, named by which spec field (never the value),
    so an error caused by the value (a refused password, an untrusted CA) can say what to fix."""

    field: str  # e.g. spec.kafka.sasl.secretRef.passwordKey
    secret: str
    key: str

    def __str__(self) -> str:
        return f"Secret {self.secret!r} key {self.key!r} ({self.field})"


@dataclass(frozen=True)
class FileProperty(SecretKey):
    """Where a secret value came from for the CLI: a property of its --command-config file (`field` the
    property, `secret` the file's path, `key` what of the property: a JAAS option, or the property itself)."""

    def __str__(self) -> str:
        return f"{self.field} in {self.secret}"


@dataclass(frozen=True)
class SecretSources:
    """The SecretKey of each secret-backed setting that is set."""

    username: SecretKey | None = None  # None with a literal user name (a Strimzi KafkaUser's status.username)
    password: SecretKey | None = None
    ca: SecretKey | None = None
    cert: SecretKey | None = None
    key: SecretKey | None = None


@dataclass(frozen=True)
class SettingNames:
    """The names a connection error gives the settings to fix: a resource's spec.kafka fields, or the CLI's
    --command-config properties."""

    protocol: str = "spec.kafka.securityProtocol"
    mechanism: str = "spec.kafka.sasl.mechanism"
    ca: str = "spec.kafka.tls.caSecretRef"
    credentials: str = "the Secret"  # what holds the SASL password


@dataclass(frozen=True)
class TlsFiles:
    ca: bytes | None = field(default=None, repr=False)
    cert: bytes | None = field(default=None, repr=False)
    key: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything needed to connect; secrets are masked in repr and never logged."""

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: Masked | None = field(default=None, repr=False)
    tls: TlsFiles | None = None
    sources: SecretSources = field(default_factory=SecretSources, compare=False)
    names: SettingNames = field(default_factory=SettingNames, compare=False)
    check_hostname: bool = True  # the broker's certificate must name the host (Kafka's default "https")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in status, events or logs."""
        out = [str.__str__(self.password)] if self.password else []
        if self.tls and self.tls.key:
            out.append(self.tls.key.decode(errors="replace"))
        return tuple(out)

    def redact(self, text: str) -> str:
        """`text` with every secret of these settings replaced (Spark's error text goes into a status)."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "******")
        return text
