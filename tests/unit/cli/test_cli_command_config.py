"""`--command-config FILE`: the Java properties file Kafka's tools take, as the connection settings of an
OffsetReset's spec.kafka (decisions/command_config.py). Every unsupported or bad property is one line naming
it, exit 2, before any call; no password ever appears. Over the wire: tests/integration/cli/
test_cli_secured_reset.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_offset_operator import cli
from kafka_offset_operator.decisions.command_config import (
    CommandConfigError,
    connection_from_properties,
    parse_jaas,
)

PASSWORD = "Hq9-never-shown-in-output-2Lx"
SCRAM = ('sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n'
         f'    username="alice" password="{PASSWORD}";\n')
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"


def files(path: str) -> bytes:
    if path == "/pki/ca.pem":
        return CA
    if path == "/pki/client.pem":
        return KEY + CA
    raise FileNotFoundError(2, "No such file or directory")


def settings(text: str):  # type: ignore[no-untyped-def]
    return connection_from_properties(text, "client.properties", "k:9093", files)


def test_kafkas_jaas_string() -> None:
    assert parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required username=bob '
                      'password="p\\"w;x";') == ("org.apache.kafka.common.security.plain.PlainLoginModule",
                                                 {"username": "bob", "password": 'p"w;x'})


def test_sasl_scram_over_tls_with_a_pem_trust_and_key_store() -> None:
    conn, ignored = settings("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + SCRAM
                             + "ssl.truststore.type=PEM\nssl.truststore.location=/pki/ca.pem\n"
                             + "ssl.keystore.type=PEM\nssl.keystore.location=/pki/client.pem\n"
                             + "ssl.endpoint.identification.algorithm=\nclient.id=me\nrequest.timeout.ms=5000\n")
    assert (conn.security_protocol, conn.sasl_mechanism, conn.username) == ("SASL_SSL", "SCRAM-SHA-512", "alice")
    assert str.__str__(conn.password) == PASSWORD and PASSWORD not in repr(conn)  # type: ignore[arg-type]
    assert conn.tls is not None and (conn.tls.ca, conn.tls.cert, conn.tls.key) == (CA, CA, KEY)
    assert conn.check_hostname is False and ignored == ["client.id", "request.timeout.ms"]
    assert str(conn.sources.password) == "sasl.jaas.config in client.properties"
    assert conn.names.protocol == "security.protocol in client.properties"


def test_inline_pem_and_plain() -> None:
    ca = CA.decode().replace("\n", "\\n\\\n")
    conn, _ = settings("security.protocol=ssl\nssl.truststore.type=PEM\n" f"ssl.truststore.certificates={ca}\n")
    assert conn.security_protocol == "SSL" and conn.tls is not None and conn.tls.ca == CA and conn.check_hostname
    conn, _ = settings("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                       "org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p;\n")
    assert (conn.sasl_mechanism, conn.username, conn.tls) == ("PLAIN", "u", None)


@pytest.mark.parametrize(("text", "message"), [
    ("security.protocol=SASL_SSL\n" + SCRAM, "sasl.mechanism: GSSAPI (Kafka's default when it is not set) is not supported"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n" + SCRAM, "sasl.mechanism: 'OAUTHBEARER' is not supported"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", "sasl.jaas.config: is required with security.protocol SASL_SSL"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule "
     f"required keyTab=\"/k\" password=\"{PASSWORD}\";\n", "sasl.jaas.config: login module com.sun.security.auth.module.Krb5LoginModule"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + SCRAM.replace("username=\"alice\" ", ""), "sasl.jaas.config: has no username"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + SCRAM.replace(";", ""), "sasl.jaas.config: not a JAAS configuration"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + SCRAM.replace("\";", "\" tokenauth=true;"), "sasl.jaas.config: option 'tokenauth'"),
    ("sasl.mechanism=PLAIN\n" + SCRAM, "security.protocol: is PLAINTEXT, but sasl is set"),
    ("security.protocol=TLS\n", "security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ("security.protocol=SSL\nssl.truststore.location=/pki/ca.pem\n", "ssl.truststore.type: JKS (Kafka's default when it is not set) is not supported"),
    ("security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=/pki/ca.pem\n", "ssl.truststore.type: PKCS12 is not supported"),
    ("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/pki/none.pem\n", "ssl.truststore.location: cannot read /pki/none.pem: No such file"),
    ("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/pki/client.pem\nssl.truststore.password=x\n", "ssl.truststore.password: a PEM trust store has no password"),
    ("security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/pki/ca.pem\n", "ssl.keystore.location: holds 0 PEM private keys"),
    (f"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=/pki/client.pem\nssl.key.password={PASSWORD}\n", "ssl.key.password: encrypted private keys are not supported"),
    ("security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.key=-----BEGIN PRIVATE KEY-----\n", "ssl.keystore.certificate.chain: is required with ssl.keystore.key"),
    ("security.protocol=SSL\nssl.truststore.certificates=-----BEGIN CERTIFICATE-----\n", "ssl.truststore.type: JKS (Kafka's default when it is not set) is not supported"),
    ("security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n", "ssl.endpoint.identification.algorithm: 'ldap' is not https or empty"),
    ("security.protocol=SSL\nssl.enabled.protocols=TLSv1.3\n", "ssl.enabled.protocols: is not supported by this command"),
    ("security.protocol=PLAINTEXT\nssl.truststore.type=PEM\nssl.truststore.location=/pki/ca.pem\n", "security.protocol: is PLAINTEXT, but tls is set"),
])
def test_a_property_that_cannot_be_used_is_named_without_its_secret(text: str, message: str) -> None:
    with pytest.raises(CommandConfigError) as caught:
        settings(text)
    assert message in str(caught.value) and PASSWORD not in str(caught.value) and "\n" not in str(caught.value)


def test_through_the_cli_exit_2_one_line_no_password(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Before any call: the address is a closed port, which reaching would report instead."""
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n" + SCRAM)
    for argv in (["reset", "--bootstrap-server", "127.0.0.1:1", "--group", "g", "--all-topics", "--to-current"],
                 ["restore", "--file", str(tmp_path / "none.json"), "--bootstrap-server", "127.0.0.1:1"]):
        code = cli.main([*argv, "--command-config", str(config)])
        out, err = capsys.readouterr()
        if argv[0] == "restore":  # restore reads its backup first: the missing file is named
            assert code == 2 and "--file: No such file" in err, err
            continue
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and PASSWORD not in err, err
        assert f"--command-config {config}: sasl.mechanism: 'GSSAPI' is not supported" in err
    code = cli.main(["reset", "--bootstrap-server", "127.0.0.1:1", "--group", "g", "--all-topics", "--to-current",
                     "--command-config", str(tmp_path / "missing.properties")])
    assert code == 2 and "--command-config: cannot read" in capsys.readouterr().err
