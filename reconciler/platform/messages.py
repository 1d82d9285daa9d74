"""Error messages a user can act on, built from the request (never from the error body's shape).

The spec leaves the error body "not shown", so the object and the reason come
from what we sent and from the spec's known conditions; the body only adds its
`detail` (or `message`/`title`) text when it happens to be JSON carrying one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler import errors
from reconciler.platform.operations import Operation, permission, wildcard_permission

API_KEY_ENV = "RECONCILER_API_KEY"
BASE_URL_ENV = "RECONCILER_BASE_URL"
MAX_DETAIL = 500
MAX_SNIPPET = 200


SlugOf = Callable[[str], str | None]
"""The slug of a project, app or environment known by its ID; None when it is not known."""


def _no_slugs(object_id: str) -> str | None:
    return None


# Creates answer with the new ID only (`id`, `appId`); the slug is the one the request gave.
_CREATED_ID_FIELD = {"projects.createProject": "id", "apps.createApp": "appId"}


class ObjectNames:
    """The slugs of the projects, apps and environments a client has read or created, by ID.

    Plans and applies send IDs once live state gave them (an ID survives a rename in the same
    apply), so a message built from the request alone would say `app "app_35ft..."`. The
    answers that came before it tell the slug the user wrote in the manifest.
    """

    def __init__(self) -> None:
        self._slugs: dict[str, str] = {}

    def slug_of(self, object_id: str) -> str | None:
        return self._slugs.get(object_id)

    def learn(self, operation: str, body: Mapping[str, Any], data: Any) -> None:
        """Remember the slugs an answer to `operation` (sent with `body`) tells."""
        created_id = _CREATED_ID_FIELD.get(operation)
        if created_id is not None and isinstance(data, Mapping):
            self._remember(data.get(created_id), body.get("slug"))
            return
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, Mapping):
                self._remember(item.get("id"), item.get("slug"))

    def _remember(self, object_id: Any, slug: Any) -> None:
        if isinstance(object_id, str) and isinstance(slug, str) and object_id and slug:
            self._slugs[object_id] = slug


def describe_object(
    op: Operation,
    body: Mapping[str, Any],
    *,
    created: bool = False,
    slug_of: SlugOf = _no_slugs,
) -> str:
    """The object a request is about, in words: `app "web" in project "shop"`.

    With `created`, the object a create makes (named by its slug or host name);
    otherwise the existing object the request names (for a create: its parent).
    IDs `slug_of` knows are shown as their slugs, the names the manifest uses.
    """
    project, app = _slug_or_id(body.get("project"), slug_of), _slug_or_id(body.get("app"), slug_of)
    if op.creates and created:
        if op.name == "projects.createProject":
            return _named("project", body.get("slug"))
        if op.name == "apps.createApp":
            return _chain(("app", body.get("slug")), ("project", project))
        if op.name == "domains.createDomain":
            return _named("domain", body.get("domain"))
    if "deploymentId" in body:
        return _named("deployment", body["deploymentId"])
    if "domain" in body and not op.creates:
        return _named("domain", body["domain"])
    described = _chain(
        ("environment", _slug_or_id(body.get("environment"), slug_of)),
        ("app", app),
        ("project", project),
    )
    return described or "the workspace"


def _slug_or_id(value: Any, slug_of: SlugOf) -> Any:
    """A request field naming an object: its slug when it is an ID `slug_of` knows."""
    return (slug_of(value) or value) if isinstance(value, str) else value


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
    except (ValueError, UnicodeDecodeError, RecursionError):
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


def check_base_url(base_url: str) -> str:
    """The hint of every answer that shows the base URL may not be the platform API."""
    return (
        f"check the base URL {base_url} (--base-url or {BASE_URL_ENV}): it must be the "
        "address of the platform API, without /v1"
    )


def attempts_text(attempts: int) -> str:
    return "1 attempt" if attempts == 1 else f"{attempts} attempts"


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


_DEPLOYMENT_ACTION = ("the deployment does not allow this action now", "see its availableActions")
_PRECONDITIONS: dict[str, tuple[str, str | None]] = {
    "apps.deleteApp": (
        "delete protection is on",
        "set deleteProtection: false on the app (apps.updateApp), then delete it",
    ),
    "projects.deleteProject": (
        "delete protection is on",
        "set deleteProtection: false on the project (projects.updateProject), then delete it",
    ),
    "deployments.createDeployment": (
        "a deployment precondition does not hold",
        "check the app's source (git repository or image) and the deployment source sent",
    ),
    "deployments.stopDeployment": (
        "the deployment cannot be stopped now",
        "only running preview deployments can be stopped; see its availableActions",
    ),
    "deployments.startDeployment": _DEPLOYMENT_ACTION,
    "deployments.promoteDeployment": _DEPLOYMENT_ACTION,
    "deployments.rollbackDeployment": _DEPLOYMENT_ACTION,
}
"""(why, hint) of a 412 per operation, from the spec's known conditions."""


# IDs carry these prefixes, so a request that names its object by ID gives the exact permission.
_ID_PREFIXES = {"project": ("project", "proj_"), "app": ("app", "app_")}


def _scope_id_in(operation: Operation, body: Mapping[str, Any]) -> str | None:
    """The scope object's ID when the request names it by ID rather than by slug."""
    field, prefix = _ID_PREFIXES.get(operation.scope, ("", ""))
    value = body.get(field) if field else None
    return value if isinstance(value, str) and value.startswith(prefix) else None


@dataclass(frozen=True)
class Failure:
    """A non-2xx final answer and the request it answered."""

    operation: Operation
    status: int
    body: Mapping[str, Any]
    detail: str | None
    object_id: str | None
    attempts: int
    slug_of: SlugOf = _no_slugs

    @property
    def fields(self) -> dict[str, Any]:
        return {"operation": self.operation.name, "status": self.status, "detail": self.detail}

    def say(self, text: str) -> str:
        """`<operation>: <text>`, then the platform's own detail when it gave one."""
        return _with_detail(f"{self.operation.name}: {text}", self.detail)

    def target(self, *, created: bool = False) -> str:
        return describe_object(self.operation, self.body, created=created, slug_of=self.slug_of)


def status_error(
    operation: Operation,
    status: int,
    body: Mapping[str, Any],
    detail: str | None,
    *,
    object_id: str | None,
    attempts: int,
    slug_of: SlugOf = _no_slugs,
) -> errors.ApiError:
    """The error for a non-2xx final answer to `operation`; `slug_of` names objects sent by ID."""
    failure = Failure(operation, status, body, detail, object_id, attempts, slug_of)
    if 500 <= status <= 599:
        return server_error(operation, status, detail, attempts=attempts)
    build = _BY_STATUS.get(status)
    if build is None:
        return errors.UnexpectedResponse(
            failure.say(f"unexpected HTTP status {status}"), **failure.fields
        )
    return build(failure)


def _invalid(f: Failure) -> errors.ApiError:
    return errors.InvalidRequest(
        f.say(f"invalid request for {f.target(created=True)} (400)"), **f.fields
    )


def _unauthenticated(f: Failure) -> errors.ApiError:
    # The client sends no request without a key, so a 401 is about the key it sent.
    text = f"the API key ({API_KEY_ENV}) is invalid (401)"
    hint = f"set {API_KEY_ENV} to a valid API key for the platform"
    return errors.AuthenticationError(f.say(text), hint=hint, **f.fields)


def _forbidden(f: Failure) -> errors.ApiError:
    needed = permission(f.operation, f.object_id or _scope_id_in(f.operation, f.body))
    grants = dict.fromkeys((needed, wildcard_permission(f.operation)))
    hint = "grant the key " + " or ".join(f'"{p}"' for p in grants)
    text = f'permission denied for {f.target()} (403): the API key lacks "{needed}"'
    if f.detail is not None and any(grant in f.detail for grant in grants):
        # The platform only restated the permission (perhaps as the wildcard while an
        # ID-specific one is named above): saying it twice, differently, confuses.
        return errors.PermissionDenied(
            f"{f.operation.name}: {text}", hint=hint, **{**f.fields, "detail": f.detail}
        )
    return errors.PermissionDenied(f.say(text), hint=hint, **f.fields)


def _not_found(f: Failure) -> errors.ApiError:
    return errors.NotFound(f.say(f"{f.target()} not found (404)"), **f.fields)


def _conflict(f: Failure) -> errors.ApiError:
    subject = f.target(created=True)
    if f.operation.name in ("projects.updateProject", "apps.updateApp") and "slug" in f.body:
        subject += f" (new {_named('slug', f.body['slug'])})"
    text = f"{subject} conflicts with an existing one (409)"
    return errors.Conflict(f.say(text), hint=_CONFLICT_RULES.get(f.operation.name), **f.fields)


def _precondition(f: Failure) -> errors.ApiError:
    why, hint = _PRECONDITIONS.get(f.operation.name, ("a precondition does not hold", None))
    return errors.PreconditionFailed(f.say(f"{f.target()}: {why} (412)"), hint=hint, **f.fields)


def _rate_limited(f: Failure) -> errors.ApiError:
    text = f"the platform is still rate limiting after {attempts_text(f.attempts)} (429)"
    hint = "lower --parallelism or try again later"
    return errors.RateLimited(f.say(text), hint=hint, **f.fields)


_BY_STATUS: dict[int, Callable[[Failure], errors.ApiError]] = {
    400: _invalid,
    401: _unauthenticated,
    403: _forbidden,
    404: _not_found,
    409: _conflict,
    412: _precondition,
    429: _rate_limited,
}


def server_error(
    op: Operation, status: int, detail: str | None, *, attempts: int
) -> errors.ServerError:
    if op.creates:
        message = _with_detail(f"{op.name}: server error ({status})", detail)
        return errors.ServerError(
            message,
            operation=op.name,
            status=status,
            detail=detail,
            ambiguous=True,
            hint="the object may or may not have been created; it was not retried blindly "
            "(re-read live state before trying again)",
        )
    text = f"{op.name}: server error ({status}) after {attempts_text(attempts)}"
    message = _with_detail(text, detail)
    return errors.ServerError(message, operation=op.name, status=status, detail=detail)
