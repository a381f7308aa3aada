"""The Kafka connection of the commands that talk to Kafka through the operator's admin client (`reset`,
`restore`): `--bootstrap-server` plus `--command-config FILE`, the Java properties file Kafka's own tools
take (decisions/command_config.py says which properties are supported)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from ..model.connection import ConnectionSettings


def add_arguments(p: Any) -> None:
    p.add_argument("--command-config", type=Path, metavar="FILE",
                   help="a properties file of client settings, as Kafka's tools take it: security.protocol, "
                   "sasl.mechanism and sasl.jaas.config (PLAIN, SCRAM), PEM trust and key stores (ssl.truststore.*, "
                   "ssl.keystore.*), ssl.endpoint.identification.algorithm")


def connection(args: argparse.Namespace, bootstrap_servers: str) -> ConnectionSettings:
    """The settings for `bootstrap_servers` with the --command-config file's security properties (PLAINTEXT
    without one). Every problem is a UserError naming the property; no value of a secret is shown. Properties
    that are not security settings are ignored, with a warning naming them."""
    from ..decisions.command_config import CommandConfigError, connection_from_properties
    from ..model.connection import ConnectionSettings

    path: Path | None = args.command_config
    if path is None:
        return ConnectionSettings(bootstrap_servers)
    try:
        text = path.read_bytes().decode("latin-1")  # java.util.Properties.load(InputStream) reads ISO 8859-1
    except OSError as exc:
        raise UserError(f"--command-config: cannot read {path}: {exc.strerror or exc}") from None
    try:
        settings, ignored = connection_from_properties(text, str(path), bootstrap_servers, _read_file)
    except CommandConfigError as exc:
        raise UserError(f"--command-config {path}: {exc}") from None
    if ignored:
        print(f"kafka-offset-operator: warning: --command-config {path}: ignored (not security settings, not "
              f"used by this command): {', '.join(ignored)}", file=sys.stderr)
    return settings


def _read_file(location: str) -> bytes:
    return Path(location).read_bytes()


def check_login(settings: ConnectionSettings) -> None:
    """For the commands whose own Kafka clients are plain kafka-python (`dump`, `analyze`: they retry a
    refused login or an untrusted certificate until their bootstrap timeout, 30 s, then say only "Unable to
    bootstrap"): the address is tried (offset_expiry.reachability, as they do), then one login with the
    operator's admin client, which stops at the first refusal and names the property to fix."""
    from kafka_offsets_model.errors import InputError
    from offset_expiry.reachability import check_reachable

    from ..adapters.kafka_admin import KafkaAdmin
    from ..model.offsets import KafkaFailure

    try:
        check_reachable(settings.bootstrap_servers)
    except InputError as exc:
        raise UserError(str(exc)) from None
    try:
        with KafkaAdmin(settings, timeout_ms=10_000) as admin:
            admin.cluster_id()
    except KafkaFailure as exc:
        raise UserError(f"Kafka at {settings.bootstrap_servers}: {exc.code}: {exc.message}") from None
