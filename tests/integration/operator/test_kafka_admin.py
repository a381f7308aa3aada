"""kafka_admin over TCP, with groups made by kafka-python consumers: Kafka's answers on Apache Kafka (the `kafka`
fixture: the session's broker, names of this module's own), the password check on the sandbox broker, which
speaks no SASL on its plain listener (a refusal without a network round trip to a SASL server)."""

from __future__ import annotations

import logging
import os
import stat

import kafka.errors as kerrors
import pytest
from brokers import make_topics
from kafka_clients import empty_group, member
from kafka_under_test import Kafka

from kafka_offset_operator.adapters.kafka_admin import (
    KafkaAdmin,
    partition_answers,
    retry_later,
    write_private_files,
)
from kafka_offset_operator.decisions.connection_spec import connection_from_spec
from kafka_offset_operator.model.connection import ConnectionSettings, Masked, TlsFiles
from kafka_offset_operator.model.offsets import CONNECTION_FAILED, Committed, KafkaFailure
from kafka_offsets_model.errors import SpecError
from kafka_sandbox import SandboxBroker

PASSWORD = "pa55-Wq9-never-print-me"


def plain(broker: Kafka) -> ConnectionSettings:
    return ConnectionSettings(broker.bootstrap_servers)


def test_fetch_delete_and_recommit_offsets_of_an_empty_group(kafka: Kafka) -> None:
    make_topics(kafka, {"ka-orders": 2, "ka-payments": 1})
    empty_group(kafka.bootstrap_servers, "ka-billing", {("ka-orders", 0): 3, ("ka-orders", 1): 4, ("ka-payments", 0): 2})
    with KafkaAdmin(plain(kafka)) as admin:
        group = admin.describe_group("ka-billing")
        assert (group.state, group.protocol_type, group.members, group.exists) == ("Empty", "consumer", (), True)
        before = admin.committed_offsets("ka-billing")
        assert {tp: c.offset for tp, c in before.items()} == {("ka-orders", 0): 3, ("ka-orders", 1): 4, ("ka-payments", 0): 2}

        assert admin.delete_offsets("ka-billing", [("ka-orders", 0), ("ka-orders", 1)]) == {("ka-orders", 0): None, ("ka-orders", 1): None}
        assert set(admin.committed_offsets("ka-billing")) == {("ka-payments", 0)}

        restored = {tp: before[tp] for tp in [("ka-orders", 0), ("ka-orders", 1)]}
        assert admin.commit_offsets("ka-billing", restored) == {("ka-orders", 0): None, ("ka-orders", 1): None}
        assert admin.committed_offsets("ka-billing") == before


def test_subscribed_topic_of_a_live_group_is_refused_per_partition(kafka: Kafka) -> None:
    make_topics(kafka, {"ka-orders": 1, "ka-old": 1})
    with member(kafka.bootstrap_servers, "ka-shipping", ["ka-orders"]) as consumer:
        consumer.commit({("ka-orders", 0): 2})
        with KafkaAdmin(plain(kafka)) as admin:
            group = admin.describe_group("ka-shipping")
            assert group.state == "Stable" and group.active
            assert group.subscribed_topics == frozenset({"ka-orders"})
            assert admin.delete_offsets("ka-shipping", [("ka-orders", 0)]) == {("ka-orders", 0): "GROUP_SUBSCRIBED_TO_TOPIC"}
            # An admin commit needs a group without members.
            assert admin.commit_offsets("ka-shipping", {("ka-orders", 0): Committed(1)}) == {("ka-orders", 0): "UNKNOWN_MEMBER_ID"}
            assert admin.committed_offsets("ka-shipping")[("ka-orders", 0)].offset == 2


def test_unknown_group_and_unknown_topic(kafka: Kafka) -> None:
    make_topics(kafka, {"ka-orders": 1})
    empty_group(kafka.bootstrap_servers, "ka-known", {("ka-orders", 0): 1})
    with KafkaAdmin(plain(kafka)) as admin:
        ghost = admin.describe_group("ka-ghost")
        assert not ghost.exists and ghost.error == "GROUP_ID_NOT_FOUND"
        assert admin.committed_offsets("ka-ghost") == {}
        with pytest.raises(KafkaFailure) as err:
            admin.delete_offsets("ka-ghost", [("ka-orders", 0)])
        assert err.value.code == "GROUP_ID_NOT_FOUND" and not err.value.retriable
        assert admin.delete_offsets("ka-known", [("ka-nosuch", 0)]) == {("ka-nosuch", 0): "UNKNOWN_TOPIC_OR_PARTITION"}


def test_broker_configs(kafka: Kafka) -> None:
    with KafkaAdmin(plain(kafka)) as admin:  # the session broker keeps Kafka's default retention (7 days)
        assert admin.broker_configs(["offsets.retention.minutes"]) == {"offsets.retention.minutes": "10080"}


def test_one_classification_of_kafkas_answers() -> None:
    # kafka-python's own table decides, for classes and instances alike ...
    assert retry_later(kerrors.NotCoordinatorError) and retry_later(kerrors.CoordinatorLoadInProgressError())
    assert retry_later(kerrors.KafkaConnectionError()) and retry_later(kerrors.KafkaTimeoutError())
    assert not retry_later(kerrors.GroupSubscribedToTopicError) and not retry_later(kerrors.GroupIdNotFoundError)
    assert not retry_later(kerrors.NonEmptyGroupError)  # an OffsetDelete answer: final, shown in the results
    # ... plus a busy group (kafka-python: rejoin; the operator: wait until it is empty) ...
    assert all(retry_later(e) for e in (kerrors.UnknownMemberIdError, kerrors.RebalanceInProgressError,
                                        kerrors.IllegalGenerationError))
    # ... minus a topic the coordinator does not know: final in an admin answer.
    assert kerrors.UnknownTopicOrPartitionError.retriable and not retry_later(kerrors.UnknownTopicOrPartitionError)


def test_a_retriable_answer_in_every_partition_fails_the_whole_request() -> None:
    from kafka import TopicPartition

    with pytest.raises(KafkaFailure) as err:
        partition_answers({TopicPartition("t", 0): kerrors.NotCoordinatorError, TopicPartition("t", 1): kerrors.NotCoordinatorError})
    assert (err.value.code, err.value.retriable) == ("NOT_COORDINATOR", True)
    busy = {TopicPartition("t", 0): kerrors.UnknownMemberIdError, TopicPartition("t", 1): kerrors.NoError}
    assert partition_answers(busy) == {("t", 0): "UNKNOWN_MEMBER_ID", ("t", 1): None}  # the caller waits for an empty group


def test_unreachable_kafka_is_a_retriable_failure() -> None:
    with pytest.raises(KafkaFailure) as err:
        KafkaAdmin(ConnectionSettings("127.0.0.1:1"), timeout_ms=500)
    assert err.value.code == CONNECTION_FAILED and err.value.retriable


def test_sasl_password_never_reaches_the_logs(broker: SandboxBroker, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # kafka-python logs its whole configuration at DEBUG
    caplog.set_level(logging.DEBUG, logger="kafka")  # whatever level an earlier in-process command left it at
    settings = connection_from_spec(
        {"bootstrapServers": broker.bootstrap_servers, "securityProtocol": "SASL_PLAINTEXT",
         "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "creds"}}},
        lambda name: {"username": b"svc", "password": PASSWORD.encode()},
    )
    assert PASSWORD not in repr(settings)
    with pytest.raises(KafkaFailure) as err:  # the sandbox speaks no SASL
        KafkaAdmin(settings, timeout_ms=1000)
    assert PASSWORD not in str(err.value)
    assert "sasl_plain_password" in caplog.text  # the config line was logged ...
    assert PASSWORD not in caplog.text  # ... masked


def test_masked_string_encodes_to_the_secret() -> None:
    secret = Masked(PASSWORD)
    assert secret.encode() == PASSWORD.encode() and "\0".join(["u", secret]) == "u\0" + PASSWORD
    assert PASSWORD not in f"{secret} {secret!r} {[secret]}"


def test_tls_material_is_written_private() -> None:
    tmpdir, files = write_private_files(TlsFiles(ca=b"CA", cert=b"CERT", key=b"KEY"))
    try:
        assert stat.S_IMODE(os.stat(tmpdir).st_mode) == 0o700
        assert set(files) == {"ssl_cafile", "ssl_certfile", "ssl_keyfile"}
        for path in files.values():
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(files["ssl_keyfile"], "rb") as f:
            assert f.read() == b"KEY"
    finally:
        import shutil

        shutil.rmtree(tmpdir)


@pytest.mark.parametrize(
    ("spec", "secrets", "field", "reason"),
    [
        (None, {}, "spec.kafka", "InvalidSpec"),
        ({"bootstrapServers": "no-port"}, {}, "spec.kafka.bootstrapServers", "InvalidSpec"),
        ({"bootstrapServers": "k:9092", "securityProtocol": "SASL_SSL"}, {}, "spec.kafka.sasl", "InvalidSpec"),
        ({"bootstrapServers": "k:9092", "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "s"}}}, {},
         "spec.kafka.securityProtocol", "InvalidSpec"),
        ({"bootstrapServers": "k:9092", "securityProtocol": "SASL_PLAINTEXT",
          "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "missing"}}}, {}, "spec.kafka.sasl.secretRef",
         "SecretNotFound"),
        ({"bootstrapServers": "k:9092", "securityProtocol": "SASL_PLAINTEXT",
          "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "s", "passwordKey": "pw"}}},
         {"s": {"username": b"u"}}, "spec.kafka.sasl.secretRef.passwordKey", "SecretNotFound"),
        ({"bootstrapServers": "k:9092", "securityProtocol": "SSL", "tls": {"caSecretRef": {"name": "ca"}}}, {},
         "spec.kafka.tls.caSecretRef", "SecretNotFound"),
    ],
)
def test_connection_spec_errors_name_the_field(spec: dict | None, secrets: dict, field: str, reason: str) -> None:
    def read(name: str) -> dict[str, bytes]:
        if name not in secrets:
            raise LookupError(name)
        return secrets[name]

    with pytest.raises(SpecError) as err:
        connection_from_spec(spec, read)
    assert (err.value.field, err.value.reason) == (field, reason)


def test_connection_from_spec_with_sasl_and_tls() -> None:
    secrets = {"user": {"username": b"svc", "password": PASSWORD.encode()},
               "ca": {"ca.crt": b"CA"}, "client": {"tls.crt": b"C", "tls.key": b"K"}}
    settings = connection_from_spec(
        {"bootstrapServers": "a:9093,b:9093", "securityProtocol": "SASL_SSL",
         "sasl": {"mechanism": "SCRAM-SHA-256", "secretRef": {"name": "user"}},
         "tls": {"caSecretRef": {"name": "ca"}, "certSecretRef": {"name": "client"}}},
        lambda name: secrets[name],
    )
    assert (settings.sasl_mechanism, settings.username) == ("SCRAM-SHA-256", "svc")
    assert settings.tls == TlsFiles(b"CA", b"C", b"K")
    assert set(settings.secrets) == {PASSWORD, "K"}
