"""`Platform`: the one interface through which plan, apply, export and status talk to the
platform. `PlatformClient` implements it over HTTP; tests implement it with fakes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reconciler.json_types import JsonObject, JsonValue


class Platform(Protocol):
    """The platform API: one operation at a time, or every page of a listing.

    `object_id` names the object a call acts on when it is known, so that a 403 names the
    ID-specific permission. Errors are the `ApiError`s of `reconciler.errors`.
    """

    @property
    def base_url(self) -> str: ...

    @property
    def check_permissions(self) -> tuple[str, ...]:
        """The permissions the platform's own check of the base URL needed in this run (it is
        made before the first 404 is believed): a plan lists them for apply."""
        ...

    async def call(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> JsonValue: ...

    async def list_all(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> list[JsonObject]: ...
