"""Topic name rules, as in Kafka's clients/src/main/java/org/apache/kafka/common/internals/Topic.java."""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def invalid_reason(name: str | None) -> str | None:
    """Why `name` cannot be a topic name (Topic.validate's message), or None if it can."""
    if name is None or name == "":
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
            f"{MAX_NAME_LENGTH}"
        )
    if not _LEGAL.fullmatch(name):
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def unify_collision_chars(name: str) -> str:
    """'.' and '_' collide in metric names, so Kafka refuses a topic differing from another only by them."""
    return name.replace(".", "_")
