"""DescribeConfigs for the broker and topics (ConfigHelper.handleDescribeConfigsRequest / describeConfigs).

Broker resource "" (the cluster-wide dynamic defaults) is empty, as on a broker nobody reconfigured;
resource "<node id>" lists the broker's configs. Topics list every topic config with its source.
Group, client-metrics and broker-logger resources are not simulated and answer INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import DescribeConfigsRequest, DescribeConfigsResponse

from . import configs
from .configs import ConfigEntry, ResourceType
from .context import BrokerContext
from .registry import api_handler
from .topic_names import invalid_reason

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = Result.DescribeConfigsResourceResult
Synonym = Entry.DescribeConfigsSynonym


class _Refused(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _entries(ctx: BrokerContext, resource: Any) -> list[ConfigEntry]:
    kind, name = resource.resource_type, resource.resource_name
    if kind == ResourceType.TOPIC:
        reason = invalid_reason(name)
        if reason is not None:
            raise _Refused(Errors.InvalidTopicError.errno, reason)
        if not ctx.topics.exists(name):
            raise _Refused(Errors.UnknownTopicOrPartitionError.errno, None)  # Kafka sends no message here
        return configs.topic_entries(ctx.topics.configs(name))
    if kind == ResourceType.BROKER:
        if not name:
            return []
        try:
            broker_id = int(name)
        except ValueError:
            raise _Refused(
                Errors.InvalidRequestError.errno, f"Broker id must be an integer, but it is: {name}"
            ) from None
        if broker_id != ctx.node_id:
            raise _Refused(
                Errors.InvalidRequestError.errno,
                f"Unexpected broker id, expected {ctx.node_id} or empty string, but received {name}",
            )
        return configs.broker_entries(ctx.config, ctx.node_id, ctx.config.explicit)
    raise _Refused(Errors.InvalidRequestError.errno, f"Unsupported resource type: {kind}")


def _entry(e: ConfigEntry, include_synonyms: bool, api_version: int) -> Any:
    synonyms = [Synonym(name=e.name, value=e.value, source=e.source)] if include_synonyms else []
    return Entry(
        name=e.name,
        value=e.value,
        read_only=e.read_only,
        config_source=e.source,
        is_default=e.source == configs.ConfigSource.DEFAULT_CONFIG,
        is_sensitive=False,
        synonyms=synonyms,
        config_type=e.type,
        documentation=None,
    )


@api_handler(DescribeConfigsRequest, 1, 4)
async def handle_describe_configs(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    results = []
    for resource in request.resources:
        keys = resource.configuration_keys
        try:
            entries = _entries(ctx, resource)
            if keys:
                entries = [e for e in entries if e.name in keys]
            results.append(
                Result(
                    error_code=Errors.NoError.errno,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[_entry(e, bool(request.include_synonyms), api_version) for e in entries],
                )
            )
        except _Refused as exc:
            results.append(
                Result(
                    error_code=exc.code,
                    error_message=exc.message,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
