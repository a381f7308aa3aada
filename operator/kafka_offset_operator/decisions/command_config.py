"""The CLI's `--command-config FILE`, as Apache Kafka's tools take it: a Java properties file of client
settings (`kafka-consumer-groups.sh --command-config`), turned into the same ConnectionSettings an
OffsetReset's `spec.kafka` gives, through the same resolution (decisions/connection_spec.py): the properties
become a `spec.kafka` and in-memory Secrets, so the rules that tie SASL and TLS to the security protocol are
the operator's own, and the connection (masked password, private TLS files, the errors that name what to fix)
is adapters/kafka_admin.py's.

What is taken (docs/offset-reset.md, "Security"): security.protocol; sasl.mechanism PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 with sasl.jaas.config of PlainLoginModule or ScramLoginModule (username, password);
ssl.truststore.type=PEM with ssl.truststore.location or ssl.truststore.certificates; ssl.keystore.type=PEM
with ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key (an unencrypted key);
ssl.endpoint.identification.algorithm (https or empty). Any other security property (JKS or PKCS12 stores,
GSSAPI, OAUTHBEARER, encrypted keys, protocol and cipher choices) is refused with one line naming it;
other client properties (client.id, timeouts) are ignored, and the caller says so.

No message built here contains a property's value where it could be a secret.

Pure: the file's text and a reader of the files it names come in; nothing is read here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

import javaproperties

from kafka_offsets_model.errors import SpecError

from ..model.connection import ConnectionSettings, FileProperty, SecretSources, SettingNames
from .connection_spec import connection_from_spec

FileReader = Callable[[str], bytes]  # a path named by a property -> its bytes; raises OSError


class CommandConfigError(ValueError):
    """A property that cannot be used; the message starts with the property's name."""


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_LOGIN_MODULES = ("org.apache.kafka.common.security.plain.PlainLoginModule",
                  "org.apache.kafka.common.security.scram.ScramLoginModule")
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TAKEN = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.endpoint.identification.algorithm",
})
# Properties that hold secrets: their values are never repeated in a message.
_SECRET = frozenset({"sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.password", "ssl.key.password",
                     "ssl.truststore.password"})
_WHY_NOT = {
    "ssl.keystore.password": "a PEM key store has no password here: give an unencrypted key",
    "ssl.key.password": "encrypted private keys are not supported: give an unencrypted PKCS#8 key",
    "ssl.truststore.password": "a PEM trust store has no password (Kafka refuses one too)",
}


# -- Kafka's JAAS configuration string (org.apache.kafka.common.security.JaasConfig)

_JAAS = re.compile(r"\s*(?P<module>[A-Za-z_$][\w$.]*)\s+(?P<flag>\w+)(?P<options>(?:[^;\"]|\"(?:[^\"\\]|\\.)*\")*);\s*",
                   re.DOTALL)
_OPTION = re.compile(r"\s*(?P<key>[\w.$-]+)\s*=\s*(?:\"(?P<quoted>(?:[^\"\\]|\\.)*)\"|(?P<word>[^\s\";=]+))\s*",
                     re.DOTALL)


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """(login module, options) of a sasl.jaas.config holding one login module, as Kafka's JaasConfig parses
    it: `Module flag key=value key="quoted value";`. The message of a refusal never repeats the text."""
    where = "sasl.jaas.config"
    match = _JAAS.fullmatch(text)
    if match is None:
        found = len(_JAAS.findall(text))
        if found > 1:
            raise CommandConfigError(f"{where}: holds {found} login modules; a client takes one")
        raise CommandConfigError(f"{where}: not a JAAS configuration like 'org.apache.kafka.common.security."
                                 "scram.ScramLoginModule required username=\"...\" password=\"...\";'")
    if match["flag"] not in _FLAGS:
        raise CommandConfigError(f"{where}: {match['flag']!r} is not a JAAS control flag ({', '.join(_FLAGS)})")
    options: dict[str, str] = {}
    rest = match["options"]
    pos = 0
    while rest[pos:].strip():
        option = _OPTION.match(rest, pos)
        if option is None:
            raise CommandConfigError(f"{where}: its options are not key=value or key=\"value\" pairs")
        value = option["quoted"] if option["quoted"] is not None else option["word"]
        options[option["key"]] = re.sub(r"\\(.)", r"\1", value) if option["quoted"] is not None else value
        pos = option.end()
    return match["module"], options


# -- the properties as a spec.kafka


def connection_from_properties(text: str, path: str, bootstrap_servers: str,
                               read_file: FileReader) -> tuple[ConnectionSettings, list[str]]:
    """The connection the properties in `text` (the file at `path`) describe for `bootstrap_servers`, and
    the names of the properties ignored (not security settings: the caller warns about them). Raises
    CommandConfigError naming the property."""
    props = dict(javaproperties.loads(text))
    ignored = []
    for name in sorted(props):
        if name in _TAKEN:
            continue
        if name.startswith(("security.", "sasl.", "ssl.")):
            why = _WHY_NOT.get(name, "is not supported by this command (kafka-python takes no such setting "
                                     "from a properties file)")
            raise CommandConfigError(f"{name}: {why}")
        ignored.append(name)
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in _PROTOCOLS:
        raise CommandConfigError(f"security.protocol: {props['security.protocol']!r} is not one of "
                                 f"{', '.join(_PROTOCOLS)}")
    spec: dict[str, Any] = {"bootstrapServers": bootstrap_servers, "securityProtocol": protocol}
    secrets: dict[str, dict[str, bytes]] = {}
    sources: dict[str, FileProperty] = {}
    if protocol.startswith("SASL_") or "sasl.jaas.config" in props:
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip()  # Kafka's default
        if mechanism not in _MECHANISMS:
            given = "GSSAPI (Kafka's default when it is not set)" if "sasl.mechanism" not in props else repr(mechanism)
            raise CommandConfigError(f"sasl.mechanism: {given} is not supported by this command; use one of "
                                     f"{', '.join(_MECHANISMS)}")
        if "sasl.jaas.config" not in props:
            raise CommandConfigError(f"sasl.jaas.config: is required with security.protocol {protocol} (a "
                                     "PlainLoginModule or ScramLoginModule with username and password)")
        module, options = parse_jaas(props["sasl.jaas.config"])
        if module not in _LOGIN_MODULES:
            raise CommandConfigError(f"sasl.jaas.config: login module {module} is not supported by this command; "
                                     "use PlainLoginModule or ScramLoginModule with username and password")
        for option in options:
            if option not in ("username", "password"):
                raise CommandConfigError(f"sasl.jaas.config: option {option!r} is not supported by this command "
                                         "(only username and password)")
        for option in ("username", "password"):
            if not options.get(option):
                raise CommandConfigError(f"sasl.jaas.config: has no {option}")
        spec["sasl"] = {"mechanism": mechanism, "secretRef": {"name": "sasl"}}
        secrets["sasl"] = {k: options[k].encode() for k in ("username", "password")}
        sources["username"] = FileProperty("sasl.jaas.config", path, "username")
        sources["password"] = FileProperty("sasl.jaas.config", path, "password")
    tls: dict[str, Any] = {}
    ca = _trust_store(props, read_file)
    if ca is not None:
        tls["caSecretRef"] = {"name": "ca"}
        secrets["ca"] = {"ca.crt": ca[0]}
        sources["ca"] = FileProperty(ca[1], path, ca[1])
    client = _key_store(props, read_file)
    if client is not None:
        tls["certSecretRef"] = {"name": "client"}
        secrets["client"] = {"tls.crt": client[0], "tls.key": client[1]}
        sources["cert"] = FileProperty(client[2], path, client[2])
        sources["key"] = FileProperty(client[3], path, client[3])
    if tls:
        spec["tls"] = tls
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise CommandConfigError(f"ssl.endpoint.identification.algorithm: {algorithm!r} is not https or empty")
    try:
        settings = connection_from_spec(spec, secrets.__getitem__)
    except SpecError as exc:
        raise CommandConfigError(f"{_property(exc.field)}: {exc.problem}") from None
    names = SettingNames(f"security.protocol in {path}", f"sasl.mechanism in {path}",
                         f"ssl.truststore.location in {path}", f"the password in {path}")
    return dataclasses.replace(settings, sources=SecretSources(**sources), names=names,
                               check_hostname=algorithm == "https"), ignored


def _property(field: str) -> str:
    """The property behind a spec.kafka field connection_from_spec refused."""
    for prefix, name in (("spec.kafka.securityProtocol", "security.protocol"), ("spec.kafka.sasl", "sasl.jaas.config"),
                         ("spec.kafka.tls.caSecretRef", "ssl.truststore.location"),
                         ("spec.kafka.tls", "ssl.keystore.location"), ("spec.kafka.bootstrapServers", "--bootstrap-server")):
        if field.startswith(prefix):
            return name
    return field


def _store_type(props: Mapping[str, str], name: str) -> None:
    given = props.get(name)
    kind = (given or "JKS").strip().upper()  # Kafka's default store type is JKS
    if kind != "PEM":
        default = " (Kafka's default when it is not set)" if given is None else ""
        raise CommandConfigError(f"{name}: {kind}{default} is not supported by this command: convert the store "
                                 f"to PEM and set {name}=PEM")


def _read(props: Mapping[str, str], name: str, read_file: FileReader) -> bytes:
    location = props[name].strip()
    try:
        return read_file(location)
    except OSError as exc:
        raise CommandConfigError(f"{name}: cannot read {location}: {exc.strerror or exc}") from None


def _trust_store(props: Mapping[str, str], read_file: FileReader) -> tuple[bytes, str] | None:
    """(the CA certificates, the property they came from), or None for the system's CAs."""
    location, inline = "ssl.truststore.location" in props, "ssl.truststore.certificates" in props
    if not location and not inline:
        if "ssl.truststore.type" in props:
            _store_type(props, "ssl.truststore.type")
        return None
    if location and inline:
        raise CommandConfigError("ssl.truststore.certificates: and ssl.truststore.location exclude each other")
    if location:
        _store_type(props, "ssl.truststore.type")
        name, pem = "ssl.truststore.location", _read(props, "ssl.truststore.location", read_file)
    else:  # DefaultSslEngineFactory.createTruststore: inline certificates only with type PEM
        _store_type(props, "ssl.truststore.type")
        name, pem = "ssl.truststore.certificates", props["ssl.truststore.certificates"].encode()
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise CommandConfigError(f"{name}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return pem, name


_PRIVATE_KEY = re.compile(rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----\s*", re.DOTALL)


def _key_store(props: Mapping[str, str], read_file: FileReader) -> tuple[bytes, bytes, str, str] | None:
    """(certificate chain, private key, the properties they came from), or None without a client certificate."""
    location = "ssl.keystore.location" in props
    inline = [n for n in ("ssl.keystore.certificate.chain", "ssl.keystore.key") if n in props]
    if not location and not inline:
        if "ssl.keystore.type" in props:
            _store_type(props, "ssl.keystore.type")
        return None
    if location and inline:
        raise CommandConfigError(f"{inline[0]}: and ssl.keystore.location exclude each other")
    if location:
        _store_type(props, "ssl.keystore.type")
        name = "ssl.keystore.location"
        pem = _read(props, name, read_file)
        keys = list(_PRIVATE_KEY.finditer(pem))
        if len(keys) != 1:
            raise CommandConfigError(f"{name}: holds {len(keys)} PEM private keys; a PEM key store holds one key "
                                     "and its certificate chain")
        key, chain, key_name, chain_name = keys[0].group(0), _PRIVATE_KEY.sub(b"", pem), name, name
    else:  # DefaultSslEngineFactory.createKeystore: an inline key only with type PEM
        _store_type(props, "ssl.keystore.type")
        if len(inline) != 2:
            missing = ({"ssl.keystore.certificate.chain", "ssl.keystore.key"} - set(inline)).pop()
            raise CommandConfigError(f"{missing}: is required with {inline[0]}")
        key, chain = props["ssl.keystore.key"].encode(), props["ssl.keystore.certificate.chain"].encode()
        key_name, chain_name = "ssl.keystore.key", "ssl.keystore.certificate.chain"
        if _PRIVATE_KEY.search(key) is None:
            raise CommandConfigError("ssl.keystore.key: holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
    if b"ENCRYPTED PRIVATE KEY" in key:
        raise CommandConfigError(f"{key_name}: the private key is encrypted; this command takes an unencrypted key")
    if b"-----BEGIN CERTIFICATE-----" not in chain:
        raise CommandConfigError(f"{chain_name}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return chain, key, chain_name, key_name
