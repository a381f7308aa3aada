"""ConsumerGroupOffsetPolicy specs: defaults, every field, and one clear error per bad input."""

from __future__ import annotations

import pytest

from kafka_offsets_model.errors import SpecError
from kafka_offsets_model.policy import (
    DeletedTopics,
    GroupSelector,
    Policy,
    Protection,
    Rules,
    parse_policy,
    policy_from_yaml,
)

DAY = 86_400_000


def test_empty_spec_gives_documented_defaults() -> None:
    for spec in (None, {}):
        policy = parse_policy(spec)
        assert policy == Policy()
        assert policy.groups == GroupSelector(include=("*",), exclude=())
        assert policy.rules == Rules(None, None, None, DeletedTopics.KEEP)
        assert policy.protect == Protection(groups=(), keep_alive=False)


def test_full_spec() -> None:
    policy = parse_policy(
        {
            "kafka": {"bootstrapServers": "kafka:9092"},
            "mode": "DryRun",
            "schedule": {"interval": "1h"},
            "analysis": {"engine": "Local"},
            "groups": {"include": ["team-*", "svc-?"], "exclude": ["team-tmp-*"]},
            "rules": {
                "emptyGroupRetention": "3d",
                "unsubscribedTopicRetention": "12h",
                "standaloneRetention": "1w",
                "deletedTopics": "Delete",
            },
            "protect": {"groups": ["billing-monthly"], "keepAlive": True},
        }
    )
    assert policy.groups == GroupSelector(("team-*", "svc-?"), ("team-tmp-*",))
    assert policy.rules == Rules(3 * DAY, DAY // 2, 7 * DAY, DeletedTopics.DELETE)
    assert policy.protect == Protection(("billing-monthly",), True)
    assert policy.to_spec()["rules"] == {
        "deletedTopics": "Delete",
        "emptyGroupRetention": "3d",
        "unsubscribedTopicRetention": "12h",
        "standaloneRetention": "7d",
    }


def test_group_patterns_are_whole_name_case_sensitive_globs() -> None:
    groups = GroupSelector(include=("team-*", "svc-?"), exclude=("team-tmp-*",))
    assert groups.selects("team-a")
    assert groups.selects("svc-1")
    assert not groups.selects("svc-12")
    assert not groups.selects("team-tmp-x")
    assert not groups.selects("Team-a")
    assert not groups.selects("my-team-a")
    assert Protection(("billing-*",)).protects("billing-monthly")
    assert not Protection(()).protects("anything")


def test_include_given_as_empty_list_selects_nothing() -> None:
    assert not parse_policy({"groups": {"include": []}}).groups.selects("g")


@pytest.mark.parametrize(
    ("spec", "field", "fragment"),
    [
        (
            {"rules": {"emptyGroupRetention": "7 days"}},
            "spec.rules.emptyGroupRetention",
            "'7 days' is not a duration",
        ),
        ({"rules": {"standaloneRetention": 7}}, "spec.rules.standaloneRetention", "7 is not a duration"),
        ({"rules": {"unsubscribedTopicRetention": ""}}, "spec.rules.unsubscribedTopicRetention", "duration"),
        ({"rules": {"deletedTopics": "delete"}}, "spec.rules.deletedTopics", "'delete' is not one of"),
        ({"rules": {"emptyGroupRetentoin": "1d"}}, "spec.rules.emptyGroupRetentoin", "unknown field"),
        ({"rules": ["1d"]}, "spec.rules", "expected a mapping, got a list"),
        ({"groups": {"include": "team-*"}}, "spec.groups.include", "expected a list of group patterns"),
        ({"groups": {"exclude": ["ok", ""]}}, "spec.groups.exclude[1]", "non-empty group pattern"),
        ({"groups": {"exclude": [3]}}, "spec.groups.exclude[0]", "3 is not a group pattern"),
        ({"protect": {"keepAlive": "yes"}}, "spec.protect.keepAlive", "'yes' is not true or false"),
        ({"protect": {"groups": None, "keepalive": True}}, "spec.protect.keepalive", "unknown field"),
        ({"rule": {}}, "spec.rule", "unknown field"),
        ("rules: {}", "spec", "expected a mapping, got a string"),
        ({1: "x"}, "spec", "field names must be strings, got 1"),
        # Longer than 10 years (the CRDs' cap too): refused here, not an overflow later on.
        (
            {"rules": {"emptyGroupRetention": "99999999999999999999d"}},
            "spec.rules.emptyGroupRetention",
            "is longer than 3650d (10 years)",
        ),
        ({"rules": {"standaloneRetention": "2147483648m"}}, "spec.rules.standaloneRetention", "longest retention"),
        ({"rules": {"standaloneRetention": "3650d1ms"}}, "spec.rules.standaloneRetention", "longest retention"),
    ],
)
def test_bad_input_names_the_field(spec: object, field: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_policy(spec)
    assert info.value.field == field
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"{field}: ")


def test_yaml_resource_or_bare_spec() -> None:
    resource = """
apiVersion: kafkaoffsets.dev/v1alpha1
kind: ConsumerGroupOffsetPolicy
metadata: {name: p}
spec:
  rules: {emptyGroupRetention: 2d}
"""
    assert policy_from_yaml(resource).rules.empty_group_retention_ms == 2 * DAY
    assert policy_from_yaml("rules:\n  standaloneRetention: 1h\n").rules.standalone_retention_ms == 3_600_000
    assert policy_from_yaml("") == Policy()


def test_yaml_errors_are_one_line() -> None:
    with pytest.raises(SpecError) as info:
        policy_from_yaml("rules: [unclosed\n", "policy.yaml")
    assert info.value.field == "policy.yaml"
    assert "line" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SpecError) as info:
        policy_from_yaml("kind: OffsetDeletion\nspec: {}\n")
    assert info.value.field == "kind"
    with pytest.raises(SpecError) as info:
        policy_from_yaml("kind: ConsumerGroupOffsetPolicy\nspec:\n  rules:\n    deletedTopics: Maybe\n")
    assert info.value.field == "spec.rules.deletedTopics"
