"""The protocol messages kafka-python lacks (kafka_offsets_model.kafka_messages: ConsumerGroupDescribe,
StreamsGroupDescribe) have, in version 0, Apache Kafka's own wire shape: the same fields in the same order,
types, nullability and nested structs as the message specifications inside Kafka's kafka-clients jar (the one
the real-broker tests resolve, newest version). Both once drifted from Kafka's (a draft of KIP-848's
Assignment and of KIP-1071's topology and members): the sandbox answered the same wrong shape, so only the
real broker showed it, as a response the operator could not decode."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from real_kafka import NEWEST, home

import kafka_offsets_model.kafka_messages as messages

MESSAGES = ("ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse", "StreamsGroupDescribeRequest",
            "StreamsGroupDescribeResponse")
Shape = list[tuple[str, bool, str, bool, Any]]


def shape(fields: Sequence[Mapping[str, Any]], structs: Mapping[str, Sequence[Mapping[str, Any]]]) -> Shape:
    """What version 0 puts on the wire: (name, array?, type or "struct", nullable?, nested shape)."""
    out: Shape = []
    for f in fields:
        if not str(f.get("versions", "0+")).startswith("0") or "taggedVersions" in f:
            continue
        typ = str(f["type"])
        base = typ.removeprefix("[]")
        nested = f.get("fields") or structs.get(base)
        out.append((f["name"], typ.startswith("[]"), "struct" if nested else base,
                    str(f.get("nullableVersions", "")).startswith("0"), shape(nested, structs) if nested else None))
    return out


def of(spec: Mapping[str, Any]) -> Shape:
    return shape(spec["fields"], {c["name"]: c["fields"] for c in spec.get("commonStructs", [])})


@pytest.fixture(scope="module")
def kafka_clients() -> Path:
    jars = sorted((home(NEWEST) / "libs").glob("kafka-clients-*.jar"))
    if not jars:
        pytest.skip(f"Kafka {NEWEST}'s jars are not resolved here (scripts/dev.sh kafka, or any real-broker test)")
    return jars[0]


@pytest.mark.parametrize("name", MESSAGES)
def test_our_message_has_kafkas_wire_shape(kafka_clients: Path, name: str) -> None:
    with zipfile.ZipFile(kafka_clients) as jar:
        text = jar.read(f"common/message/{name}.json").decode()
    kafka = json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))
    ours = json.loads((Path(messages.__file__).parent / f"{name}.json").read_text())
    assert of(ours) == of(kafka)
