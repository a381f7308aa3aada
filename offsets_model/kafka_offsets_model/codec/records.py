"""Whole `__consumer_offsets` records: the int16 record type in front of the key, the int16 version in
front of the value, tombstones, and the consumer protocol inside classic group members.

A decoded record is a plain dict, the same shape the CLI prints:
`{"type", "keyVersion", "key", "valueVersion", "value"}` (plus `"unsupported": true` for share and
streams group records other than the streams topology, whose values are kept as raw bytes under
`value["_raw"]`). Bytes after the last
field of a key or value are kept under `"_trailing"`: Kafka's reader ignores them
(CoordinatorRecordSerde.readMessage never checks that the buffer is used up), so they do not make a
record unreadable, and keeping them lets the record be re-encoded byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import schemas as s
from .fastpath import offset_commit_record
from .schema import Message, Struct, as_bytes
from .wire import CodecError, Reader, Writer

TRAILING = "_trailing"
RAW = "_raw"


@dataclass(frozen=True)
class RecordType:
    """One record type: the key's int16. `value` is None where we only recognise the key."""

    id: int
    name: str
    key: Struct
    value: Message | None
    key_message: Message

    @property
    def supported(self) -> bool:
        return self.value is not None


def _t(id_: int, name: str, key: Struct, value: Message | None = None) -> RecordType:
    # Keys are never flexible and have a single layout: version 0 of their struct.
    return RecordType(id_, name, key, value, Message(key.name, key, 0, 0))


# The record type ids are the "apiKey" of Kafka's coordinator-key specs (the key's "version" in Kafka
# 3.x): group-coordinator/src/main/resources/common/message/*Key.json.
RECORD_TYPES: dict[int, RecordType] = {
    t.id: t
    for t in (
        _t(0, "OffsetCommit", s.OFFSET_COMMIT_KEY, s.OFFSET_COMMIT_VALUE),
        _t(1, "OffsetCommit", s.OFFSET_COMMIT_KEY, s.OFFSET_COMMIT_VALUE),
        _t(2, "GroupMetadata", s.GROUP_METADATA_KEY, s.GROUP_METADATA_VALUE),
        _t(3, "ConsumerGroupMetadata", s.GROUP_KEY, s.CONSUMER_GROUP_METADATA_VALUE),
        _t(4, "ConsumerGroupPartitionMetadata", s.GROUP_KEY, s.CONSUMER_GROUP_PARTITION_METADATA_VALUE),
        _t(5, "ConsumerGroupMemberMetadata", s.GROUP_MEMBER_KEY, s.CONSUMER_GROUP_MEMBER_METADATA_VALUE),
        _t(
            6,
            "ConsumerGroupTargetAssignmentMetadata",
            s.GROUP_KEY,
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        _t(
            7,
            "ConsumerGroupTargetAssignmentMember",
            s.GROUP_MEMBER_KEY,
            s.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        _t(
            8,
            "ConsumerGroupCurrentMemberAssignment",
            s.GROUP_MEMBER_KEY,
            s.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        _t(9, "ShareGroupPartitionMetadata", s.GROUP_KEY),
        _t(10, "ShareGroupMemberMetadata", s.GROUP_MEMBER_KEY),
        _t(11, "ShareGroupMetadata", s.GROUP_KEY),
        _t(12, "ShareGroupTargetAssignmentMetadata", s.GROUP_KEY),
        _t(13, "ShareGroupTargetAssignmentMember", s.GROUP_MEMBER_KEY),
        _t(14, "ShareGroupCurrentMemberAssignment", s.GROUP_MEMBER_KEY),
        _t(15, "ShareGroupStatePartitionMetadata", s.GROUP_KEY),
        _t(
            16,
            "ConsumerGroupRegularExpression",
            s.REGULAR_EXPRESSION_KEY,
            s.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
        ),
        _t(17, "StreamsGroupMetadata", s.GROUP_KEY),
        _t(18, "StreamsGroupPartitionMetadata", s.GROUP_KEY),
        _t(19, "StreamsGroupMemberMetadata", s.GROUP_MEMBER_KEY),
        _t(20, "StreamsGroupTargetAssignmentMetadata", s.GROUP_KEY),
        _t(21, "StreamsGroupTargetAssignmentMember", s.GROUP_MEMBER_KEY),
        _t(22, "StreamsGroupCurrentMemberAssignment", s.GROUP_MEMBER_KEY),
        _t(23, "StreamsGroupTopology", s.GROUP_KEY, s.STREAMS_GROUP_TOPOLOGY_VALUE),
        _t(24, "StreamsGroupTargetAssignmentResolvedTopicIds", s.GROUP_KEY),
    )
}

# Which key types a type name may be written with; the first is what current Kafka writes.
_IDS_BY_NAME: dict[str, tuple[int, ...]] = {}
for _rt in sorted(RECORD_TYPES.values(), key=lambda t: -t.id):
    _IDS_BY_NAME[_rt.name] = (_rt.id, *_IDS_BY_NAME.get(_rt.name, ()))
_IDS_BY_NAME["OffsetCommit"] = (1, 0)


def record_type_names() -> list[str]:
    return sorted(_IDS_BY_NAME)


# ---- decoding ----


def decode_key(key: bytes) -> tuple[RecordType, int, dict[str, Any]]:
    """Returns (record type, key version = the int16 record type, key fields)."""
    r = Reader(_input_bytes(key, "key"), "key")
    type_id = r.int16("record type")
    rtype = RECORD_TYPES.get(type_id)
    if rtype is None:
        raise CodecError(f"unknown record type {type_id}", part="key", offset=0)
    fields = rtype.key_message.decode(r, 0)
    _keep_trailing(r, fields)
    return rtype, type_id, fields


def decode_value(rtype: RecordType, value: bytes) -> tuple[int, dict[str, Any]]:
    r = Reader(_input_bytes(value, "value"), "value")
    version = r.int16("value version")
    if rtype.value is None:
        if version < 0:
            raise r.error(f"negative value version {version}", 0)
        return version, {RAW: r.remaining()}
    rtype.value.check_version(version, r, 0)
    fields = rtype.value.decode(r, version)
    _keep_trailing(r, fields)
    if rtype.id == 2 and fields.get("protocolType") == "consumer":
        _decode_member_protocols(fields)
    return version, fields


def decode_record(key: bytes, value: bytes | None) -> dict[str, Any]:
    """Decodes one record; raises CodecError naming the part and byte that is wrong.

    OffsetCommit records, most of the topic, take a straight-line path (fastpath.py) that returns the
    same dict as the schema interpreter.
    """
    if type(key) is bytes and (value is None or type(value) is bytes):
        fast = offset_commit_record(key, value)
        if fast is not None:
            return fast
    return decode_record_generic(key, value)


def decode_record_generic(key: bytes, value: bytes | None) -> dict[str, Any]:
    """decode_record through the schema interpreter only (the reference the fast path is tested against)."""
    rtype, key_version, key_fields = decode_key(key)
    out: dict[str, Any] = {"type": rtype.name, "keyVersion": key_version, "key": key_fields}
    if value is None:
        out["valueVersion"] = None
        out["value"] = None
    else:
        out["valueVersion"], out["value"] = decode_value(rtype, value)
    if not rtype.supported:
        out["unsupported"] = True
    return out


def _input_bytes(data: Any, part: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise CodecError(f"expected bytes, got {type(data).__name__}", part=part)


def _keep_trailing(r: Reader, fields: dict[str, Any]) -> None:
    if r.pos < r.end:
        fields[TRAILING] = r.remaining()


def _decode_member_protocols(group: dict[str, Any]) -> None:
    """Consumer groups carry a ConsumerProtocolSubscription/Assignment in each member's bytes.

    Bytes that do not parse in full stay bytes, so they re-encode unchanged, and the member gets
    `_subscriptionError` / `_assignmentError` next to them: what is wrong and at which byte of the
    embedded bytes, and for a subscription what Kafka's coordinator makes of it (it reads only the v0
    prefix, so it may still know the member's topics: see subscription_topics). Encoding ignores these.
    """
    for member in group.get("members") or ():
        for field, schema in (
            ("subscription", s.CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", s.CONSUMER_PROTOCOL_ASSIGNMENT),
        ):
            raw = member.get(field)
            if not isinstance(raw, bytes):
                continue
            try:
                member[field] = decode_consumer_protocol(schema, raw, field)
            except CodecError as exc:
                member[f"_{field}Error"] = embedded_error(exc, raw if field == "subscription" else None)


def embedded_error(exc: CodecError, subscription: bytes | None) -> dict[str, Any]:
    """Why embedded consumer-protocol bytes stay raw: `error`, `byte` (offset in those bytes, or None),
    and for a subscription `coordinator`: what ClassicGroup.computeSubscribedTopics gets from them."""
    out: dict[str, Any] = {"error": exc.reason, "byte": exc.offset}
    if subscription is not None:
        try:
            topics = subscription_topics(subscription)
        except SubscriptionError as sub:
            if sub.schema_error:
                out["coordinator"] = (
                    f"SchemaException at byte {sub.offset}: the group's subscriptions are unknown"
                )
            else:
                out["coordinator"] = f"reader error at byte {sub.offset}: Kafka fails to load the partition"
        else:
            out["coordinator"] = {"topics": topics}
    return out


def decode_consumer_protocol(schema: Message, raw: bytes, part: str) -> dict[str, Any]:
    """Kafka parses newer versions than it knows with its newest layout (ConsumerProtocol.java)."""
    r = Reader(_input_bytes(raw, part), part)
    version = r.int16("version")
    if version < 0:
        raise r.error(f"negative {schema.name} version {version}", 0)
    out: dict[str, Any] = {"version": version}
    out.update(schema.decode(r, min(version, schema.max_version)))
    if r.pos < len(raw):
        out[TRAILING] = r.remaining()
    return out


def subscription_topics(subscription: bytes | Mapping[str, Any]) -> list[str]:
    """The topics of one classic consumer member's subscription, read the way the group coordinator
    reads them (ClassicGroup.computeSubscribedTopics): ConsumerProtocol.deserializeVersion reads the int16
    version and the value is ignored (a negative one too), then deserializeConsumerProtocolSubscription(
    buffer, 0) reads only the v0 fields, whatever the version, with the leniency of Kafka's generated
    reader: UserData with any negative length is null, topic names that are not UTF-8 decode with
    replacement characters, bytes after UserData are ignored. A decoded subscription (a dict from
    decode_record) gives its `topics`.

    Raises SubscriptionError where Kafka's reader throws: `schema_error` True where it throws a
    SchemaException (a buffer underflow: the version, a length or a count cut off), which
    computeSubscribedTopics catches (the group's subscriptions become unknown); False where it throws
    another RuntimeException (a negative topic count or name length, a count or length past the end),
    which it does not catch: replaying such a GroupMetadata record fails the load of the partition.
    """
    if isinstance(subscription, Mapping):
        return list(subscription.get("topics") or [])
    raw = _input_bytes(subscription, "subscription")
    r = Reader(raw, "subscription")
    _fixed(r, 2, "version")
    r.pos = 2  # the version is read and ignored
    count = _fixed_int(r, 4, "topics count")
    if count < 0:
        raise SubscriptionError("topics count is negative (null)", r.pos - 4, schema_error=False)
    if count > len(raw) - r.pos:
        raise SubscriptionError(
            f"topics count {count} is larger than the {len(raw) - r.pos} bytes left",
            r.pos - 4,
            schema_error=False,
        )
    topics = []
    for _ in range(count):
        n = _fixed_int(r, 2, "topic length")
        if n < 0:
            raise SubscriptionError("topic name is null", r.pos - 2, schema_error=False)
        if n > len(raw) - r.pos:
            raise SubscriptionError(
                f"topic name of {n} bytes, only {len(raw) - r.pos} left", r.pos - 2, schema_error=False
            )
        topics.append(raw[r.pos : r.pos + n].decode("utf-8", "replace"))
        r.pos += n
    user_data = _fixed_int(r, 4, "user data length")
    if user_data > len(raw) - r.pos:
        raise SubscriptionError(
            f"user data of {user_data} bytes, only {len(raw) - r.pos} left", r.pos - 4, schema_error=False
        )
    return topics


class SubscriptionError(CodecError):
    """A member subscription the group coordinator cannot read (see subscription_topics)."""

    def __init__(self, message: str, offset: int, *, schema_error: bool) -> None:
        super().__init__(message, part="subscription", offset=offset)
        self.schema_error = schema_error


def _fixed(r: Reader, size: int, what: str) -> None:
    if r.pos + size > len(r.buf):
        raise SubscriptionError(
            f"truncated: {what} needs {size} bytes, only {len(r.buf) - r.pos} left", r.pos, schema_error=True
        )


def _fixed_int(r: Reader, size: int, what: str) -> int:
    _fixed(r, size, what)
    value = int.from_bytes(r.buf[r.pos : r.pos + size], "big", signed=True)
    r.pos += size
    return value


def streams_source_topics(topology: Mapping[str, Any]) -> tuple[str, ...]:
    """StreamsTopology.sourceTopicMap's keys (Kafka 4.2, KAFKA-19779): every subtopology's SourceTopics
    and the names of its RepartitionSourceTopics. Kafka 4.1 asks the configured topology instead, which
    holds the same topics once the topology is validated against the cluster's metadata."""
    topics: set[str] = set()
    for sub in topology.get("Subtopologies") or ():
        topics.update(sub.get("SourceTopics") or ())
        topics.update(info["Name"] for info in sub.get("RepartitionSourceTopics") or ())
    return tuple(sorted(topics))


def encode_consumer_protocol(schema: Message, value: Mapping[str, Any], part: str) -> bytes:
    version = value.get("version", schema.max_version)
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 0x7FFF:
        raise CodecError(f"{part}.version: expected a version number, got {version!r}")
    w = Writer()
    w.int16(version)
    schema.encode(w, value, min(version, schema.max_version), part)
    if TRAILING in value:
        w.out += as_bytes(value[TRAILING], f"{part}.{TRAILING}")
    return w.getvalue()


# ---- encoding ----


def encode_key(type_name: str, key: Mapping[str, Any], key_version: int | None = None) -> bytes:
    ids = _IDS_BY_NAME.get(type_name)
    if ids is None:
        raise CodecError(f"unknown record type name {type_name!r}", part="key")
    type_id = ids[0] if key_version is None else key_version
    if type_id not in ids:
        raise CodecError(
            f"{type_name} is written with key version {' or '.join(map(str, ids))}, not {type_id}", part="key"
        )
    if not isinstance(key, Mapping):
        raise CodecError(f"expected an object, got {type(key).__name__}", part="key")
    w = Writer()
    w.int16(type_id)
    RECORD_TYPES[type_id].key_message.encode(w, key, 0, "key")
    _append_trailing(w, key, "key")
    return w.getvalue()


def encode_value(type_name: str, value: Mapping[str, Any], version: int) -> bytes:
    ids = _IDS_BY_NAME.get(type_name)
    if ids is None:
        raise CodecError(f"unknown record type name {type_name!r}", part="value")
    rtype = RECORD_TYPES[ids[0]]
    w = Writer()
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 0x7FFF:
        raise CodecError(f"value version must be a number 0..32767, got {version!r}", part="value")
    if not isinstance(value, Mapping):
        raise CodecError(f"expected an object, got {type(value).__name__}", part="value")
    w.int16(version)
    if rtype.value is None:
        w.out += as_bytes(value.get(RAW, b""), f"value.{RAW}")
        return w.getvalue()
    if rtype.id == 2 and value.get("protocolType") == "consumer":
        value = _encode_member_protocols(value)
    rtype.value.encode(w, value, version, "value")
    _append_trailing(w, value, "value")
    return w.getvalue()


def _append_trailing(w: Writer, fields: Mapping[str, Any], part: str) -> None:
    if TRAILING in fields:
        w.out += as_bytes(fields[TRAILING], f"{part}.{TRAILING}")


def encode_record(record: Mapping[str, Any]) -> tuple[bytes, bytes | None]:
    """The inverse of decode_record: takes its dict shape (JSON-decoded or not) back to bytes."""
    if not isinstance(record, Mapping):
        raise CodecError(f"a record is an object, got {type(record).__name__}")
    type_name = record.get("type")
    if not isinstance(type_name, str):
        raise CodecError("record has no 'type'")
    key = encode_key(type_name, record.get("key") or {}, record.get("keyVersion"))
    value = record.get("value")
    if value is None:
        return key, None
    version = record.get("valueVersion")
    if version is None:
        raise CodecError("record has a value but no 'valueVersion'")
    return key, encode_value(type_name, value, version)


def _encode_member_protocols(group: Mapping[str, Any]) -> Mapping[str, Any]:
    """Members whose subscription/assignment are decoded dicts get them encoded back to bytes.
    Anything that is not a list of objects is left for the schema to reject with a clear error."""
    members = group.get("members")
    if not isinstance(members, (list, tuple)):
        return group
    encoded: list[Any] = []
    for i, member in enumerate(members):
        if isinstance(member, Mapping):
            member = dict(member)
            for field, schema in (
                ("subscription", s.CONSUMER_PROTOCOL_SUBSCRIPTION),
                ("assignment", s.CONSUMER_PROTOCOL_ASSIGNMENT),
            ):
                if isinstance(member.get(field), Mapping):
                    member[field] = encode_consumer_protocol(
                        schema, member[field], f"value.members[{i}].{field}"
                    )
        encoded.append(member)
    return {**group, "members": encoded}
