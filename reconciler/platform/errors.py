"""Errors of the platform API, one class per kind of failure a user must react to differently.

Every message names the operation and the object from the request, never the API key
and never a request body. `ambiguous` is true when a write may or may not have taken
effect (a create that met a 5xx or a timeout after the request was sent): the caller
must re-read live state before trying again.
"""

from __future__ import annotations

from reconciler.errors import ReconcilerError


class ApiError(ReconcilerError):
    """A call to the platform failed; `status` is None when no HTTP response arrived."""

    def __init__(
        self,
        message: str,
        *,
        operation: str,
        status: int | None = None,
        detail: str | None = None,
        hint: str | None = None,
        ambiguous: bool = False,
    ) -> None:
        super().__init__(message, hint=hint)
        self.operation = operation
        self.status = status
        self.detail = detail
        self.ambiguous = ambiguous

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(operation={self.operation!r}, status={self.status!r}, "
            f"message={self.message!r})"
        )


class AuthenticationError(ApiError):
    """401: the API key is missing or invalid."""


class PermissionDenied(ApiError):
    """403: the key lacks the permission string the operation needs."""


class NotFound(ApiError):
    """404: an object named in the request does not exist."""


class Conflict(ApiError):
    """409: a uniqueness rule would be broken."""


class PreconditionFailed(ApiError):
    """412: delete protection or a deployment precondition."""


class InvalidRequest(ApiError):
    """400: the platform rejected the request."""


class RateLimited(ApiError):
    """429 still answered after every retry."""


class ServerError(ApiError):
    """5xx still answered after every retry (or once, for a create)."""


class TransportError(ApiError):
    """No response: timeout or connection failure, after retries when they were safe."""


class UnexpectedResponse(ApiError):
    """A response the spec does not allow: not JSON, no `data`, wrong shapes or pagination."""
