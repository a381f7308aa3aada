"""Kafka protocol messages kafka-python 3.0.12 does not define, defined the way kafka-python defines its own
(an `ApiMessage` subclass named after a JSON message schema, `load_json` naming the package that holds it:
kafka/protocol/api_message.py, schemas/load_json.py): ConsumerGroupDescribe (API 69, KIP-848) and
StreamsGroupDescribe (API 89, KIP-1071), version 0.

The JSON files follow Apache Kafka's message specifications field for field:
clients/src/main/resources/common/message/ConsumerGroupDescribeRequest.json, ConsumerGroupDescribeResponse.json,
StreamsGroupDescribeRequest.json and StreamsGroupDescribeResponse.json (as released in Kafka 4.4.0's
kafka-clients; tests/unit/test_kafka_messages_shape.py compares the wire shape with the jar's). Version 0 is
all the operator needs (ConsumerGroupDescribe v1 only adds MemberType, KIP-1099; StreamsGroupDescribe v1 a
topology description, KIP-1331), and a broker that serves a later version serves version 0 too.

Shared by the operator's Kafka adapter (which asks) and the sandbox broker (which answers).
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage


class ConsumerGroupDescribeRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


__all__ = [
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
]
