"""What every operation handler receives, and the operation registry type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.emulator.auth import ApiKey
from reconciler.emulator.errors import ApiError
from reconciler.emulator.store import Obj, Store
from reconciler.emulator.validation import Int, Str
from reconciler.emulator.validation import Obj as ObjSpec

# regions a deployment can be scheduled in; others fail with no_schedulable_regions
REGIONS: tuple[str, ...] = (
    "iad", "sfo", "pdx", "cle", "gru", "lhr", "cdg", "fra", "arn", "dub",
    "hnd", "icn", "sin", "syd", "bom", "cpt", "hkg", "kix",
)  # fmt: skip

REF = Str(min=3, max=255)
LIST_FIELDS = {"limit": Int(min=1, max=100), "cursor": Str(min=1, max=1024)}
SEARCH = Str(min=0, max=256)
ENV_TARGET = {"project": REF, "app": REF, "environment": REF}


@dataclass
class Call:
    store: Store
    key: ApiKey
    now: int
    step_ms: int

    def require(
        self, scope: str, action: str, object_id: str | None = None, *, forbidden: bool = True
    ) -> None:
        """Check a permission; operations that do not list 403 answer 404 instead."""
        if self.key.allows(scope, action, object_id):
            return
        raise _denied(scope, action, object_id, forbidden)

    def precheck(self, scope: str, action: str, *, forbidden: bool = True) -> None:
        """Refuse before any lookup when no grant at all carries the action."""
        if not self.key.allows_some(scope, action):
            raise _denied(scope, action, None, forbidden)

    def env_target(self, body: dict[str, Any], action: str) -> tuple[Obj, Obj, Obj]:
        """Resolve project/app/environment (ID or slug) and check the environment grant."""
        self.precheck("environment", action)
        project = self.store.project(body["project"])
        app = self.store.app(project, body["app"])
        env = self.store.environment(app, body["environment"])
        self.require("environment", action, env["id"])
        return project, app, env

    def touch(self) -> None:
        self.store.dirty = True


def _denied(scope: str, action: str, object_id: str | None, forbidden: bool) -> ApiError:
    if not forbidden:
        return ApiError(404, "not found (or the key may not see it)")
    wildcard = f"{scope}.*.{action}"
    if object_id is None:
        return ApiError(403, f"the API key lacks the permission {wildcard}")
    # The request may have named the object by slug (or a domain by host): a key that may not
    # read it must not learn its ID from the refusal.
    return ApiError(
        403, f"the API key lacks the permission {wildcard}, or the one for this {scope} by its ID"
    )


Handler = Callable[[Call, dict[str, Any]], tuple[int, dict[str, Any]]]


@dataclass(frozen=True)
class Operation:
    handler: Handler
    spec: ObjSpec
    mutating: bool


def data(value: Any, status: int = 200) -> tuple[int, dict[str, Any]]:
    return status, {"data": value}


def listing(page: list[Any], pagination: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, {"data": page, "pagination": pagination}


def by_seq(obj: Obj) -> tuple[int, int]:
    return (obj["createdAt"], obj["_seq"])


def contains(needle: str | None, *haystack: str) -> bool:
    if not needle:
        return True
    lowered = needle.lower()
    return any(lowered in value.lower() for value in haystack)
