"""Decode and encode every record Apache Kafka writes to `__consumer_offsets`.

Pure functions over bytes; no Kafka client, no Spark. The Spark job decodes with it, the sandbox
broker writes with it, and the CLI's `decode`/`dump` print what it returns.
"""

from .builders import (
    consumer_group,
    consumer_group_current_assignment,
    consumer_group_epoch,
    consumer_group_member_subscription,
    consumer_group_regular_expression,
    consumer_group_target_assignment_epoch,
    group_metadata,
    group_metadata_tombstone,
    offset_commit,
    offset_commit_tombstone,
    offset_commit_value_version,
    share_group,
    streams_group,
    streams_group_topology,
)
from .jsonable import to_jsonable
from .partitioning import java_string_hash, partition_for
from .records import (
    RECORD_TYPES,
    RecordType,
    SubscriptionError,
    decode_consumer_protocol,
    decode_key,
    decode_record,
    decode_value,
    encode_consumer_protocol,
    encode_key,
    encode_record,
    encode_value,
    record_type_names,
    streams_source_topics,
    subscription_topics,
)
from .schema import UNKNOWN_TAGS
from .schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from .wire import CodecError

__all__ = [
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "RECORD_TYPES",
    "UNKNOWN_TAGS",
    "CodecError",
    "RecordType",
    "SubscriptionError",
    "consumer_group",
    "consumer_group_current_assignment",
    "consumer_group_epoch",
    "consumer_group_member_subscription",
    "consumer_group_regular_expression",
    "consumer_group_target_assignment_epoch",
    "decode_consumer_protocol",
    "decode_key",
    "decode_record",
    "decode_value",
    "encode_consumer_protocol",
    "encode_key",
    "encode_record",
    "encode_value",
    "group_metadata",
    "group_metadata_tombstone",
    "java_string_hash",
    "offset_commit",
    "offset_commit_tombstone",
    "offset_commit_value_version",
    "partition_for",
    "record_type_names",
    "share_group",
    "streams_group",
    "streams_group_topology",
    "streams_source_topics",
    "subscription_topics",
    "to_jsonable",
]
