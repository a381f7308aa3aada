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

# Kafka errors worth another try later: a busy group or a coordinator that moved. UNKNOWN_MEMBER_ID is what an
# admin OffsetCommit gets while the group has members. (The adapter also honours kafka-python's `retriable`.)
RETRY_LATER = frozenset(
    {
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "REQUEST_TIMED_OUT",
        "REBALANCE_IN_PROGRESS",
        "UNKNOWN_MEMBER_ID",
        "ILLEGAL_GENERATION",
        "NETWORK_EXCEPTION",
        CONNECTION_FAILED,
    }
)


def is_retriable(name: str) -> bool:
    """Whether Kafka's answer `name` means: not done, try again later."""
    return name in RETRY_LATER


class KafkaFailure(Exception):
    """Kafka (or the way to it) refused a whole request. `code` is Kafka's error name when Kafka answered."""

    def __init__(self, code: str, message: str, retriable: bool) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retriable = retriable
