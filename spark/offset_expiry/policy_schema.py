"""The schema of a ConsumerGroupOffsetPolicy's analysis part (groups, rules, protect), as its CRD carries it.

One source: the operator's model/crds.py builds the policy CRD's `spec` with `spec_properties`, giving its
own sections (kafka, mode, schedule, analysis); the analysis reads policy files (`analyze --policy`) against
`POLICY_FILE`, the same properties with those sections left to the operator. policy.py keeps only what a
schema cannot say (how long a duration may be).
"""

from __future__ import annotations

from typing import Any

from .durations import DURATION_PATTERN, DURATION_TITLE
from .openapi import Schema, SchemaCheck


def duration(description: str, default: str | None = None) -> Schema:
    """A duration field (7d, 36h, 1d12h, 90m, 30s, 500ms), the one grammar of durations.py."""
    out: Schema = {
        "type": "string",
        "title": DURATION_TITLE,
        "pattern": DURATION_PATTERN,
        "description": description + " A duration such as 7d, 36h, 1d12h, 90m or 30s.",
    }
    if default is not None:
        out["default"] = default
    return out


def _globs(description: str, **extra: Any) -> Schema:
    """Shell-style patterns (*, ?, [abc]) matched against whole group ids. Every non-empty string is one."""
    return {
        "type": "array",
        "title": "list of group patterns",
        "items": {"type": "string", "title": "group pattern", "minLength": 1},
        **extra,
        "description": description,
    }


def analysis_properties() -> Schema:
    """`spec.groups`, `spec.rules` and `spec.protect`: what the analysis applies."""
    return {
        "groups": {
            "type": "object",
            "description": (
                "Which consumer groups the policy covers, as glob patterns (*, ?, [abc]) matched against "
                "the whole group id. A group is covered when an include pattern matches and no exclude "
                "pattern does."
            ),
            "default": {"include": ["*"]},
            "properties": {
                "include": _globs("Covered groups; every group by default.", default=["*"]),
                "exclude": _globs("Groups never covered, even when an include matches."),
            },
        },
        "rules": {
            "type": "object",
            "description": (
                "The policy's own retentions, applied with the broker's shapes (KIP-211, KIP-496). A rule "
                "left unset makes no candidates; the broker's own expiry is still reported."
            ),
            "properties": {
                "emptyGroupRetention": duration(
                    "Offsets of a group without members become candidates this long after the group became "
                    "Empty (its currentStateTimestamp), the way the broker applies offsets.retention.minutes."
                ),
                "unsubscribedTopicRetention": duration(
                    "Offsets of topics an active consumer group no longer subscribes to become candidates "
                    "this long after their last commit (KIP-496)."
                ),
                "standaloneRetention": duration(
                    "Offsets of standalone (simple) groups, which commit without joining, become candidates "
                    "this long after their last commit."
                ),
                "deletedTopics": {
                    "type": "string",
                    "enum": ["Delete", "Keep"],
                    "default": "Keep",
                    "description": (
                        "Offsets left behind for topics that no longer exist: Delete makes them candidates "
                        "at once; Keep leaves them to the other rules."
                    ),
                },
            },
        },
        "protect": {
            "type": "object",
            "description": "Groups that are never deleted, whatever the rules say.",
            "properties": {
                "groups": _globs("Glob patterns of protected groups."),
                "keepAlive": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "Also keep the broker from expiring protected groups' offsets, by re-committing them (and "
                        "rebasing an Empty consumer group as a simple group) before they expire. Acts in Approve "
                        "and Auto mode only: in DryRun it writes nothing to Kafka and reports what it would do. "
                        "How this works per group kind, and what it costs, is in docs/keep-alive.md."
                    ),
                },
            },
        },
    }


def spec_properties(*, kafka: Schema, mode: Schema, schedule: Schema, analysis: Schema, history: Schema) -> Schema:
    """Every section of a policy's spec, in the CRD's order: the operator's around the analysis part."""
    return {"kafka": kafka, **analysis_properties(), "mode": mode, "schedule": schedule, "analysis": analysis,
            "history": history}


# A policy file: the operator's sections are the operator's to check ({} accepts any value).
POLICY_FILE = SchemaCheck(
    {"type": "object", "properties": spec_properties(kafka={}, mode={}, schedule={}, analysis={}, history={})}
)
