"""Committed offsets and consumer groups as the operator reasons about them, with Kafka's error NAMES
(`GROUP_SUBSCRIBED_TO_TOPIC`, ...) instead of client exception classes. The Kafka adapter
(adapters/kafka_admin.py) builds these from kafka-python's answers; decisions only ever see these."""

from __future__ import annotations

from dataclasses import dataclass

TP = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class Committed:
    """A committed offset as OffsetFetch returns it."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True)
class LogRange:
    """A partition's log as ListOffsets reports it: the log start offset (EARLIEST) and the log end offset
    (LATEST, the high watermark). A committed offset is valid from start to end, both included."""

    start: int
    end: int


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    client_host: str
    topics: tuple[str, ...] | None  # the subscription, when the member's metadata could be read


@dataclass(frozen=True)
class GroupInfo:
    """A classic group as DescribeGroups shows it. A KIP-848 group or a group that does not exist shows as
    Dead (with GROUP_ID_NOT_FOUND from DescribeGroups v6 on)."""

    group_id: str
    state: str
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[Member, ...] = ()
    error: str | None = None

    @property
    def exists(self) -> bool:
        return self.state != "Dead"

    @property
    def active(self) -> bool:
        return bool(self.members) or self.state in ("Stable", "PreparingRebalance", "CompletingRebalance")

    @property
    def subscribed_topics(self) -> frozenset[str] | None:
        """Union of the members' subscriptions; None when some member's subscription is unknown."""
        topics: set[str] = set()
        for member in self.members:
            if member.topics is None:
                return None
            topics.update(member.topics)
        return frozenset(topics)


# Not Kafka error codes: what we call failures that happen before Kafka answers.
CONNECTION_FAILED = "CONNECTION_FAILED"
CLIENT_ERROR = "CLIENT_ERROR"
SSL_HANDSHAKE_FAILED = "SSL_HANDSHAKE_FAILED"  # the TLS handshake failed (Java's SslAuthenticationException)

# Answers that mean the group is busy: it has members (an admin OffsetCommit gets UNKNOWN_MEMBER_ID while it
# has), or it is rebalancing. kafka-python does not call them retriable (to a member they mean: rejoin); to
# the operator they mean: wait until the group is empty, then try again. The adapter's `retry_later`, the one
# classification of Kafka's answers, adds these to kafka-python's own; decisions ask `group_busy`.
# Answers that do not tell whether a request that changes offsets was applied: the connection dropped or no
# answer came in time (kafka-python raises RequestTimedOutError, Kafka's REQUEST_TIMED_OUT, for its own
# timeout), or the coordinator's write to __consumer_offsets timed out. Only re-reading can tell.
OUTCOME_UNKNOWN = frozenset({CONNECTION_FAILED, "REQUEST_TIMED_OUT"})

BUSY_GROUP = frozenset({"UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"})


def group_busy(name: str | None) -> bool:
    """Whether Kafka's answer `name` means: the group has members (or is rebalancing) right now."""
    return name in BUSY_GROUP


class KafkaFailure(Exception):
    """Kafka (or the way to it) refused a whole request. `code` is Kafka's error name when Kafka answered;
    `retriable` is adapters.kafka_admin.retry_later's verdict."""

    def __init__(self, code: str, message: str, retriable: bool) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retriable = retriable


@dataclass(frozen=True)
class ModernMember:
    """A member of a KIP-848 consumer group (ConsumerGroupDescribe) or a streams group (StreamsGroupDescribe)."""

    member_id: str
    client_id: str
    client_host: str
    topics: tuple[str, ...] = ()  # subscribed topic names (consumer groups)
    regex: str | None = None  # the subscribed regular expression (consumer groups), resolved or not


@dataclass(frozen=True)
class ModernGroup:
    """A KIP-848 or streams group as its describe API shows it (DescribeGroups shows them as Dead). `kind`:
    "consumer" or "streams"; a group of that kind that does not exist has state "Dead"."""

    group_id: str
    kind: str
    state: str
    members: tuple[ModernMember, ...] = ()
    source_topics: frozenset[str] = frozenset()  # streams: the topology's source topics

    @property
    def exists(self) -> bool:
        return self.state != "Dead"
