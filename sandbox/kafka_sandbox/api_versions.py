"""ApiVersions: advertise exactly the registered handlers (KafkaApis.handleApiVersionsRequest)."""

from __future__ import annotations

import re
from typing import Any

import kafka.errors as Errors
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from .context import BrokerContext
from .registry import api_handler, handler_for, registered

# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN (KIP-511)
_SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_keys(only_api_versions: bool = False) -> list[Any]:
    specs = registered()
    if only_api_versions:
        specs = [s for s in specs if s.api_key == ApiVersionsRequest.API_KEY]
    return [
        ApiVersionsResponse.ApiVersion(
            api_key=s.api_key, min_version=s.min_version, max_version=s.max_version
        )
        for s in specs
    ]


def unsupported_version_response() -> Any:
    """The v0 answer to an ApiVersions version this broker lacks (ApiVersionsRequest.getErrorResponse):
    UNSUPPORTED_VERSION plus the ApiVersions range, so the client can retry with a version we speak."""
    if handler_for(ApiVersionsRequest.API_KEY) is None:
        raise RuntimeError("ApiVersions has no handler")
    return ApiVersionsResponse(
        error_code=Errors.UnsupportedVersionError.errno,
        api_keys=_api_keys(only_api_versions=True),
        throttle_time_ms=0,
    )


def valid_client_software(request: Any, api_version: int) -> bool:
    """ApiVersionsRequest.isValid: v3+ client software name and version must match KIP-511's pattern."""
    if api_version < 3:
        return True
    return all(
        _SOFTWARE_NAME_VERSION.fullmatch(value or "")
        for value in (request.client_software_name, request.client_software_version)
    )


@api_handler(ApiVersionsRequest, 0, 4)
async def handle_api_versions(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    if not valid_client_software(request, api_version):
        return ApiVersionsResponse(
            error_code=Errors.InvalidRequestError.errno, api_keys=[], throttle_time_ms=0
        )
    return ApiVersionsResponse(
        error_code=Errors.NoError.errno,
        api_keys=_api_keys(),
        throttle_time_ms=0,
        supported_features=[],
        finalized_features_epoch=-1,
        finalized_features=[],
        zk_migration_ready=False,
    )
