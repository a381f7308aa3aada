"""The `spec` of a ConsumerGroupOffsetPolicy, parsed into frozen values the rules can trust.

The same YAML the CRD accepts (BRIEF §4). Only the parts the analysis needs are interpreted (`groups`,
`rules`, `protect`); the connection, mode, schedule and engine sections are the operator's and are
accepted as they are. Every mistake raises SpecError naming the field, so the operator can put the
message in a status condition and the CLI can print it as one line.

Defaults (a spec of `{}` is valid and reports without proposing anything):

- `groups.include`: `["*"]` (every group); `groups.exclude`: `[]`.
- `rules.emptyGroupRetention`, `rules.unsubscribedTopicRetention`, `rules.standaloneRetention`: unset.
  An unset rule means "no policy rule of that kind": offsets of that shape are never candidates (the
  broker's own retention still applies and is reported as brokerExpiresAt).
- `rules.deletedTopics`: `Keep` (safety first: deleting offsets of vanished topics is opt-in).
- `protect.groups`: `[]`; `protect.keepAlive`: `false`.

Group patterns are shell-style globs matched against the whole group id, case-sensitively
(`fnmatch.fnmatchcase`: `*`, `?`, `[abc]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

import yaml

from .durations import format_duration_ms, parse_duration_ms
from .errors import SpecError

SPEC = "spec"

# The sections of a ConsumerGroupOffsetPolicy spec; the ones not listed in _OWN belong to the operator.
_SPEC_FIELDS = frozenset({"kafka", "groups", "rules", "protect", "mode", "schedule", "analysis"})
_GROUPS_FIELDS = frozenset({"include", "exclude"})
_RULES_FIELDS = frozenset(
    {"emptyGroupRetention", "unsubscribedTopicRetention", "standaloneRetention", "deletedTopics"}
)
_PROTECT_FIELDS = frozenset({"groups", "keepAlive"})


class DeletedTopics(StrEnum):
    DELETE = "Delete"
    KEEP = "Keep"


@dataclass(frozen=True)
class GroupSelector:
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()

    def selects(self, group: str) -> bool:
        return _matches_any(group, self.include) and not _matches_any(group, self.exclude)


@dataclass(frozen=True)
class Rules:
    """Retentions in milliseconds; None means the policy has no rule of that kind."""

    empty_group_retention_ms: int | None = None
    unsubscribed_topic_retention_ms: int | None = None
    standalone_retention_ms: int | None = None
    deleted_topics: DeletedTopics = DeletedTopics.KEEP


@dataclass(frozen=True)
class Protection:
    groups: tuple[str, ...] = ()
    keep_alive: bool = False

    def protects(self, group: str) -> bool:
        return _matches_any(group, self.groups)


@dataclass(frozen=True)
class Policy:
    groups: GroupSelector = GroupSelector()
    rules: Rules = Rules()
    protect: Protection = Protection()

    def to_spec(self) -> dict[str, Any]:
        """The canonical spec (defaults filled in): what the analysis ran with, for reports."""
        rules: dict[str, Any] = {"deletedTopics": self.rules.deleted_topics.value}
        for name, ms in (
            ("emptyGroupRetention", self.rules.empty_group_retention_ms),
            ("unsubscribedTopicRetention", self.rules.unsubscribed_topic_retention_ms),
            ("standaloneRetention", self.rules.standalone_retention_ms),
        ):
            if ms is not None:
                rules[name] = format_duration_ms(ms)
        return {
            "groups": {"include": list(self.groups.include), "exclude": list(self.groups.exclude)},
            "rules": rules,
            "protect": {"groups": list(self.protect.groups), "keepAlive": self.protect.keep_alive},
        }


def _matches_any(group: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(group, p) for p in patterns)


def parse_policy(spec: Any, path: str = SPEC) -> Policy:
    """Parses a spec mapping (None counts as an empty spec)."""
    if spec is None:
        return Policy()
    fields = _mapping(spec, path, _SPEC_FIELDS)
    return Policy(
        groups=_parse_groups(fields.get("groups"), f"{path}.groups"),
        rules=_parse_rules(fields.get("rules"), f"{path}.rules"),
        protect=_parse_protect(fields.get("protect"), f"{path}.protect"),
    )


def policy_from_yaml(text: str, source: str = "policy") -> Policy:
    """A policy file holds either a whole ConsumerGroupOffsetPolicy resource or just its spec."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise SpecError(source, f"{problem}{where}") from None
    if isinstance(doc, Mapping) and ("kind" in doc or "apiVersion" in doc):
        kind = doc.get("kind")
        if kind != "ConsumerGroupOffsetPolicy":
            raise SpecError("kind", f"expected ConsumerGroupOffsetPolicy, got {kind!r}")
        return parse_policy(doc.get("spec"), SPEC)
    return parse_policy(doc, SPEC)


def _parse_groups(value: Any, path: str) -> GroupSelector:
    if value is None:
        return GroupSelector()
    fields = _mapping(value, path, _GROUPS_FIELDS)
    include = fields.get("include")
    return GroupSelector(
        include=("*",) if include is None else _patterns(include, f"{path}.include"),
        exclude=_patterns(fields.get("exclude"), f"{path}.exclude"),
    )


def _parse_rules(value: Any, path: str) -> Rules:
    if value is None:
        return Rules()
    fields = _mapping(value, path, _RULES_FIELDS)
    deleted = fields.get("deletedTopics")
    if deleted is None:
        deleted_topics = DeletedTopics.KEEP
    elif isinstance(deleted, str) and deleted in {d.value for d in DeletedTopics}:
        deleted_topics = DeletedTopics(deleted)
    else:
        raise SpecError(f"{path}.deletedTopics", f"{deleted!r} is not one of Delete, Keep")
    return Rules(
        empty_group_retention_ms=_duration(fields.get("emptyGroupRetention"), f"{path}.emptyGroupRetention"),
        unsubscribed_topic_retention_ms=_duration(
            fields.get("unsubscribedTopicRetention"), f"{path}.unsubscribedTopicRetention"
        ),
        standalone_retention_ms=_duration(fields.get("standaloneRetention"), f"{path}.standaloneRetention"),
        deleted_topics=deleted_topics,
    )


def _parse_protect(value: Any, path: str) -> Protection:
    if value is None:
        return Protection()
    fields = _mapping(value, path, _PROTECT_FIELDS)
    keep_alive = fields.get("keepAlive", False)
    if keep_alive is None:
        keep_alive = False
    if not isinstance(keep_alive, bool):
        raise SpecError(f"{path}.keepAlive", f"{keep_alive!r} is not true or false")
    return Protection(groups=_patterns(fields.get("groups"), f"{path}.groups"), keep_alive=keep_alive)


def _mapping(value: Any, path: str, known: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(path, f"expected a mapping, got {_kind(value)}")
    for key in value:
        if not isinstance(key, str):
            raise SpecError(path, f"field names must be strings, got {key!r}")
        if key not in known:
            raise SpecError(f"{path}.{key}", f"unknown field (known: {', '.join(sorted(known))})")
    return value


def _patterns(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SpecError(path, f"expected a list of group patterns, got {_kind(value)}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise SpecError(f"{path}[{i}]", f"expected a non-empty group pattern, got {item!r}")
        out.append(item)
    return tuple(out)


def _duration(value: Any, path: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(path, str(exc)) from None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)
