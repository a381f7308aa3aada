"""A ConsumerGroupOffsetPolicy's analysis part (groups, rules, protect), typed once (typed_schema.py): its
schema as the CRD carries it, and the classes policy.py parses a spec with.

One source: the operator's model/kinds/consumer_group_offset_policy.py builds the policy CRD's `spec` from
these classes and its own sections (kafka, mode, schedule, analysis, history, approval); the analysis reads
policy files (`analyze --policy`) against `POLICY_FILE`, the same classes with those sections left to the
operator. policy.py keeps only what a schema cannot say (how long a duration may be).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from .durations import (
    DURATION_PATTERN,
    DURATION_TITLE,
    MAX_DURATION,
    MAX_DURATION_LENGTH,
    MAX_DURATION_MS,
    UNITS_MS,
)
from .openapi import Schema, SchemaCheck, without_cel_rules
from .typed_schema import Check, Default, Doc, Raw, schema_of

# Pattern lists are written by people and matched against every group the analysis sees (groups x
# patterns); a hundred is far more than a readable policy has.
MAX_PATTERNS = 100
# A pattern longer than this is not written by hand; a longer group id is matched by a prefix* pattern.
MAX_PATTERN_LENGTH = 1024


def duration_rule() -> Schema:
    """The CEL rule that caps a duration at durations.MAX_DURATION, so the API server refuses what
    parse_duration_ms refuses. It sums the parts with the Kubernetes CEL libraries (regex findAll/find,
    lists sum); each part is checked on its own first, so no product can overflow an int64 (CEL's `&&`
    stops at the first false)."""
    units = "{" + ", ".join(f"'{unit}': {ms}" for unit, ms in UNITS_MS.items()) + "}"
    parts = "self.findAll('[0-9]+(ms|s|m|h|d|w)')"
    number = "int(p.find('^[0-9]+'))"
    unit = f"{units}[p.find('[a-z]+$')]"
    return {
        "rule": f"{parts}.all(p, size(p) <= 20 && {number} <= {MAX_DURATION_MS} / {unit})"
                f" && {parts}.map(p, {number} * {unit}).sum() <= {MAX_DURATION_MS}",
        "message": f"must be at most {MAX_DURATION} (10 years)",
        "messageExpression": f"'must be at most {MAX_DURATION} (10 years), not ' + self",
    }


def at_least_rule(minimum_ms: int, minimum: str) -> Schema:
    """The CEL rule that refuses a duration shorter than `minimum` (`minimum_ms`). A part too large to
    multiply safely passes here (duration_rule refuses it), so this rule never overflows; its cost is bounded by
    the field's maxLength, as duration_rule's."""
    units = "{" + ", ".join(f"'{unit}': {ms}" for unit, ms in UNITS_MS.items()) + "}"
    parts = "self.findAll('[0-9]+(ms|s|m|h|d|w)')"
    number = "int(p.find('^[0-9]+'))"
    unit = f"{units}[p.find('[a-z]+$')]"
    return {
        "rule": f"{parts}.exists(p, size(p) > 20 || {number} > {MAX_DURATION_MS} / {unit})"
                f" || {parts}.map(p, {number} * {unit}).sum() >= {minimum_ms}",
        "message": f"must be at least {minimum}",
        "messageExpression": f"'must be at least {minimum}, not ' + self",
    }


def duration(description: str, default: str | None = None) -> Schema:
    """A duration field (7d, 36h, 1d12h, 90m, 30s, 500ms), the one grammar of durations.py, at most
    durations.MAX_DURATION long (a CEL rule: the API server's to evaluate)."""
    out: Schema = {
        "type": "string",
        "title": DURATION_TITLE,
        "pattern": DURATION_PATTERN,
        "maxLength": MAX_DURATION_LENGTH,
        "x-kubernetes-validations": [duration_rule()],
        "description": description + f" A duration such as 7d, 36h, 1d12h, 90m or 30s; at most {MAX_DURATION} (10 years).",
    }
    if default is not None:
        out["default"] = default
    return out


GroupPattern = Annotated[str, Check(title="group pattern", minLength=1, maxLength=MAX_PATTERN_LENGTH)]
_PATTERNS = Check(title="list of group patterns", maxItems=MAX_PATTERNS)


def _globs(description: str) -> Doc:
    """Shell-style patterns (*, ?, [abc]) matched against whole group ids. Every non-empty string is one."""
    return Doc(description + f" At most {MAX_PATTERNS} patterns of at most {MAX_PATTERN_LENGTH} characters.")


# -- the analysis part of a policy's spec (groups, rules, protect), typed once: the CRD (the operator's
# model/kinds/consumer_group_offset_policy.py) and policy files (POLICY_FILE) carry these schemas, and
# policy.checked_policy parses with these classes.


@dataclass(frozen=True, kw_only=True)
class GroupsSpec:
    """Which consumer groups the policy covers, as glob patterns (*, ?, [abc]) matched against the whole group
    id. A group is covered when an include pattern matches and no exclude pattern does."""

    include: Annotated[tuple[GroupPattern, ...], _PATTERNS, Default(["*"]),
                       _globs("Covered groups; every group by default.")] = ("*",)
    exclude: Annotated[tuple[GroupPattern, ...], _PATTERNS,
                       _globs("Groups never covered, even when an include matches.")] = ()


@dataclass(frozen=True, kw_only=True)
class StaleGroupsSpec:
    """Stale-group cleanup: delete whole groups (DeleteGroups, with a backup first) that have been Empty for at
    least emptyFor. Unset: no group is deleted whole. Restoring such a deletion re-commits the group's offsets,
    which makes it a simple group until its consumers join again."""

    empty_for: Annotated[str, Raw(duration(
        "How long a group must have been Empty: counted from when it became Empty (a classic group's "
        "currentStateTimestamp), else from its newest commit (KIP-848 and simple groups)."))]


@dataclass(frozen=True, kw_only=True)
class RulesSpec:
    """The policy's own retentions, applied with the broker's shapes (KIP-211, KIP-496). A rule left unset
    makes no candidates; the broker's own expiry is still reported."""

    empty_group_retention: Annotated[str | None, Raw(duration(
        "Offsets of a group without members become candidates this long after the group became Empty: a "
        "classic group's currentStateTimestamp, a KIP-848 group's last member removal (the timestamp of its "
        "records); the commit time when neither is known."))] = None
    unsubscribed_topic_retention: Annotated[str | None, Raw(duration(
        "Offsets of topics an active consumer group no longer subscribes to become candidates this long after "
        "their last commit (KIP-496)."))] = None
    standalone_retention: Annotated[str | None, Raw(duration(
        "Offsets of standalone (simple) groups, which commit without joining, become candidates this long after "
        "their last commit."))] = None
    deleted_topics: Annotated[str, Check(enum=["Delete", "Keep"]), Default("Keep"), Doc(
        "Offsets left behind for topics that no longer exist: Delete makes them candidates at once; Keep leaves "
        "them to the other rules. Kafka refuses OffsetDelete for a topic it no longer knows "
        "(UNKNOWN_TOPIC_OR_PARTITION), so the operator proposes deleting the whole group (DeleteGroups, backup "
        "first) where they are all an Empty group has left, and only reports them, with the reason, where the "
        "group has other offsets or members.")] = "Keep"
    stale_groups: StaleGroupsSpec | None = None


@dataclass(frozen=True, kw_only=True)
class ProtectSpec:
    """Groups that are never deleted, whatever the rules say."""

    groups: Annotated[tuple[GroupPattern, ...], _PATTERNS, _globs("Glob patterns of protected groups.")] = ()
    keep_alive: Annotated[bool, Default(False), Doc(
        "Also keep the broker from expiring protected groups' offsets, by re-committing them (and rebasing an "
        "Empty consumer group as a simple group) before they expire. Acts in Approve and Auto mode only: in "
        "DryRun it writes nothing to Kafka and reports what it would do. How this works per group kind, and "
        "what it costs, is in docs/keep-alive.md.")] = False


# The analysis part's fields, for a spec class that carries them (each kind's own file gives their order).
GroupsField = Annotated[GroupsSpec, Default({"include": ["*"]})]


@dataclass(frozen=True, kw_only=True)
class PolicyFileSpec:
    """A policy file: the analysis part, with the operator's sections (kafka, mode, ...) left to the operator
    ({} accepts any value)."""

    kafka: Annotated[Any, Raw({})] = None
    groups: GroupsField = field(default_factory=GroupsSpec)
    rules: RulesSpec = field(default_factory=RulesSpec)
    protect: ProtectSpec = field(default_factory=ProtectSpec)
    mode: Annotated[Any, Raw({})] = None
    schedule: Annotated[Any, Raw({})] = None
    analysis: Annotated[Any, Raw({})] = None
    history: Annotated[Any, Raw({})] = None


ANALYSIS_FIELDS = ("groups", "rules", "protect")


# A policy file: the operator's sections are the operator's to check. The durations' CEL cap is
# parse_duration_ms's here (policy.py).
POLICY_FILE = SchemaCheck(without_cel_rules(
    {"type": "object", "properties": schema_of(PolicyFileSpec)["properties"]}
))
