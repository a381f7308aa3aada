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
- `rules.staleGroups`: unset (no group is deleted whole unless asked: `staleGroups: {emptyFor: 30d}`).
- `protect.groups`: `[]`; `protect.keepAlive`: `false`.

Group patterns are shell-style globs matched against the whole group id, case-sensitively
(`fnmatch.fnmatchcase`: `*`, `?`, `[abc]`). Every non-empty string is a valid pattern (an unmatched `[`
matches itself), so the schema's non-empty rule is all there is to check.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

import yaml

from .durations import format_duration_ms, parse_duration_ms
from .errors import SpecError
from .openapi import SchemaCheck
from .policy_schema import POLICY_FILE, GroupsSpec, ProtectSpec, RulesSpec
from .typed_schema import parse

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
    stale_group_ms: int | None = None  # rules.staleGroups.emptyFor: delete whole groups Empty this long


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
        if self.rules.stale_group_ms is not None:
            rules["staleGroups"] = {"emptyFor": format_duration_ms(self.rules.stale_group_ms)}
        return {
            "groups": {"include": list(self.groups.include), "exclude": list(self.groups.exclude)},
            "rules": rules,
            "protect": {"groups": list(self.protect.groups), "keepAlive": self.protect.keep_alive},
        }


def _matches_any(group: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(group, p) for p in patterns)


def parse_policy(spec: Any, path: str = SPEC, schema: SchemaCheck = POLICY_FILE) -> Policy:
    """Parses a spec mapping (None counts as an empty spec). `schema`: what the whole spec is checked against;
    POLICY_FILE leaves the operator's sections (kafka, mode, ...) unchecked, the operator's `analyze` passes
    the CRD's own spec schema so a file is refused as the API server would refuse it."""
    if spec is None:
        return Policy()
    return checked_policy(schema.check(spec, path), path)


def checked_policy(fields: Mapping[str, Any], path: str = SPEC) -> Policy:
    """A spec already checked against policy_schema's properties (by POLICY_FILE, or the CRD's schema that
    carries them): parsed with the typed classes (defaults included), then what a schema cannot say."""
    return policy_of(parse(GroupsSpec, fields.get("groups") or {"include": ["*"]}),
                     parse(RulesSpec, fields.get("rules") or {}), parse(ProtectSpec, fields.get("protect") or {}),
                     path)


def policy_of(groups: GroupsSpec, rules: RulesSpec, protect: ProtectSpec, path: str = SPEC) -> Policy:
    """The analysis part as the rules use it (durations in milliseconds), from its typed parse."""
    where = f"{path}.rules"
    return Policy(
        groups=GroupSelector(include=groups.include, exclude=groups.exclude),
        rules=Rules(
            empty_group_retention_ms=_duration(rules.empty_group_retention, f"{where}.emptyGroupRetention"),
            unsubscribed_topic_retention_ms=_duration(rules.unsubscribed_topic_retention,
                                                      f"{where}.unsubscribedTopicRetention"),
            standalone_retention_ms=_duration(rules.standalone_retention, f"{where}.standaloneRetention"),
            deleted_topics=DeletedTopics(rules.deleted_topics),
            stale_group_ms=_duration(None if rules.stale_groups is None else rules.stale_groups.empty_for,
                                     f"{where}.staleGroups.emptyFor"),
        ),
        protect=Protection(groups=protect.groups, keep_alive=protect.keep_alive),
    )


POLICY_KIND = "ConsumerGroupOffsetPolicy"
# Top-level keys of a Kubernetes manifest; a spec has none of them (its fields are groups, rules, ...).
_MANIFEST_KEYS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
SHAPES = (
    f"a policy file holds a {POLICY_KIND}'s spec (groups:, rules:, protect:), that spec under a top-level "
    f"spec:, or a whole {POLICY_KIND} manifest (apiVersion:, kind:, spec:)"
)


def policy_from_yaml(text: str, source: str = "policy", schema: SchemaCheck = POLICY_FILE) -> Policy:
    """A policy file holds one of three shapes (SHAPES): the bare spec, `spec:` wrapping it (a manifest
    without its header, as people cut it out of one), or the whole resource. Anything else is an error
    that names the shapes."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise SpecError(source, f"{problem}{where}") from None
    if doc is None:
        return Policy()
    if not isinstance(doc, Mapping):
        raise SpecError(source, f"got a {_yaml_kind(doc)}; {SHAPES}")
    if "kind" in doc or "apiVersion" in doc:
        kind = doc.get("kind")
        if kind != POLICY_KIND:
            raise SpecError("kind", f"expected {POLICY_KIND}, got {kind!r}")
        return parse_policy(doc.get("spec"), SPEC, schema)
    if SPEC in doc:
        extra = sorted(str(k) for k in doc if k not in _MANIFEST_KEYS)
        if extra:
            raise SpecError(source, f"top-level spec: next to {', '.join(extra)}; {SHAPES}")
        return parse_policy(doc[SPEC], SPEC, schema)
    try:
        return parse_policy(doc, SPEC, schema)
    except SpecError as exc:
        if exc.field.count(".") == 1 and exc.problem.startswith("unknown field"):
            raise SpecError(exc.field, f"{exc.problem}; {SHAPES}", exc.reason) from None
        raise


def _yaml_kind(doc: Any) -> str:
    if isinstance(doc, list):
        return "list"
    if isinstance(doc, str):
        return "string"
    return type(doc).__name__


# What a regular expression has and a glob meant for a group id almost never does.
_REGEX_SIGNS = (".*", ".+", "\\d", "\\w", "\\.", "(", "|", "{")


def looks_like_regex(pattern: str) -> bool:
    """`^live-.*$`, `team-a.*`, `(a|b)-.+`: regex syntax where a glob was surely meant (a glob's `.*`
    matches a literal dot followed by anything, so `team-a.*` misses `team-a-orders`)."""
    return pattern.startswith("^") or pattern.endswith("$") or any(sign in pattern for sign in _REGEX_SIGNS)


def glob_for(pattern: str) -> str | None:
    """The glob a regex-looking pattern most likely meant, or None when there is no simple one."""
    glob = pattern.removeprefix("^").removesuffix("$").replace(".*", "*").replace(".+", "?*")
    glob = glob.replace("\\.", ".")
    return None if looks_like_regex(glob) or glob == pattern else glob


def pattern_fields(policy: Policy, path: str = SPEC) -> list[tuple[str, str]]:
    """(field, pattern) for every group pattern of the policy."""
    return [
        *((f"{path}.groups.include", p) for p in policy.groups.include),
        *((f"{path}.groups.exclude", p) for p in policy.groups.exclude),
        *((f"{path}.protect.groups", p) for p in policy.protect.groups),
    ]


def regex_pattern_warnings(policy: Policy, path: str = SPEC) -> list[str]:
    """One line per group pattern that looks like a regular expression (patterns are globs)."""
    lines = []
    for field, pattern in pattern_fields(policy, path):
        if looks_like_regex(pattern):
            meant = glob_for(pattern)
            hint = f"; did you mean {meant!r}?" if meant else ""
            lines.append(
                f"{field}: {pattern!r} looks like a regular expression, but group patterns are globs "
                f"(*, ?, [abc]) matched against the whole group id{hint}"
            )
    return lines


def unmatched_pattern_warnings(policy: Policy, groups: Collection[str], path: str = SPEC) -> list[str]:
    """One line per group pattern (other than the default `*`) that matches none of `groups`."""
    return [
        f"{field}: {pattern!r} matches none of the {len(groups)} {plural(len(groups), 'group')} with committed "
        "offsets"
        for field, pattern in pattern_fields(policy, path)
        if pattern != "*" and not any(fnmatchcase(g, pattern) for g in groups)
    ]


def plural(n: int, word: str) -> str:
    return word if n == 1 else f"{word}s"


def _duration(value: str | None, where: str) -> int | None:
    """The schema checked the grammar; how long a duration may be is checked here."""
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(where, str(exc)) from None
