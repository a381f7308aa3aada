"""The `spec` of a ConsumerGroupOffsetPolicy, parsed into frozen values the rules can trust.

The same YAML the CRD accepts (BRIEF §4), checked against the same schema (policy_schema.py, which the CRD
is built from). Only the parts the analysis needs are interpreted (`groups`, `rules`, `protect`); the
connection, mode, schedule and engine sections are the operator's and are accepted as they are. Every
mistake raises SpecError naming the field, so the operator can put the message in a status condition and
the CLI can print it as one line.

Defaults (a spec of `{}` is valid and reports without proposing anything), the CRD's own:

- `groups.include`: `["*"]` (every group); `groups.exclude`: `[]`.
- `rules.emptyGroupRetention`, `rules.unsubscribedTopicRetention`, `rules.standaloneRetention`: unset.
  An unset rule means "no policy rule of that kind": offsets of that shape are never candidates (the
  broker's own retention still applies and is reported as brokerExpiresAt).
- `rules.deletedTopics`: `Keep` (safety first: deleting offsets of vanished topics is opt-in).
- `protect.groups`: `[]`; `protect.keepAlive`: `false`.

Group patterns are shell-style globs matched against the whole group id, case-sensitively
(`fnmatch.fnmatchcase`: `*`, `?`, `[abc]`). Every non-empty string is a valid pattern (an unmatched `[`
matches itself), so the schema's non-empty rule is all there is to check.
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
from .policy_schema import POLICY_FILE

SPEC = "spec"


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
    return checked_policy(POLICY_FILE.check(spec, path), path)


def checked_policy(fields: Mapping[str, Any], path: str = SPEC) -> Policy:
    """A spec already checked against policy_schema's properties (by POLICY_FILE, or the CRD's schema that
    carries them): defaults, and what a schema cannot say."""
    groups = fields.get("groups") or {}
    rules = fields.get("rules") or {}
    protect = fields.get("protect") or {}
    return Policy(
        groups=GroupSelector(include=tuple(groups.get("include", ("*",))), exclude=tuple(groups.get("exclude", ()))),
        rules=Rules(
            empty_group_retention_ms=_duration(rules, "emptyGroupRetention", f"{path}.rules"),
            unsubscribed_topic_retention_ms=_duration(rules, "unsubscribedTopicRetention", f"{path}.rules"),
            standalone_retention_ms=_duration(rules, "standaloneRetention", f"{path}.rules"),
            deleted_topics=DeletedTopics(rules.get("deletedTopics", DeletedTopics.KEEP)),
        ),
        protect=Protection(groups=tuple(protect.get("groups", ())), keep_alive=protect.get("keepAlive", False)),
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


def _duration(rules: Mapping[str, Any], name: str, path: str) -> int | None:
    """The schema checked the grammar; how long a duration may be is checked here."""
    value = rules.get(name)
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(f"{path}.{name}", str(exc)) from None
