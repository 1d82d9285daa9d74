"""Talking to the platform: the API client, its errors, and the table of operations."""

from __future__ import annotations

from reconciler.platform.client import PlatformClient
from reconciler.platform.connect import connect
from reconciler.platform.errors import (
    ApiError,
    AuthenticationError,
    Conflict,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    TransportError,
    UnexpectedResponse,
)
from reconciler.platform.log import CallLog, redact
from reconciler.platform.operations import OPERATIONS, Operation, permission
from reconciler.platform.retry import RetryPolicy

__all__ = [
    "OPERATIONS",
    "ApiError",
    "AuthenticationError",
    "CallLog",
    "Conflict",
    "InvalidRequest",
    "NotFound",
    "Operation",
    "PermissionDenied",
    "PlatformClient",
    "PreconditionFailed",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TransportError",
    "UnexpectedResponse",
    "connect",
    "permission",
    "redact",
]
