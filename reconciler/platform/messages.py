"""Error messages a user can act on, built from the request (never from the error body's shape).

The spec leaves the error body "not shown", so the object and the reason come
from what we sent and from the spec's known conditions; the body only adds its
`detail` (or `message`/`title`) text when it happens to be JSON carrying one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reconciler.platform import errors
from reconciler.platform.operations import get_operation, permission, wildcard_permission

API_KEY_ENV = "RECONCILER_API_KEY"
MAX_DETAIL = 500
MAX_SNIPPET = 200


def describe_object(operation: str, body: Mapping[str, Any], *, created: bool = False) -> str:
    """The object a request is about, in words: `app "web" in project "shop"`.

    With `created`, the object a create makes (named by its slug or host name);
    otherwise the existing object the request names (for a create: its parent).
    """
    op = get_operation(operation)
    if op.creates and created:
        if op.name == "projects.createProject":
            return _named("project", body.get("slug"))
        if op.name == "apps.createApp":
            return _chain(("app", body.get("slug")), ("project", body.get("project")))
        if op.name == "domains.createDomain":
            return _named("domain", body.get("domain"))
    if "deploymentId" in body:
        return _named("deployment", body["deploymentId"])
    if "domain" in body and not op.creates:
        return _named("domain", body["domain"])
    described = _chain(
        ("environment", body.get("environment")),
        ("app", body.get("app")),
        ("project", body.get("project")),
    )
    return described or "the workspace"


def _chain(*parts: tuple[str, Any]) -> str:
    """`environment "x" of app "y" in project "z"`, leaving out the parts not in the request."""
    named = [(kind, _named(kind, value)) for kind, value in parts if value is not None]
    text = ""
    for kind, words in named:
        if not text:
            text = words
        else:
            text += (" of " if kind == "app" else " in ") + words
    return text


def _named(kind: str, value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    return f'{kind} "{_truncate(shown, 80)}"'


def error_detail(content: bytes) -> str | None:
    """The human text of an error body when it is JSON with `detail`/`message`/`title`."""
    if not content:
        return None
    try:
        parsed = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(parsed, dict):
        return None
    for key in ("detail", "message", "title"):
        value = parsed.get(key)
        if isinstance(value, str) and value.strip():
            return _truncate(" ".join(value.split()), MAX_DETAIL)
    return None


def body_snippet(content: bytes) -> str:
    """A short, single-line preview of an unexpected non-2xx body."""
    text = content.decode("utf-8", errors="replace")
    return _truncate(" ".join(text.split()), MAX_SNIPPET)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _with_detail(message: str, detail: str | None) -> str:
    return message if detail is None else f"{message}: {detail}"


_CONFLICT_RULES = {
    "projects.createProject": "project slugs are unique in the workspace",
    "projects.updateProject": "project slugs are unique in the workspace",
    "apps.createApp": "app slugs are unique in their project",
    "apps.updateApp": "app slugs are unique in their project",
    "domains.createDomain": "a domain can be attached to only one environment of the workspace",
}


def _precondition_reason(operation: str) -> tuple[str, str | None]:
    """(why, hint) for a 412, from the spec's known conditions."""
    if operation == "apps.deleteApp":
        return "delete protection is on", (
            "set deleteProtection: false on the app (apps.updateApp), then delete it"
        )
    if operation == "projects.deleteProject":
        return "delete protection is on", (
            "set deleteProtection: false on the project (projects.updateProject), then delete it"
        )
    if operation == "deployments.stopDeployment":
        return "the deployment cannot be stopped now", (
            "only running preview deployments can be stopped; see its availableActions"
        )
    if operation.startswith("deployments.") and operation != "deployments.createDeployment":
        return "the deployment does not allow this action now", "see its availableActions"
    if operation == "deployments.createDeployment":
        return "a deployment precondition does not hold", (
            "check the app's source (git repository or image) and the deployment source sent"
        )
    return "a precondition does not hold", None


# IDs carry these prefixes, so a request that names its object by ID gives the exact permission.
_ID_PREFIXES = {"project": ("project", "proj_"), "app": ("app", "app_")}


def _scope_id_in(operation: str, body: Mapping[str, Any]) -> str | None:
    """The scope object's ID when the request names it by ID rather than by slug."""
    field, prefix = _ID_PREFIXES.get(get_operation(operation).scope, ("", ""))
    value = body.get(field) if field else None
    return value if isinstance(value, str) and value.startswith(prefix) else None


def status_error(
    operation: str,
    status: int,
    body: Mapping[str, Any],
    detail: str | None,
    *,
    object_id: str | None,
    key_sent: bool,
    attempts: int,
) -> errors.ApiError:
    """The error for a non-2xx final answer to `operation`."""
    target = describe_object(operation, body)
    common = {"operation": operation, "status": status, "detail": detail}
    if status == 400:
        subject = describe_object(operation, body, created=True)
        message = _with_detail(f"{operation}: invalid request for {subject} (400)", detail)
        return errors.InvalidRequest(message, **common)
    if status == 401:
        why = (
            f"({API_KEY_ENV}) is invalid" if key_sent else f"is missing ({API_KEY_ENV} is not set)"
        )
        message = _with_detail(f"{operation}: the API key {why} (401)", detail)
        hint = f"set {API_KEY_ENV} to a valid API key for the platform"
        return errors.AuthenticationError(message, hint=hint, **common)
    if status == 403:
        needed = permission(operation, object_id or _scope_id_in(operation, body))
        message = f'{operation}: permission denied for {target} (403): the API key lacks "{needed}"'
        grants = dict.fromkeys((needed, wildcard_permission(operation)))
        hint = "grant the key " + " or ".join(f'"{p}"' for p in grants)
        return errors.PermissionDenied(_with_detail(message, detail), hint=hint, **common)
    if status == 404:
        message = _with_detail(f"{operation}: {target} not found (404)", detail)
        return errors.NotFound(message, **common)
    if status == 409:
        subject = describe_object(operation, body, created=True)
        if operation in ("projects.updateProject", "apps.updateApp") and "slug" in body:
            subject += f" (new {_named('slug', body['slug'])})"
        message = _with_detail(
            f"{operation}: {subject} conflicts with an existing one (409)", detail
        )
        rule = _CONFLICT_RULES.get(operation)
        return errors.Conflict(message, hint=rule, **common)
    if status == 412:
        why, hint = _precondition_reason(operation)
        message = _with_detail(f"{operation}: {target}: {why} (412)", detail)
        return errors.PreconditionFailed(message, hint=hint, **common)
    if status == 429:
        message = _with_detail(
            f"{operation}: the platform is still rate limiting after {attempts} attempts (429)",
            detail,
        )
        hint = "lower --parallelism or try again later"
        return errors.RateLimited(message, hint=hint, **common)
    if 500 <= status <= 599:
        return server_error(operation, status, detail, attempts=attempts)
    message = f"{operation}: unexpected HTTP status {status}"
    return errors.UnexpectedResponse(_with_detail(message, detail), **common)


def server_error(
    operation: str, status: int, detail: str | None, *, attempts: int
) -> errors.ServerError:
    op = get_operation(operation)
    if op.creates:
        message = _with_detail(f"{operation}: server error ({status})", detail)
        return errors.ServerError(
            message,
            operation=operation,
            status=status,
            detail=detail,
            ambiguous=True,
            hint="the object may or may not have been created; it was not retried blindly "
            "(re-read live state before trying again)",
        )
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    message = _with_detail(f"{operation}: server error ({status}) after {tries}", detail)
    return errors.ServerError(message, operation=operation, status=status, detail=detail)
