"""Errors a user can act on (wrong address, missing topic, bad flag, a bad field): shown as one line or as a
status condition, never a traceback."""

from __future__ import annotations


class InputError(Exception):
    """The analysis cannot run with what it was given, or cannot reach what it needs."""


class SpecError(ValueError):
    """A spec that cannot be acted on. `field` is the path to fix (e.g. spec.rules.emptyGroupRetention),
    `reason` the status condition's reason (InvalidSpec, or e.g. SecretNotFound for what may appear later;
    a value of the operator's model.reasons.Reason, kept a string so this package needs no operator).

    The one spec-error type: the CRD-schema check (openapi.py), the policy parser here, and the operator's
    OffsetDeletion, policy and connection parsers all raise it."""

    def __init__(self, field: str, problem: str, reason: str = "InvalidSpec") -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
        self.reason = reason
