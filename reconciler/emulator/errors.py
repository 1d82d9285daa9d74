"""Errors answered as RFC 9457 problem details."""

from __future__ import annotations

from typing import Any

PROBLEM_CONTENT_TYPE = "application/problem+json"

TITLES = {
    400: "Invalid request",
    401: "Authentication required",
    403: "Permission denied",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    412: "Precondition failed",
    413: "Request body too large",
    415: "Unsupported media type",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}

SLUGS = {
    400: "invalid-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    412: "precondition-failed",
    413: "payload-too-large",
    415: "unsupported-media-type",
    429: "rate-limited",
    500: "internal",
    503: "unavailable",
}


class ApiError(Exception):
    """An error response: status, a human detail and the offending fields."""

    def __init__(
        self,
        status: int,
        detail: str,
        errors: list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}

    def problem(self) -> dict[str, Any]:
        return problem_body(self.status, self.detail, self.errors)


def problem_body(
    status: int, detail: str, errors: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "type": f"https://emulator.invalid/problems/{SLUGS.get(status, 'error')}",
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": encodable(detail),
        "errors": [
            {"field": encodable(field), "message": encodable(message)}
            for field, message in errors or []
        ],
    }


def encodable(text: str) -> str:
    """`text` with any lone surrogate written out as `\\udc00`: a problem can quote stored
    names, and its body must always encode as UTF-8 (the answer to an error must not fail)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def invalid(field: str, message: str) -> ApiError:
    return ApiError(400, f"{field}: {message}", [(field, message)])


def not_found(what: str, ref: str) -> ApiError:
    return ApiError(404, f"{what} {ref!r} not found")


def conflict(field: str, message: str) -> ApiError:
    return ApiError(409, message, [(field, message)])


def precondition(message: str, field: str | None = None) -> ApiError:
    return ApiError(412, message, [(field, message)] if field else [])
