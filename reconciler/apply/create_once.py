"""Creating exactly once: a create that failed ambiguously (5xx, timeout, lost connection:
the platform may have processed it) is re-read first, and only sent again when the object
does not exist. Also used by `apply --deploy` for its deployments."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from reconciler.errors import ApiError, Conflict, NotFound
from reconciler.plan.changes import Call

Sleep = Callable[[float], Awaitable[None]]

Reread = Callable[[], Awaitable[Any]]
"""Looks up what a create would have made: its response-like data, or None when absent."""


class PlatformCaller(Protocol):
    """What apply needs from `reconciler.platform.client.PlatformClient`."""

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any: ...


async def create_once(
    client: PlatformCaller,
    operation: str,
    body: Mapping[str, Any],
    reread: Reread | None,
    *,
    attempts: int,
    delay: float,
    sleep: Sleep = asyncio.sleep,
    replacing: bool = False,
) -> tuple[Any, bool]:
    """Send a create; after an ambiguous failure re-read before sending it again.

    Returns (data, found_by_reread). A 409 after an earlier ambiguous attempt
    means that attempt did create the object: it is re-read, not reported.
    With `replacing` (the create of a replace, right after its delete), a 409 may
    also mean the platform is still cleaning up the deleted object in the
    background: it is waited out, within the same bounded attempts.
    """
    tried_ambiguously = False
    for attempt in range(1, attempts + 1):
        try:
            return await client.call(operation, body), False
        except ApiError as error:
            conflict = isinstance(error, Conflict)
            if conflict and replacing and not tried_ambiguously and attempt < attempts:
                await sleep(delay * 2 ** (attempt - 1))
                continue
            if reread is None or not (error.ambiguous or (conflict and tried_ambiguously)):
                raise
            tried_ambiguously = True
            found = await reread()
            if found is not None:
                return found, True
            if attempt == attempts:
                raise
        await sleep(delay * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
    raise AssertionError("unreachable: the last attempt returns or raises")


def reread_for(client: PlatformCaller, call: Call) -> Reread | None:
    """How to find the object a create of the plan makes, by the slug or host it sends."""
    body = call.body
    if call.operation == "projects.createProject":
        return _lookup(client, "projects.getProject", {"project": body["slug"]}, ("id",))
    if call.operation == "apps.createApp":
        request = {"project": body["project"], "app": body["slug"]}
        return _lookup(client, "apps.getApp", request, ("appId",))
    if call.operation == "domains.createDomain":
        return _lookup(client, "domains.getDomain", {"domain": body["domain"]}, ("domainId",))
    return None


def _lookup(
    client: PlatformCaller, operation: str, request: Mapping[str, Any], id_names: tuple[str, ...]
) -> Reread:
    async def reread() -> Any:
        try:
            found = await client.call(operation, request)
        except NotFound:
            return None
        if not isinstance(found, Mapping):
            return None
        # answer in the create's response shape, so callers need not care how it was found
        data = dict(found)
        for name in id_names:
            data.setdefault(name, found.get("id"))
        return data

    return reread
