"""Creating exactly once: a create that failed ambiguously (5xx, timeout, lost connection:
the platform may have processed it) is re-read first, and only sent again when the object
does not exist. Also used by `apply --deploy` for its deployments."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from reconciler.errors import ApiError, Conflict
from reconciler.json_types import JsonValue
from reconciler.plan import kinds
from reconciler.plan.changes import Call, Change
from reconciler.plan.kinds.base import Reread
from reconciler.platform.protocol import Platform

Sleep = Callable[[float], Awaitable[None]]


async def create_once(
    platform: Platform,
    operation: str,
    body: Mapping[str, Any],
    reread: Reread | None,
    *,
    attempts: int,
    delay: float,
    sleep: Sleep = asyncio.sleep,
    replacing: bool = False,
) -> tuple[JsonValue, bool]:
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
            return await platform.call(operation, body), False
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


def reread_for(platform: Platform, owner: Change, call: Call) -> Reread | None:
    """How to find the object `call` (of the change `owner`) creates: its kind says."""
    return kinds.get(owner.kind).reread(platform, call)
