"""A platform whose calls someone watches: the live reads of a plan, counted as they go, so
that a terminal can show how far they are (reconciler/report/progress.py draws it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reconciler.json_types import JsonObject, JsonValue
from reconciler.platform.protocol import Platform


class CallObserver(Protocol):
    """Told when a call starts and when it ends (answered, failed or cancelled)."""

    def call_started(self) -> None: ...

    def call_finished(self) -> None: ...


class ObservedPlatform:
    """`platform`, telling `observer` of each call and listing (a listing of several pages is
    one call here). Anything else is the platform's own."""

    def __init__(self, platform: Platform, observer: CallObserver) -> None:
        self.platform = platform
        self.observer = observer

    @property
    def base_url(self) -> str:
        return self.platform.base_url

    @property
    def check_permissions(self) -> tuple[str, ...]:
        return self.platform.check_permissions

    async def call(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> JsonValue:
        self.observer.call_started()
        try:
            return await self.platform.call(operation, body, object_id=object_id)
        finally:
            self.observer.call_finished()

    async def list_all(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> list[JsonObject]:
        self.observer.call_started()
        try:
            return await self.platform.list_all(operation, body, object_id=object_id)
        finally:
            self.observer.call_finished()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.platform, name)


def observed(platform: Platform, observer: CallObserver | None) -> Platform:
    """`platform` watched by `observer`, or as it is without one."""
    return platform if observer is None else ObservedPlatform(platform, observer)
